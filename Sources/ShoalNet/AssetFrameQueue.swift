// AssetFrameQueue: the frames waiting for an asset lane, handed over in batches — everything that
// arrived while the lane was busy at once, so a lane that falls behind catches up with one hop per
// batch instead of one per frame.

import ShoalSync
import ShoalWire
import Synchronization

/// Frames for one asset lane, in arrival order. Readers push one frame at a time; the lane takes
/// every frame waiting (``take()``), or waits for the next when there is none. Like the
/// `AsyncStream` it replaces it never makes a reader wait: the requester's window bounds what a
/// well-behaved peer has in flight, and a frame nobody asked for closes its connection when the
/// lane reaches it.
final class AssetFrameQueue: Sendable {
    /// One frame and the connection it came on.
    typealias Item = (connection: ConnectionID, frame: Frame)

    private struct State {
        var items: [Item] = []
        var waiter: CheckedContinuation<[Item]?, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    init() {}

    /// Adds `frame` (dropped once the queue is finished) and wakes the lane if it waits.
    func push(_ frame: Frame, from connection: ConnectionID) {
        let waiter = state.withLock { s -> CheckedContinuation<[Item]?, Never>? in
            guard !s.finished else { return nil }
            guard let w = s.waiter else {
                s.items.append((connection, frame))
                return nil
            }
            s.waiter = nil
            return w
        }
        waiter?.resume(returning: [(connection, frame)])
    }

    /// Every frame waiting, in arrival order, waiting for one when there is none; nil once the
    /// queue is finished and empty, or when the calling task is cancelled. One taker at a time.
    func take() async -> [Item]? {
        if let ready = state.withLock({ s -> [Item]?? in
            if !s.items.isEmpty {
                defer { s.items = [] }
                return .some(s.items)
            }
            return s.finished ? .some(nil) : nil
        }) {
            return ready
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<[Item]?, Never>) in
                let now = state.withLock { s -> [Item]?? in
                    if !s.items.isEmpty {
                        defer { s.items = [] }
                        return .some(s.items)
                    }
                    if s.finished || Task.isCancelled { return .some(nil) }
                    s.waiter = c
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Ends the queue: frames still waiting are taken, then ``take()`` returns nil; a waiting
    /// taker returns nil now.
    func finish() {
        let waiter = state.withLock { s -> CheckedContinuation<[Item]?, Never>? in
            s.finished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }
}
