// ChunkYieldHandler: asset chunks wait above the socket, so record frames written after them
// overtake them instead of queueing behind a window of chunks (Spec/replication.md §3.7).

import NIOCore
import ShoalWire
import Synchronization
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Holds outgoing `asset-chunk` frames and passes them down one per turn of the event loop, while
/// the connection has no bytes waiting, and lets every other frame pass at once, so a record change
/// never waits behind more chunk bytes than the little the socket holds (``OutboundQueue``), nor
/// behind more than one chunk's work on the event loop.
///
/// Without it a served window of chunks (up to `assetWindow` of them, 2.4 MB at 32 chunks of the
/// mean size) went straight into the kernel's send buffer, and a record change sent next waited
/// for all of it: 17–19 ms at the median on a 1 Gbit/s link. With it, the kernel holds at most
/// ``OutboundQueue/unsentBytes`` unsent (`TCP_NOTSENT_LOWAT`), NIO at most about one chunk frame
/// beyond ``OutboundQueue/bufferedBytes`` (the channel's write watermarks), and the rest of the
/// chunks wait here, in order, until the channel is writable again.
///
/// One chunk per turn: a record frame the node hands to the channel reaches it as a task on the
/// event loop, and waits for whatever the loop is doing. Passing every held chunk down at once
/// (encoding each, and writing it to a loopback socket whose peer keeps reading) kept the loop
/// busy for a whole window of chunks, 0.6 ms at the median and up to 5.8 ms during a 1 GiB
/// transfer on loopback (Spec/assets.md §9.1). Now each turn passes one
/// chunk and schedules the next as a task of its own, behind any task already waiting.
///
/// Record frames do not wait here: they wait for writability in the ``OutboxHandler`` below, which
/// sees the channel's writability events first and passes its frames on before this handler's
/// next turn, so records still overtake held chunks. The events stop here (nothing above needs
/// them: the node hands record frames to the ``OutboxHandler`` directly). The serving lane waits
/// when more than ``OutboundQueue/heldBytesLimit`` of chunks are held (``ChunkGate``), so a peer
/// that asks for chunks and does not read them cannot grow this queue without end.
final class ChunkYieldHandler: ChannelDuplexHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundIn = Frame
    typealias OutboundOut = Frame

    private var held = CircularBuffer<(frame: Frame, promise: EventLoopPromise<Void>?)>()
    /// Whether a turn that passes the next held chunk down is scheduled.
    private var turnScheduled = false
    /// Set once the connection is gone: nothing more is passed down.
    private var closed = false
    let gate: ChunkGate

    init(gate: ChunkGate) { self.gate = gate }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        guard frame.type == .assetChunk else {
            context.write(data, promise: promise)
            return
        }
        guard !closed else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        held.append((frame, promise))
        gate.hold(frame.payload.count)
        scheduleTurn(context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // Not passed on (see the type's documentation).
        if context.channel.isWritable { scheduleTurn(context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        drop(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        drop(ChannelError.ioOnClosedChannel)
    }

    /// Schedules ``turn(_:)`` unless one is scheduled already or nothing is held.
    private func scheduleTurn(_ context: ChannelHandlerContext) {
        guard !turnScheduled, !closed, !held.isEmpty else { return }
        turnScheduled = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute { bound.value.0.turn(bound.value.1) }
    }

    /// Passes the first held chunk down and flushes it, if the channel is writable, and schedules
    /// the next turn; a channel that is not writable schedules it when it is again.
    private func turn(_ context: ChannelHandlerContext) {
        turnScheduled = false
        guard !closed, context.channel.isWritable, let (frame, promise) = held.popFirst() else { return }
        gate.release(frame.payload.count)
        context.write(wrapOutboundOut(frame), promise: promise)
        context.flush()
        if context.channel.isWritable { scheduleTurn(context) }
    }

    /// The connection is gone: held chunks fail, and a lane waiting for room goes on.
    private func drop(_ error: any Error) {
        closed = true
        while let (frame, promise) = held.popFirst() {
            gate.release(frame.payload.count)
            promise?.fail(error)
        }
        gate.close()
    }
}

/// The chunk bytes a connection's ``ChunkYieldHandler`` holds, and a wait for them to fall under
/// the limit, for the serving lane.
final class ChunkGate: Sendable {
    private struct State {
        var held = 0
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// Above this many held bytes, ``waitForRoom()`` waits.
    let limit: Int

    init(limit: Int = OutboundQueue.heldBytesLimit) { self.limit = limit }

    /// The chunk payload bytes held now.
    var heldBytes: Int { state.withLock { $0.held } }

    func hold(_ bytes: Int) { state.withLock { $0.held &+= bytes } }

    func release(_ bytes: Int) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.held &-= bytes
            guard s.held <= limit else { return [] }
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in ready { w.resume() }
    }

    /// The connection closed: nothing more will be held, and nobody waits.
    func close() {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.closed = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in ready { w.resume() }
    }

    /// Returns once at most ``limit`` bytes are held (at once when that is so already), or the
    /// connection has closed.
    func waitForRoom() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.closed || s.held <= limit { return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
}

/// How much a connection lets wait below the ``ChunkYieldHandler``.
enum OutboundQueue {
    /// The most unsent bytes the kernel keeps for a connection (`TCP_NOTSENT_LOWAT`; where the
    /// option does not exist, the kernel's own send buffer applies).
    static let unsentBytes: Int32 = 64 << 10
    /// NIO's write watermarks: above `high` buffered bytes the channel is not writable, and it is
    /// again below `low`.
    static let bufferedBytes = ChannelOptions.Types.WriteBufferWaterMark(low: 16 << 10, high: 32 << 10)
    /// The chunk bytes a connection may hold before the serving lane waits.
    static let heldBytesLimit = 8 << 20

    /// Sets the watermarks and the socket option on a new connection's channel (on its event
    /// loop). The socket option is best effort: a kernel without it keeps its own send buffer,
    /// and the connection works as before, with more chunk bytes possibly ahead of a record.
    ///
    /// Without the option the handler does little on a slow link: the kernel takes chunk bytes up
    /// to its send buffer (megabytes), so the channel stays writable and every chunk passes. On
    /// loopback shaped to 1 Gbit/s a record change during a 1 GiB transfer then took 19.60 and
    /// 19.75 ms at the median, against 3.63 and 3.34 ms with it (Spec/replication.md §3.7).
    static func configure(_ channel: any Channel) throws {
        guard let options = channel.syncOptions else { throw ChannelError.operationUnsupported }
        try options.setOption(.writeBufferWaterMark, value: bufferedBytes)
        #if os(Linux) || canImport(Darwin)
            try? options.setOption(
                .tcpOption(.init(rawValue: CInt(TCP_NOTSENT_LOWAT))), value: SocketOptionValue(unsentBytes))
        #endif
    }
}
