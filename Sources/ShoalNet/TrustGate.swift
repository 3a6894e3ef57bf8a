// TrustGate: holds a connection's application bytes, both ways, until the node has decided to trust its device.

import NIOCore
import NIOTLS
import ShoalWire

/// Sits right after the TLS handler. Until ``open()``, nothing this node writes reaches TLS (a
/// write fails) and what the peer sends is held here: so a device the node does not trust
/// receives no byte of application data, not even an error frame, and the frames of one it does
/// trust wait for the decision. Once ``heldLimit`` bytes are held the connection is read no
/// more until the decision, so TCP slows a peer that sends much at once (a trusted one that
/// starts a large batch right after its hello is not cut off: it waits).
///
/// It also reports the handshake: ``handshake`` succeeds with the peer's device ID (recorded by
/// ``PeerTLS``'s verification) when TLS completes, and fails if the connection closes or errs
/// first, or when the node's handshake timeout passes (``timeOut()``).
final class TrustGate: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Bytes held from a peer before the node decides past which reading stops: a peer sends its
    /// hello and may go on at once with batches, and 1 MiB lets what it sent first through.
    /// What is held is at most this plus one read (NIO's receive buffer).
    static let heldLimit = 1 << 20

    /// Why a connection ended before the node decided.
    struct Refused: Error, CustomStringConvertible {
        let description: String
        /// Whether it was closed to give its place to a newer connection (``evict(_:)``).
        var evicted = false
    }

    /// The peer's device ID, set by the certificate verification during the handshake.
    var peer: DeviceID?
    /// Succeeds with the peer's device ID once TLS completes.
    let handshake: EventLoopPromise<DeviceID>
    private var decided = false
    private var isOpen = false
    private var held: [ByteBuffer] = []
    private var heldBytes = 0
    /// A read the channel asked for while the held bytes were over the limit.
    private var readPending = false
    private var context: ChannelHandlerContext?

    init(handshake: EventLoopPromise<DeviceID>) {
        self.handshake = handshake
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        fail("the connection's pipeline was taken apart")
    }

    /// Lets the held bytes and all later ones through, both ways. Call on the channel's event loop.
    func open() {
        guard !isOpen, let context else { return }
        isOpen = true
        let bytes = held
        held = []
        heldBytes = 0
        for b in bytes { context.fireChannelRead(wrapInboundOut(b)) }
        if !bytes.isEmpty { context.fireChannelReadComplete() }
        if readPending {
            readPending = false
            context.read()
        }
    }

    /// The handshake took too long: the connection closes. Call on the channel's event loop.
    func timeOut() {
        guard !decided else { return }
        fail("no TLS handshake within the handshake timeout")
        context?.close(promise: nil)
    }

    /// Closes `channel`, an accepted connection that has not shown a trusted device, so that a
    /// newer one takes its place (``InboundAdmission``): its handshake, if still under way,
    /// fails as evicted. Callable from any thread.
    static func evict(_ channel: any Channel) {
        channel.eventLoop.execute {
            if let gate = try? channel.pipeline.syncOperations.handler(type: TrustGate.self) {
                gate.fail(
                    "closed to give its place to a newer connection (NetworkConfiguration.maxInboundConnections)",
                    evicted: true)
            }
            channel.close(promise: nil)
        }
    }

    private func fail(_ reason: String, evicted: Bool = false) {
        guard !decided else { return }
        decided = true
        handshake.fail(Refused(description: reason, evicted: evicted))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if isOpen { return context.fireChannelRead(data) }
        let bytes = unwrapInboundIn(data)
        heldBytes += bytes.readableBytes
        held.append(bytes)
    }

    func read(context: ChannelHandlerContext) {
        guard !isOpen, heldBytes >= Self.heldLimit else { return context.read() }
        readPending = true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if isOpen { context.fireChannelReadComplete() }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard isOpen else {
            promise?.fail(Refused(description: "nothing is sent before the peer's device is trusted"))
            return
        }
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        if isOpen { context.flush() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent, !decided {
            decided = true
            if let peer {
                handshake.succeed(peer)
            } else {
                handshake.fail(Refused(description: "the TLS handshake completed without a peer certificate"))
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail("TLS: \(error)")
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail("the connection closed during the TLS handshake")
        context.fireChannelInactive()
    }
}
