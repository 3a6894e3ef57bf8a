// LoopbackHTTP: a minimal HTTP/1.1 client over a loopback socket, for driving a daemon's API in tests.

import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP exchange with `127.0.0.1:port`, on a thread of its own (``Shoal/onOwnThread(_:)``):
/// the request is written whole, the answer read to the end (`Connection: close`).
enum LoopbackHTTP {
    struct Reply: CustomStringConvertible {
        let status: Int
        /// Header names lowercased.
        let headers: [String: String]
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] }
        var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
        var description: String { "\(status) \(text.prefix(600))" }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// Sends `method path` with `headers` and `body`; `chunked` sends the body without a length.
    static func send(
        _ port: Int, _ method: String, _ path: String, key: String? = nil, headers: [(String, String)] = [],
        body: [UInt8]? = nil, chunked: Bool = false, timeout: Int = 90
    ) async throws -> Reply {
        try await Shoal.onOwnThread {
            try exchange(port, method, path, key: key, headers: headers, body: body, chunked: chunked, timeout: timeout)
        }
    }

    /// ``send`` with a JSON body.
    static func json(_ port: Int, _ method: String, _ path: String, key: String?, _ object: Any) async throws -> Reply {
        let data = try JSONSerialization.data(withJSONObject: object)
        return try await send(
            port, method, path, key: key, headers: [("Content-Type", "application/json")], body: Array(data))
    }

    private static func exchange(
        _ port: Int, _ method: String, _ path: String, key: String?, headers: [(String, String)],
        body: [UInt8]?, chunked: Bool, timeout: Int
    ) throws -> Reply {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        defer { close(fd) }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw Failure(description: "connect to 127.0.0.1:\(port): errno \(errno)") }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let key { head += "X-API-Key: \(key)\r\n" }
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if let body { head += chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        var out = Array(head.utf8)
        if let body {
            if chunked {
                var i = 0
                while i < body.count {
                    let n = min(65_536, body.count - i)
                    out += Array((String(n, radix: 16) + "\r\n").utf8) + body[i..<(i + n)] + Array("\r\n".utf8)
                    i += n
                }
                out += Array("0\r\n\r\n".utf8)
            } else {
                out += body
            }
        }
        // The server may answer (413) and close before it has read everything: a failed write
        // is not the test's failure; the answer read next is what counts.
        var sent = 0
        while sent < out.count {
            let n = out[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return try parse(received)
    }

    private static func parse(_ bytes: [UInt8]) throws -> Reply {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<($0 + 4)]) == separator }) else {
            throw Failure(description: "no HTTP answer (\(bytes.count) bytes)")
        }
        let lines = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw Failure(description: "bad status line \(lines.first ?? "")")
        }
        var headers = [String: String]()
        for l in lines.dropFirst() {
            guard let colon = l.firstIndex(of: ":") else { continue }
            headers[l[..<colon].lowercased()] = l[l.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunk(body) }
        return Reply(status: status, headers: headers, body: body)
    }

    private static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](), i = 0
        while i < bytes.count {
            guard let lineEnd = (i..<max(i, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 })
            else { break }
            let size =
                Int(String(decoding: bytes[i..<lineEnd], as: UTF8.self).split(separator: ";").first ?? "", radix: 16)
                ?? 0
            if size == 0 { break }
            let start = lineEnd + 2
            out += bytes[start..<min(start + size, bytes.count)]
            i = start + size + 2
        }
        return out
    }
}
