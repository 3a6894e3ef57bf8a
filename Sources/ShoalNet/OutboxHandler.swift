// OutboxHandler: record and control frames wait above the socket while it takes no more, and a
// connection that takes nothing for too long is closed (Spec/replication.md §2).

import Logging
import NIOCore
import NIOSSL
import ShoalWire

/// Passes the node's record and control frames (everything but asset frames, which have their
/// own ways: ``ChunkYieldHandler``) to the socket while the channel is writable, holds them, in
/// order, while it is not, and closes a connection that stays unwritable longer than
/// ``NetworkConfiguration/unwritableTimeout``.
///
/// The node hands frames to it through ``OutboundGate/send(_:thenClose:)``, which never waits:
/// the engine serves every connection from one task, and a peer that does not read must not hold
/// up the others. What waits here is counted in the connection's ``Outbox``, which holds back the
/// peer's requests while it is over its limit, so the node stops serving that peer more.
///
/// It sits below ``ChunkYieldHandler``, so it sees the channel's writability first: when the
/// channel takes bytes again the record frames held here go before the next chunk, as they would
/// overtake held chunks anyway. Frames written by handlers above it or around the node's path
/// (asset frames, keepalive pings) pass through untouched.
final class OutboxHandler: ChannelDuplexHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundIn = Frame
    typealias OutboundOut = Frame

    let outbox: Outbox
    private let unwritableTimeout: TimeAmount
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var held = CircularBuffer<Frame>()
    /// Close once every held frame has been passed on (an `error` or `goodbye` goes last).
    private var closeWhenSent = false
    private var closed = false
    /// Set while ``pump(_:)`` runs: a writability change it causes does not start another.
    private var pumping = false
    /// Since when the channel has been unwritable; nil while it is writable.
    private var unwritableSince: NIODeadline?
    /// The check of ``unwritableSince`` against the timeout, while one is scheduled.
    private var deadlineCheck: Scheduled<Void>?

    /// How many payload bytes may pass before a flush: writability is known only once bytes
    /// reach the socket's buffer, below TLS, which holds whatever was written until a flush.
    static let flushEvery = 64 << 10

    init(outbox: Outbox, unwritableTimeout: TimeAmount, logger: Logger) {
        self.outbox = outbox
        self.unwritableTimeout = unwritableTimeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        drop()
        self.context = nil
    }

    /// Takes frames from the node (on the event loop) and passes on as many as the channel takes.
    func enqueue(_ frames: [Frame], thenClose: Bool) {
        // After a close was asked for nothing more goes out (as from a finished writer).
        guard let context, !closed, !closeWhenSent else {
            outbox.remove(frames.reduce(0) { $0 &+ $1.heldCost })
            return
        }
        for f in frames { held.append(f) }
        if thenClose { closeWhenSent = true }
        pump(context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            unwritableSince = nil
            pump(context)
        } else {
            noteUnwritable(context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        drop()
        context.fireChannelInactive()
    }

    /// Passes held frames on while the channel is writable, flushing every ``flushEvery`` bytes
    /// and at the end; closes the channel when asked to and nothing is held.
    private func pump(_ context: ChannelHandlerContext) {
        guard !pumping, !closed else { return }
        pumping = true
        defer { pumping = false }
        var passed = 0
        // Again while a flush made the channel writable after the loop stopped for it: the
        // writability event that says so came during the flush, while this was running.
        repeat {
            var unflushed = 0
            while context.channel.isWritable, let f = held.popFirst() {
                context.write(wrapOutboundOut(f), promise: nil)
                passed &+= f.heldCost
                unflushed &+= f.payload.count
                if unflushed >= Self.flushEvery {
                    context.flush()
                    unflushed = 0
                }
            }
            if unflushed > 0 { context.flush() }
        } while !closed && context.channel.isWritable && !held.isEmpty
        if passed > 0 { outbox.remove(passed) }
        if closed { return }
        if held.isEmpty && closeWhenSent {
            closed = true
            context.close(promise: nil)
        } else if !context.channel.isWritable {
            noteUnwritable(context)
        }
    }

    /// Starts the unwritable deadline, unless it runs already.
    private func noteUnwritable(_ context: ChannelHandlerContext) {
        if unwritableSince == nil { unwritableSince = context.eventLoop.now }
        guard deadlineCheck == nil, let since = unwritableSince else { return }
        scheduleCheck(context, at: since + unwritableTimeout)
    }

    /// One timer per connection, however often writability flips: when it fires, a channel
    /// writable meanwhile has nothing to answer for, and one unwritable again since is checked
    /// again at its own deadline.
    private func scheduleCheck(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        deadlineCheck = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = bound.value
            handler.deadlineCheck = nil
            handler.checkDeadline(context)
        }
    }

    private func checkDeadline(_ context: ChannelHandlerContext) {
        guard !closed, let since = unwritableSince else { return }
        let deadline = since + unwritableTimeout
        guard deadline <= context.eventLoop.now else { return scheduleCheck(context, at: deadline) }
        let seconds = Double(unwritableTimeout.nanoseconds) / 1e9
        logger.warning(
            "closing connection: its peer took no bytes for the unwritable timeout",
            metadata: [
                "remote": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", "timeout_s": "\(seconds)",
                "queued_bytes": "\(outbox.queuedBytes)", "held_requests": "\(outbox.parkedCount)"
            ])
        closed = true
        // Below TLS: its goodbye (close_notify, then up to 5 s waiting for the peer's) would go
        // to a peer that reads nothing, and the wait would keep what the connection holds.
        let below = try? context.pipeline.syncOperations.context(handlerType: NIOSSLHandler.self)
        (below ?? context).close(promise: nil)
    }

    /// The connection is gone: held frames are dropped and uncounted, held requests dropped.
    private func drop() {
        closed = true
        deadlineCheck?.cancel()
        deadlineCheck = nil
        var bytes = 0
        while let f = held.popFirst() { bytes &+= f.heldCost }
        if bytes > 0 { outbox.remove(bytes) }
        outbox.close()
    }
}
