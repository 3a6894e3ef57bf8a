// ControlClient: the client's end of the control socket: forwards a command line and prints what comes back.

import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import Shoal
#if canImport(Glibc)
    import Glibc
#endif

/// The client's end.
enum ControlClient {
    /// Whether a daemon answers on the control socket of `dir`.
    static func answers(_ dir: DataDirectory) -> Bool {
        guard let fd = connectSocket(dir) else { return false }
        close(fd)
        return true
    }

    /// A connected descriptor to the control socket of `dir`, or nil.
    static func connectSocket(_ dir: DataDirectory) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let path = Array(dir.socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: addr.sun_path) else { close(fd); return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.enumerated() { raw[i] = b }
            raw[path.count] = 0
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else { close(fd); return nil }
        return fd
    }

    /// Sends `args` to the daemon of `dir`, prints its output, and returns its exit code.
    static func forward(_ args: [String], to dir: DataDirectory) async throws -> Int32 {
        try await Task.detached {
            guard let fd = connectSocket(dir) else {
                throw CommandFailure(
                    .dataDirectory,
                    "a daemon holds \(dir.path) but its control socket \(dir.socketPath) does not answer; is it starting or stuck?"
                )
            }
            defer { close(fd) }
            var request = try JSONSerialization.data(withJSONObject: args)
            request.append(UInt8(ascii: "\n"))
            _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            var pending = [UInt8]()
            var buf = [UInt8](repeating: 0, count: 65536)
            var progress = ProgressPrinter(terminal: isatty(STDERR_FILENO) != 0)
            defer { progress.settle() }
            while true {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                pending += buf[0..<n]
                while let nl = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<nl], as: UTF8.self)
                    pending.removeSubrange(...nl)
                    if line.hasPrefix("p ") {
                        progress.show(String(line.dropFirst(2)))
                        continue
                    }
                    progress.settle()
                    if line.hasPrefix("x ") { return Int32(line.dropFirst(2)) ?? 1 }
                    if line.hasPrefix("e ") {
                        FileHandle.standardError.write(Data((String(line.dropFirst(2)) + "\n").utf8))
                        continue
                    }
                    FileHandle.standardOutput.write(
                        Data(((line.hasPrefix("o ") ? String(line.dropFirst(2)) : line) + "\n").utf8))
                }
            }
            throw CommandFailure(.failure, "the daemon closed the control connection before the command finished")
        }.value
    }
}
