// TLSTestClient: a TLS 1.3 client with a device identity of its own that sends raw bytes and records what comes back.

import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import ShoalTrust

/// A peer that completes the TLS handshake as a Shoal device would (its own self-signed
/// certificate, any server certificate accepted) and then behaves as a test wants: it sends
/// `send` once the handshake completes and keeps every byte the node sends, until the node
/// closes the connection or `timeout` passes. For tests of what crosses the socket.
enum TLSTestClient {
    struct Result {
        /// Whether the TLS handshake completed (on the client's side).
        var handshakeCompleted: Bool
        /// The application bytes received (decrypted).
        var received: [UInt8]
        /// Whether the node closed the connection (false: the timeout closed it).
        var closedByPeer: Bool
        /// The client's local port (the node sees it as the remote port).
        var localPort: Int
    }

    /// A TLS 1.3 client context presenting `identity`'s certificate, as a Shoal device's (the
    /// server's certificate is accepted by the handler's verification callback).
    static func context(_ identity: DeviceIdentity) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv13
        configuration.certificateChain = [
            .certificate(try NIOSSLCertificate(bytes: identity.certificateDER, format: .der))
        ]
        configuration.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: identity.privateKeyDER, format: .der))
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates([])
        return try NIOSSLContext(configuration: configuration)
    }

    /// `until`, when given, is asked after every read whether what arrived so far is all the test
    /// waits for; the client then closes the connection itself (`closedByPeer` stays true).
    /// The default `timeout` is long, as ``eventually(timeout:_:)``'s: a test that expects the
    /// node to close returns as soon as it does, and on a loaded two-core machine the close of a
    /// refused connection once took longer than 15 s to arrive. Tests that expect no close pass
    /// a short one.
    /// `holdUntil`, when given, keeps the connection open until it holds (asked every 20 ms),
    /// then the client closes it (`closedByPeer` false): for a test that expects the node to
    /// keep the connection and act on what it was sent, however long the node takes to read it.
    static func exchange(
        port: Int, identity: DeviceIdentity, send: [UInt8] = [], timeout: Duration = .seconds(90),
        until: (@Sendable ([UInt8]) -> Bool)? = nil,
        holdUntil: (@Sendable () async -> Bool)? = nil
    ) async throws -> Result {
        let context = try context(identity)
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.next().makePromise(of: (Bool, [UInt8]).self)
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let ops = channel.pipeline.syncOperations
                    try ops.addHandler(
                        NIOSSLClientHandler(
                            context: context, serverHostname: nil,
                            customVerificationCallback: { _, p in p.succeed(.certificateVerified) }))
                    try ops.addHandler(Collector(send: send, done: done, until: until))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let localPort = channel.localAddress?.port ?? 0
        let timer = channel.eventLoop.scheduleTask(
            in: .nanoseconds(
                Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        ) {
            channel.close(promise: nil)
        }
        let held = holdUntil.map { condition in
            Task { () -> Bool in
                while !Task.isCancelled {
                    if await condition() {
                        try? await channel.close()
                        return true
                    }
                    try? await Task.sleep(for: .milliseconds(20))
                }
                return false
            }
        }
        let (handshake, bytes) = try await done.futureResult.get()
        timer.cancel()
        held?.cancel()
        let closedHere = await held?.value ?? false
        // The timer's future succeeds only if it ran (a cancelled one fails).
        let timedOut = (try? await timer.futureResult.get()) != nil
        return Result(
            handshakeCompleted: handshake, received: bytes, closedByPeer: !timedOut && !closedHere, localPort: localPort
        )
    }

    final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let send: [UInt8]
        let done: EventLoopPromise<(Bool, [UInt8])>
        let until: (@Sendable ([UInt8]) -> Bool)?
        var handshake = false
        var bytes: [UInt8] = []

        init(send: [UInt8], done: EventLoopPromise<(Bool, [UInt8])>, until: (@Sendable ([UInt8]) -> Bool)? = nil) {
            self.send = send
            self.done = done
            self.until = until
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted = event as? TLSUserEvent {
                handshake = true
                if !send.isEmpty { context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: send)), promise: nil) }
            }
            context.fireUserInboundEventTriggered(event)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            bytes += unwrapInboundIn(data).readableBytesView
            if bytes.count > 1 << 20 || until?(bytes) == true { context.close(promise: nil) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            done.succeed((handshake, bytes))
            context.fireChannelInactive()
        }
    }
}
