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
///
/// Every connection is bounded (``Limits``; the README's paragraph on the control socket says
/// the same):
/// - the request line: at most ``maxRequestBytes`` (1 MiB), read in one pass over the bytes as
///   they arrive; a longer one is answered with an error line and `x 5`;
/// - the time to send it: ``readTimeout`` (10 s), then an error line and `x 1`;
/// - the clients served at once: ``maxClients`` (64); one more gets an error line and `x 5` at
///   once;
/// - the output on its way to the client: ``outputBudget`` (1 MiB) queued in the daemon. A
///   command that gets that far ahead waits for the client to read (nothing is dropped); if the
///   client reads nothing for ``stallTimeout`` (5 minutes: a person paging output through `less`
///   is not cut off), the command is cancelled and the connection closed.
///
/// A command ends when its client goes away: its task is cancelled (`watch` then removes its
/// subscription) and the daemon waits for it to finish.
enum ControlServer {
    /// The longest request line a client may send: 1 MiB.
    static let maxRequestBytes = 1 << 20
    /// How long a client may take to send its whole request line: 10 s.
    static let readTimeout = Duration.seconds(10)
    /// How many clients are served at once: 64.
    static let maxClients = 64
    /// How many bytes of a command's output may wait in the daemon for the client to read: 1 MiB.
    static let outputBudget = 1 << 20
    /// How long a command waits for a client that reads none of its output before it is stopped:
    /// 5 minutes. Its memory is bounded by ``outputBudget`` meanwhile; the wait only frees the
    /// client's place and thread sooner.
    static let stallTimeout = Duration.seconds(300)

    /// The bounds a control connection is held to; the defaults are the constants above (tests
    /// make them small).
    struct Limits: Sendable {
        /// The longest request line, in bytes (newline excluded).
        var maxRequestBytes = ControlServer.maxRequestBytes
        /// How long a client may take to send its request line.
        var readTimeout = ControlServer.readTimeout
        /// How many clients are served at once.
        var maxClients = ControlServer.maxClients
        /// Output bytes queued for one client before the command waits for it to read.
        var outputBudget = ControlServer.outputBudget
        /// How long a command waits, its output queue full, for a client that reads nothing.
        var stallTimeout = ControlServer.stallTimeout
    }

    /// Binds the control socket at `path`, mode 0600: only the user running the daemon may
    /// connect (its data directory is 0700 too, so nobody else reaches it meanwhile).
    static func start(at path: String, node: ShoalNode) async throws -> NIOAsyncChannel<
        NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never
    > {
        unlink(path)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        guard chmod(path, 0o600) == 0 else {
            let reason = String(cString: strerror(errno))
            try? await server.channel.close().get()
            throw CommandFailure(
                .dataDirectory, "cannot make the control socket \(path) private (mode 0600): \(reason)")
        }
        return server
    }

    /// Serves the clients of `server` until it closes: at most `limits.maxClients` at once.
    static func serve(
        _ server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>, node: ShoalNode,
        limits: Limits = Limits()
    ) async {
        let clients = ClientCount()
        try? await server.executeThenClose { inbound in
            try await withThrowingDiscardingTaskGroup { group in
                for try await client in inbound {
                    guard clients.enter(limit: limits.maxClients) else {
                        group.addTask {
                            try? await client.executeThenClose { _, _ in
                                try? await answer(
                                    client.channel,
                                    "error: the daemon already serves \(limits.maxClients) control clients, its limit; try again when one has finished",
                                    .conflict
                                ).get()
                            }
                        }
                        continue
                    }
                    group.addTask {
                        await handle(client, node: node, limits: limits)
                        clients.leave()
                    }
                }
            }
        }
    }

    /// Serves one client: reads its request line (bounded in size and time), runs the command,
    /// and streams its output back with backpressure.
    static func handle(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>, node: ShoalNode, limits: Limits = Limits())
        async
    {
        let channel = client.channel
        try? await client.executeThenClose { inbound, _ in
            var input = inbound.makeAsyncIterator()
            let deadline = RequestDeadline()
            let timer = channel.eventLoop.scheduleTask(in: TimeAmount(limits.readTimeout)) {
                guard deadline.expire() else { return }
                _ = answer(
                    channel,
                    "error: no complete request arrived within \(seconds(limits.readTimeout)) s; send the arguments as one JSON array and a newline",
                    .failure)
            }
            defer { timer.cancel() }

            // Each chunk is scanned once, for the newline that ends the request.
            var request = [UInt8]()
            var length: Int? = nil
            while length == nil, let chunk = try await input.next() {
                let start = request.count
                request.append(contentsOf: chunk.readableBytesView)
                if let newline = request[start...].firstIndex(of: UInt8(ascii: "\n")) { length = newline }
                let size = length ?? request.count
                if size > limits.maxRequestBytes {
                    guard deadline.finish() else { return }
                    try await answer(
                        channel,
                        "error: the request is \(length == nil ? "at least " : "")\(size) bytes, over the control socket's limit of \(bytes(limits.maxRequestBytes))",
                        .conflict
                    ).get()
                    return
                }
            }
            // Closed before a whole line, or answered by the timer.
            guard let length, deadline.finish() else { return }

            let args = (try? JSONSerialization.jsonObject(with: Data(request[..<length])) as? [String]) ?? []
            // The command runs on a thread of its own, where waiting for the client blocks
            // nobody else.
            let thread = CommandThread()
            let output = ControlOutput(
                channel: channel, thread: thread, budget: limits.outputBudget, stallTimeout: limits.stallTimeout)
            channel.closeFuture.whenComplete { _ in output.close() }
            let console = Console(sink: { line in
                if line.hasPrefix("\u{0}p ") {
                    output.send(String(line.dropFirst()), replaceable: true)
                } else {
                    output.send(
                        line.hasPrefix("\u{0}x ") || line.hasPrefix("\u{0}e ") ? String(line.dropFirst()) : "o " + line)
                }
            })
            let run = Task(executorPreference: thread) {
                let code = await execute(args, node: node, console: console)
                output.finish(code)
            }
            // What the client sends after its request is ignored. The stream ends when the
            // connection closes: after `x`, or because the client went away or stopped reading;
            // then the command (a `watch`, say) is cancelled and finishes before the client's slot
            // is given back.
            while (try? await input.next()) != nil {}
            run.cancel()
            await run.value
            thread.stop()
        }
    }

    /// Writes an error line and `x CODE` to `channel`, then closes it.
    static func answer(_ channel: any Channel, _ message: String, _ status: ExitStatus) -> EventLoopFuture<Void> {
        let written = channel.writeAndFlush(ByteBuffer(string: "e \(message)\nx \(status.rawValue)\n"))
        written.whenComplete { _ in channel.close(promise: nil) }
        return written
    }

    /// `bytes` as the README states limits: "1048576 bytes (1 MiB)".
    static func bytes(_ count: Int) -> String {
        count >= 1 << 20 && count % (1 << 20) == 0 ? "\(count) bytes (\(count >> 20) MiB)" : "\(count) bytes"
    }

    /// A duration in seconds, as short as it goes: "10", "0.2".
    static func seconds(_ duration: Duration) -> String { String(format: "%g", duration.inSeconds) }

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
