// RawClient: a plain TCP client for tests that send bytes no Shoal node would.

import Foundation
#if canImport(Glibc)
    import Glibc
#endif

enum RawClient {
    /// Connects to 127.0.0.1:`port`, sends `bytes`, and returns everything received until the
    /// server closes (bounded: 5 s, 1 MiB).
    static func exchange(port: Int, send bytes: [UInt8]) async throws -> [UInt8] {
        try await Task.detached {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw POSIXError(.EIO) }
            defer { close(fd) }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard rc == 0 else { throw POSIXError(.ECONNREFUSED) }
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            var out = [UInt8]()
            var buf = [UInt8](repeating: 0, count: 65536)
            while out.count < 1 << 20 {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                out += buf[0..<n]
            }
            return out
        }.value
    }
}
