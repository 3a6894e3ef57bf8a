// Outbox: what a connection's record and control frames cost while they wait for its socket, and
// the peer's requests held back while that is too much (Spec/replication.md §2).

import NIOCore
import ShoalWire
import Synchronization

/// Counts the bytes of the record and control frames the node has handed to one connection and
/// its ``OutboxHandler`` has not yet passed to the socket, and holds back the peer's requests
/// that would make the node serve it more while they are over ``limit``.
///
/// A peer that stops reading would otherwise be served without end: every `subscribe` opens a
/// window of `changes` batches (up to `maxServedWindow` of `batchBytes`, 16 MiB by default) and
/// every `acknowledgement` refills one, and all of it would wait in this node's memory: a client
/// that subscribed to ten zones of 1.5 MB and read nothing had all 15 MB waiting in NIO's buffer
/// for its connection (`NonReadingPeerTests`), and `shoal-bench hostile`'s non-reader, a hundred
/// zones of 2 MB, grew the node by hundreds of MB. Now the node hands the peer's `subscribe`,
/// `acknowledgement` and `ping` frames to the
/// engine one at a time, each once the one before was handled and only while the bytes waiting
/// are at most ``limit``; the others wait here in order. So what one connection holds is at most
/// ``limit``, plus the batches one request made, plus what the windows of its idle subscriptions
/// take when their zones change.
///
/// Only these requests wait: the peer's `changes` batches and everything else still reach the
/// engine at once, so two nodes sending each other more than ``limit`` both keep reading, and
/// neither waits for the other to read first. Held requests past ``parkingLimit`` stop this
/// connection's reader until some are handled (a peer sending requests without end is slowed by
/// TCP, not buffered).
final class Outbox: Sendable {
    private struct State {
        /// Frame bytes handed over and not yet passed to the socket.
        var queued = 0
        /// Requests from the peer waiting for room, oldest first.
        var parked = CircularBuffer<Frame>()
        var parkedBytes = 0
        /// Whether one request is with the engine now (the next waits until it is handled).
        var handling = false
        var closed = false
        /// How a request goes to the engine (the connection's reader sets it).
        var deliver: (@Sendable (Frame) -> Void)?
        /// Told when the frames waiting fall back to the limit from above.
        var drained: (@Sendable () -> Void)?
        var readers: [CheckedContinuation<Void, Never>] = []

        mutating func popParked() -> Frame? {
            guard let f = parked.popFirst() else { return nil }
            parkedBytes -= f.heldCost
            return f
        }

        /// Hands the next request to the engine, if there is room and none is with it.
        /// Called with the lock held, so requests reach the engine in the order they came.
        mutating func releaseNext(limit: Int) {
            guard !handling, !closed, queued <= limit, let deliver, let f = popParked() else { return }
            handling = true
            deliver(f)
        }
    }

    private let state = Mutex(State())
    /// Above this many queued bytes the peer's requests wait (``NetworkConfiguration/outboxBytes``).
    let limit: Int
    /// Above this many bytes of held requests the connection's reader waits.
    let parkingLimit: Int

    init(limit: Int, parkingLimit: Int = 1 << 20) {
        self.limit = limit
        self.parkingLimit = parkingLimit
    }

    /// Whether the peer's `frame` is a request this outbox holds back while it is full: the
    /// frames that make the node serve more.
    static func holdsBack(_ frame: Frame) -> Bool {
        frame.type == .subscribe || frame.type == .acknowledgement || frame.type == .ping
    }

    /// The frame bytes waiting now.
    var queuedBytes: Int { state.withLock { $0.queued } }

    /// The requests held back now.
    var parkedCount: Int { state.withLock { $0.parked.count } }

    /// Whether more than ``limit`` bytes wait: the node then serves this peer nothing new
    /// (its requests wait here, and its subscriptions' news waits: `SyncNode.zoneChanged(_:holding:)`).
    var isOverLimit: Bool { state.withLock { $0.queued > limit } }

    /// Sets how requests reach the engine, and what learns that the frames waiting have fallen
    /// back to the limit (`drained`); before, none does.
    func start(delivering deliver: @escaping @Sendable (Frame) -> Void, drained: (@Sendable () -> Void)? = nil) {
        state.withLock { s in
            s.deliver = deliver
            s.drained = drained
            s.releaseNext(limit: limit)
        }
    }

    /// The node handed frames of `bytes` to the connection.
    func add(_ bytes: Int) { state.withLock { $0.queued &+= bytes } }

    /// `bytes` of frames went to the socket (or were dropped): a request waiting goes ahead
    /// when there is room again, and `drained` is told when this brought the bytes waiting
    /// back to the limit.
    func remove(_ bytes: Int) {
        let (ready, drained) = state.withLock { s -> ([CheckedContinuation<Void, Never>], (@Sendable () -> Void)?) in
            let wasOver = s.queued > limit
            s.queued &-= bytes
            s.releaseNext(limit: limit)
            let drained = wasOver && s.queued <= limit && !s.closed ? s.drained : nil
            guard s.parkedBytes <= parkingLimit else { return ([], drained) }
            defer { s.readers = [] }
            return (s.readers, drained)
        }
        for r in ready { r.resume() }
        drained?()
    }

    /// The engine has handled the request it was given: the next may go.
    func handled() {
        state.withLock { s in
            s.handling = false
            s.releaseNext(limit: limit)
        }
    }

    /// Takes a request from the peer: it goes to the engine now if there is room and no other
    /// is waiting or being handled, and waits here otherwise. Returns false when the held
    /// requests are over ``parkingLimit`` (the reader then waits: ``waitForParkingRoom()``).
    func offer(_ frame: Frame) -> Bool {
        state.withLock { s in
            guard !s.closed else { return true }
            s.parked.append(frame)
            s.parkedBytes &+= frame.heldCost
            s.releaseNext(limit: limit)
            return s.parkedBytes <= parkingLimit
        }
    }

    /// Returns once the held requests are within ``parkingLimit`` (at once when they are), or the
    /// connection has closed.
    func waitForParkingRoom() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.closed || s.parkedBytes <= parkingLimit { return true }
                s.readers.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    /// The connection is gone: held requests are dropped and nobody waits.
    func close() {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.closed = true
            s.parked.removeAll()
            s.parkedBytes = 0
            s.deliver = nil
            s.drained = nil
            defer { s.readers = [] }
            return s.readers
        }
        for r in ready { r.resume() }
    }
}

extension Frame {
    /// What a frame counts against a connection's bounds, held on its way out (``Outbox``) or in
    /// (``InboundBudget``): its payload, decompressed as the node holds it, and the header's few bytes.
    var heldCost: Int { payload.count &+ 16 }
}

/// A connection's way out, as the node holds it: the chunk bytes held above its socket
/// (``ChunkGate``), its record frames' ``Outbox``, and the handler that passes them on.
struct OutboundGate: Sendable {
    let chunks: ChunkGate
    let records: Outbox
    let handler: NIOLoopBound<OutboxHandler>

    /// Hands `frames` to the connection, in order, and then closes it when `thenClose`, without
    /// waiting for the socket: the bytes are counted at once, and the handler passes them on
    /// from its event loop as the socket takes them (``OutboxHandler``).
    func send(_ frames: [Frame], thenClose: Bool) {
        records.add(frames.reduce(0) { $0 &+ $1.heldCost })
        let handler = self.handler
        handler.eventLoop.execute { handler.value.enqueue(frames, thenClose: thenClose) }
    }
}
