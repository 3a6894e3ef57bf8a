// ControlSocket: how `shoal` commands reach a running daemon — one command line in, its output streamed out.

import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import Shoal
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's end: a Unix socket in the data directory. A client sends its arguments as one
/// JSON array and a newline; the daemon runs that command against its node and streams each
/// output line back prefixed with `o ` (standard output), `e ` (standard error) or `p ` (a
/// progress line, which the next one replaces: ``ProgressPrinter``), then `x CODE` with the exit
/// code.
enum ControlServer {
    static func start(at path: String, node: ShoalNode) async throws -> NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never> {
        unlink(path)
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
    }

    static func serve(_ server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>, node: ShoalNode) async {
        try? await server.executeThenClose { inbound in
            try await withThrowingDiscardingTaskGroup { group in
                for try await client in inbound {
                    group.addTask { await handle(client, node: node) }
                }
            }
        }
    }

    static func handle(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>, node: ShoalNode) async {
        try? await client.executeThenClose { inbound, outbound in
            var request = [UInt8]()
            for try await var chunk in inbound {
                request += chunk.readBytes(length: chunk.readableBytes) ?? []
                if request.contains(UInt8(ascii: "\n")) || request.count > 1 << 20 { break }
            }
            let args = (try? JSONSerialization.jsonObject(with: Data(request)) as? [String]) ?? []
            let (lines, continuation) = AsyncStream<String>.makeStream()
            let console = Console(sink: { continuation.yield($0) })
            let run = Task {
                let code = await execute(args, node: node, console: console)
                continuation.yield("\u{0}x \(code)")
                continuation.finish()
            }
            for await line in lines {
                let text = line.hasPrefix("\u{0}x ") || line.hasPrefix("\u{0}e ") || line.hasPrefix("\u{0}p ") ? String(line.dropFirst()) : "o " + line
                try await outbound.write(ByteBuffer(string: text + "\n"))
            }
            _ = await run.value
        }
    }

    static func execute(_ args: [String], node: ShoalNode, console: Console) async -> Int32 {
        await Console.$current.withValue(console) {
            await NodeContext.$node.withValue(node) {
                do {
                    var command = try ShoalCLI.parseAsRoot(args)
                    if command is ServeCommand || command is InitCommand || command is DemoCommand {
                        console.error("error: a daemon is already serving this data directory")
                        return ExitStatus.dataDirectory.rawValue
                    }
                    if var async = command as? any AsyncParsableCommand {
                        try await async.run()
                    } else {
                        try command.run()
                    }
                    return 0
                } catch {
                    let code = ShoalCLI.status(for: error)
                    if code != 0 && !(error is ExitCode) { console.error(ShoalCLI.fullMessage(for: error)) }
                    return code
                }
            }
        }
    }
}

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
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard rc == 0 else { close(fd); return nil }
        return fd
    }

    /// Sends `args` to the daemon of `dir`, prints its output, and returns its exit code.
    static func forward(_ args: [String], to dir: DataDirectory) async throws -> Int32 {
        try await Task.detached {
            guard let fd = connectSocket(dir) else {
                throw CommandFailure(.dataDirectory, "a daemon holds \(dir.path) but its control socket \(dir.socketPath) does not answer; is it starting or stuck?")
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
                    FileHandle.standardOutput.write(Data(((line.hasPrefix("o ") ? String(line.dropFirst(2)) : line) + "\n").utf8))
                }
            }
            throw CommandFailure(.failure, "the daemon closed the control connection before the command finished")
        }.value
    }
}
