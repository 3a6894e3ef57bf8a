// TrustGate: holds a connection's application bytes, both ways, until the node has decided to trust its device.

import NIOCore
import NIOTLS
import ShoalWire

/// Sits right after the TLS handler. Until ``open()``, nothing this node writes reaches TLS (a
/// write fails) and what the peer sends is held here, at most ``heldLimit`` bytes (more closes
/// the connection): so a device the node does not trust receives no byte of application data,
/// not even an error frame, and the frames of one it does trust wait for the decision.
///
/// It also reports the handshake: ``handshake`` succeeds with the peer's device ID (recorded by
/// ``PeerTLS``'s verification) when TLS completes, and fails if the connection closes or errs
/// first, or when the node's handshake timeout passes (``timeOut()``).
final class TrustGate: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Most bytes held from a peer before the node decides: a peer sends its hello and waits for
    /// ours, so 1 MiB is far more than a well-behaved one needs.
    static let heldLimit = 1 << 20

    /// Why a connection ended before the node decided.
    struct Refused: Error, CustomStringConvertible {
        let description: String
    }

    /// The peer's device ID, set by the certificate verification during the handshake.
    var peer: DeviceID?
    /// Succeeds with the peer's device ID once TLS completes.
    let handshake: EventLoopPromise<DeviceID>
    private var decided = false
    private var isOpen = false
    private var held: [ByteBuffer] = []
    private var heldBytes = 0
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
    }

    /// The handshake took too long: the connection closes. Call on the channel's event loop.
    func timeOut() {
        guard !decided else { return }
        fail("no TLS handshake within the handshake timeout")
        context?.close(promise: nil)
    }

    private func fail(_ reason: String) {
        guard !decided else { return }
        decided = true
        handshake.fail(Refused(description: reason))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if isOpen { return context.fireChannelRead(data) }
        let bytes = unwrapInboundIn(data)
        heldBytes += bytes.readableBytes
        held.append(bytes)
        if heldBytes > Self.heldLimit {
            held = []
            fail("the peer sent more than \(Self.heldLimit) bytes before it was trusted")
            context.close(promise: nil)
        }
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
