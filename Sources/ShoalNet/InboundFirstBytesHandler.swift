// InboundFirstBytesHandler: tells the node's admission when an accepted connection has sent its first bytes; AcceptedChannel: who ends an accepted connection's async channel.

import NIOCore
import ShoalWire
import Synchronization

/// Sits first in an accepted connection's pipeline, before TLS, and passes everything on
/// untouched; on the first bytes it tells ``InboundAdmission`` that the connection's TLS
/// handshake has begun (so it no longer gives its place up before connections that have sent
/// nothing at all).
final class InboundFirstBytesHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let admission: InboundAdmission
    private var heard = false

    init(admission: InboundAdmission) {
        self.admission = admission
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !heard {
            heard = true
            admission.heard(context.channel)
        }
        context.fireChannelRead(data)
    }
}

/// An accepted connection's async channel, which exactly one of two must end: the accept loop,
/// which serves it, or its close, when it closed before the loop took it (evicted) or NIO
/// dropped it (a connection accepted while its listener closes is never handed on; its writer
/// would trap when dropped unfinished).
final class AcceptedChannel: Sendable {
    let channel: NIOAsyncChannel<Frame, Frame>
    private let claimed = Atomic<Bool>(false)

    init(_ channel: NIOAsyncChannel<Frame, Frame>) {
        self.channel = channel
    }

    /// Whether the caller is the first to ask, and so the one to end the channel.
    func claim() -> Bool {
        !claimed.exchange(true, ordering: .acquiringAndReleasing)
    }
}
