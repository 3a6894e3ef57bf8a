// AssetFrameQueue: the frames waiting for an asset lane, handed over in batches — everything that
// arrived while the lane was busy at once, so a lane that falls behind catches up with one hop per
// batch instead of one per frame — and bounded per connection.

import ShoalSync
import ShoalWire
import Synchronization

/// Frames for one asset lane, in arrival order. Readers push one frame at a time; the lane takes
/// every frame waiting (``take()``), or waits for the next when there is none.
///
/// Each connection may have at most ``limit`` bytes waiting (a frame counts its payload, and at
/// least ``minimumFrameCost``, so a flood of empty frames is bounded too). A push that takes the
/// connection over it waits until the lane has taken enough: the connection's reader stops
/// reading, and TCP slows the peer. A well-behaved peer never gets near it — the requester's
/// window bounds what it has in flight — but one that floods requests or sends chunks nobody
/// asked for can no longer grow a node's memory without end (Spec/replication.md §3.7).
final class AssetFrameQueue: Sendable {
    /// One frame and the connection it came on.
    typealias Item = (connection: ConnectionID, frame: Frame)

    /// What the smallest frame counts against ``limit``.
    static let minimumFrameCost = 1 << 10

    private struct State {
        var items: [Item] = []
        var waiter: CheckedContinuation<[Item]?, Never>?
        var finished = false
        /// The cost of each connection's frames waiting (no entry: none).
        var queued: [ConnectionID: Int] = [:]
        /// Readers waiting for their connection to fall under the limit, one per connection.
        var blocked: [ConnectionID: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())
    /// The most bytes one connection may have waiting before its reader waits.
    let limit: Int

    /// A queue that lets each connection have `limit` bytes waiting (at least one frame's worth).
    init(limit: Int = NetworkConfiguration().assetQueueBytes) {
        self.limit = max(limit, Self.minimumFrameCost)
    }

    static func cost(_ frame: Frame) -> Int { max(frame.payload.count, minimumFrameCost) }

    /// The cost of `connection`'s frames waiting now (for tests and status).
    func queuedBytes(of connection: ConnectionID) -> Int { state.withLock { $0.queued[connection] ?? 0 } }

    /// Adds `frame` (dropped once the queue is finished) and wakes the lane if it waits. True when
    /// `connection` now has more than ``limit`` waiting: its reader must stop reading until
    /// ``whenRoom(for:_:)`` calls back. Never waits (a connection's event loop calls it).
    func offer(_ frame: Frame, from connection: ConnectionID) -> Bool {
        let (lane, over) = state.withLock { s -> (CheckedContinuation<[Item]?, Never>?, Bool) in
            guard !s.finished else { return (nil, false) }
            // A frame handed straight to a waiting lane is taken at once: it never counts.
            if let w = s.waiter {
                s.waiter = nil
                return (w, false)
            }
            s.items.append((connection, frame))
            let queued = s.queued[connection, default: 0] &+ Self.cost(frame)
            s.queued[connection] = queued
            return (nil, queued > limit)
        }
        lane?.resume(returning: [(connection, frame)])
        return over
    }

    /// Calls `resume` once `connection` has at most ``limit`` waiting, the queue is finished, or
    /// ``release(_:)`` lets the connection go — at once (on this thread) if that is so already,
    /// else on the thread that made room. One waiter per connection: a second replaces the first,
    /// which is called.
    func whenRoom(for connection: ConnectionID, _ resume: @escaping @Sendable () -> Void) {
        let (now, replaced) = state.withLock { s -> (Bool, (@Sendable () -> Void)?) in
            if s.finished || s.queued[connection, default: 0] <= limit { return (true, nil) }
            let replaced = s.blocked[connection]
            s.blocked[connection] = resume
            return (false, replaced)
        }
        replaced?()
        if now { resume() }
    }

    /// Lets `connection`'s waiting reader go, if any (the connection closed, or its reader was
    /// cancelled); its frames stay queued.
    func release(_ connection: ConnectionID) {
        state.withLock { $0.blocked.removeValue(forKey: connection) }?()
    }

    /// ``offer(_:from:)``, then, if `connection` is over ``limit``, waits until the lane has taken
    /// enough, the queue is finished or the calling task is cancelled (for readers in a task).
    func push(_ frame: Frame, from connection: ConnectionID) async {
        guard offer(frame, from: connection) else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                if Task.isCancelled { return c.resume() }
                whenRoom(for: connection) { c.resume() }
                // Cancelled between the check and the registration: onCancel found nothing to release.
                if Task.isCancelled { release(connection) }
            }
        } onCancel: {
            release(connection)
        }
    }

    /// Every frame waiting, in arrival order, waiting for one when there is none; nil once the
    /// queue is finished and empty, or when the calling task is cancelled. One taker at a time.
    func take() async -> [Item]? {
        let (ready, readers) = state.withLock { takeAll(&$0) }
        readers.forEach { $0() }
        if let ready { return ready }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<[Item]?, Never>) in
                let (now, readers) = state.withLock { s -> ([Item]??, [@Sendable () -> Void]) in
                    let (ready, readers) = takeAll(&s)
                    if let ready { return (.some(ready), readers) }
                    if Task.isCancelled { return (.some(nil), []) }
                    s.waiter = c
                    return (nil, [])
                }
                readers.forEach { $0() }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Takes every frame waiting: `.some(items)` when there are any, `.some(nil)` when the queue
    /// is finished and empty, nil when the taker must wait; and the readers to wake.
    private func takeAll(_ s: inout State) -> ([Item]??, [@Sendable () -> Void]) {
        guard !s.items.isEmpty else { return (s.finished ? .some(nil) : nil, []) }
        let items = s.items
        s.items = []
        return (.some(items), release(items, in: &s))
    }

    /// Takes `items`' cost off their connections; returns the readers now under the limit.
    private func release(_ items: [Item], in s: inout State) -> [@Sendable () -> Void] {
        var touched = Set<ConnectionID>()
        for (connection, frame) in items {
            let left = (s.queued[connection] ?? 0) &- Self.cost(frame)
            s.queued[connection] = left > 0 ? left : nil
            touched.insert(connection)
        }
        return touched.compactMap { (s.queued[$0] ?? 0) <= limit ? s.blocked.removeValue(forKey: $0) : nil }
    }

    /// Ends the queue: frames still waiting are taken, then ``take()`` returns nil; a waiting
    /// taker returns nil now, and waiting readers go on.
    func finish() {
        let (lane, readers) = state.withLock { s -> (CheckedContinuation<[Item]?, Never>?, [@Sendable () -> Void]) in
            s.finished = true
            defer {
                s.waiter = nil
                s.blocked = [:]
            }
            return (s.waiter, Array(s.blocked.values))
        }
        lane?.resume(returning: nil)
        readers.forEach { $0() }
    }
}
