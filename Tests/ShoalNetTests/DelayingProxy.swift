// DelayingProxy: a TCP relay on loopback that holds each connection's bytes for a while before passing them on.

import NIOCore
import NIOPosix

/// Accepts on an ephemeral loopback port and, for each connection, waits `delay` before it
/// connects to `127.0.0.1:target` and relays bytes both ways. The client's TCP connect succeeds
/// at once; whatever it sends meanwhile waits in the socket: a slow path, as a loaded machine or
/// a congested link makes one, without touching either node.
struct DelayingProxy {
    /// The port the proxy accepts on.
    let port: Int
    private let server: any Channel
    private let serving: Task<Void, Never>

    /// Starts relaying to `target` after `delay` per connection, on `group`'s event loops.
    static func start(to target: Int, delay: Duration, group: any EventLoopGroup) async throws -> DelayingProxy {
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { child in
                child.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: child)
                }
            }
        let port = server.channel.localAddress?.port ?? 0
        let channel = server.channel
        let serving = Task<Void, Never> {
            _ = try? await server.executeThenClose { clients in
                try await withThrowingDiscardingTaskGroup { relays in
                    for try await client in clients {
                        relays.addTask { try? await relay(client, to: target, after: delay, group: group) }
                    }
                }
            }
        }
        return DelayingProxy(port: port, server: channel, serving: serving)
    }

    /// Relays `client` to `target` once `delay` has passed, until either side closes.
    private static func relay(
        _ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>, to target: Int, after delay: Duration,
        group: any EventLoopGroup
    ) async throws {
        try await Task.sleep(for: delay)
        let upstream = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: target) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
        try await client.executeThenClose { clientIn, clientOut in
            try await upstream.executeThenClose { upIn, upOut in
                try await withThrowingTaskGroup(of: Void.self) { both in
                    both.addTask { for try await bytes in clientIn { try await upOut.write(bytes) } }
                    both.addTask { for try await bytes in upIn { try await clientOut.write(bytes) } }
                    // Either side ending ends the relay: both channels close.
                    try await both.next()
                    both.cancelAll()
                }
            }
        }
    }

    /// Stops accepting and closes every relay.
    func stop() async {
        serving.cancel()
        try? await server.close()
    }
}
