// AssetFrameRouter: a connection's asset frames go from its event loop straight to the asset
// lanes' queues, so record frames never wait behind chunks on their way to the engine.

import NIOCore
import ShoalSync
import ShoalWire
import Synchronization

/// Hands each incoming `asset-request` and `asset-chunk` frame to its lane's ``AssetFrameQueue``
/// on the event loop that decoded it, and passes every other frame on to the node's reader.
///
/// Before, every frame went through the async channel's buffer and one reader task, which moved
/// asset frames to their queues. A record frame then waited behind every chunk ahead of it, in
/// that buffer and, whenever the buffer was full (the reader is a task on the cooperative pool),
/// behind the chunk bytes the event loop had stopped reading from the socket: up to a window of
/// chunks, 2.4 MB at 32 of the mean size, and 3–4 ms during a transfer on loopback
/// (Spec/replication.md §3.7). Now only the socket's own bytes are ahead of it.
///
/// A connection over its queue's limit (``AssetFrameQueue/limit``) stops reading here: the read
/// request is held until the lane has taken enough, and TCP slows the peer. Until the node has
/// named the connection (``Binding``, set before its hello is sent, so before a well-behaved peer
/// can ask for anything) asset frames pass on like the others, and the reader moves them.
final class AssetFrameRouter: ChannelDuplexHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundIn = Frame
    typealias OutboundOut = Frame

    /// The connection's ID, once the node has given it one.
    final class Binding: Sendable {
        private let id = Mutex<ConnectionID?>(nil)

        init() {}

        /// The ID, or nil before the node has named the connection.
        var connection: ConnectionID? {
            get { id.withLock { $0 } }
            set { id.withLock { $0 = newValue } }
        }
    }

    let binding = Binding()
    /// The connection's asset requests, for its serving lane.
    let requests: AssetFrameQueue
    private let chunks: AssetFrameQueue
    /// ``binding``'s ID, read once it is set.
    private var connection: ConnectionID?
    /// The queues this connection is over the limit of (0, 1 or 2): reading waits while any.
    private var full = 0
    /// A read the pipeline asked for while ``full`` was above zero, made once it is zero again.
    private var readPending = false

    init(requests: AssetFrameQueue, chunks: AssetFrameQueue) {
        self.requests = requests
        self.chunks = chunks
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let queue = frame.type == .assetChunk ? chunks : frame.type == .assetRequest ? requests : nil
        guard let queue, let id = connection ?? binding.connection else {
            context.fireChannelRead(data)
            return
        }
        connection = id
        guard queue.offer(frame, from: id) else { return }
        full += 1
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        queue.whenRoom(for: id) {
            loop.execute { bound.value.0.roomAgain(bound.value.1) }
        }
    }

    func read(context: ChannelHandlerContext) {
        if full > 0 {
            readPending = true
        } else {
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A reader waiting for room on a closed connection has nothing left to read.
        if let connection {
            requests.release(connection)
            chunks.release(connection)
        }
        context.fireChannelInactive()
    }

    /// One queue has room again: once none is over, the held read goes ahead.
    private func roomAgain(_ context: ChannelHandlerContext) {
        full -= 1
        guard full == 0, readPending else { return }
        readPending = false
        context.read()
    }
}

/// What the node needs from a new connection's pipeline: its way out (chunk gate and outbox),
/// its router's binding and its request queue.
struct ConnectionHandlers: Sendable {
    let gate: OutboundGate
    let binding: AssetFrameRouter.Binding
    let requests: AssetFrameQueue
    /// The connection's frames with the engine.
    let inbound: InboundBudget
    /// When its last frame arrived (``KeepaliveHandler``).
    let received: ReceiveClock
}
