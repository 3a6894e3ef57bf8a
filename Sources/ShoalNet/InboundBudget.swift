// InboundBudget: the bytes of one connection's frames read and not yet handled by the engine,
// and the wait that keeps them under a bound (Spec/replication.md §2).

import Synchronization

/// Counts the frames a connection's reader has passed to the engine and the engine has not yet
/// handled, and makes the reader wait while they are over ``limit``.
///
/// One engine task handles every connection's frames in order, from one queue. A peer that
/// sends faster than the engine applies — a flood of `changes` batches ignoring the window, or a
/// legitimate burst on a slow disk — would otherwise grow that queue without end: 48 batches of
/// 1 MiB sent at once waited there whole (`InboundBudgetTests`). Now the reader takes a frame's
/// cost before decoding it and passing it on, and waits while the connection already has
/// ``limit`` bytes with the engine; the engine gives the cost back once it has handled the frame.
/// While the reader waits, TCP slows the peer. One frame is always let through when none is
/// held, so a frame larger than the limit (up to the payload limit) still arrives.
///
/// The engine never waits for a reader, so a waiting reader always resumes: as the engine works
/// through what this connection has queued, or when ``close()`` ends the wait at shutdown.
final class InboundBudget: Sendable {
    private struct State {
        var held = 0
        var peak = 0
        /// The reader waiting for room, with the cost it takes once resumed.
        var waiter: (CheckedContinuation<Void, Never>, Int)?
        var closed = false

        /// Takes `cost` if there is room (or nothing is held, or the budget is closed).
        mutating func take(_ cost: Int, limit: Int) -> Bool {
            guard closed || held == 0 || held <= limit &- cost else { return false }
            held &+= cost
            peak = max(peak, held)
            return true
        }
    }

    private let state = Mutex(State())
    /// Above this many held bytes the reader waits (``NetworkConfiguration/inboundBytes``).
    let limit: Int

    init(limit: Int) { self.limit = max(1, limit) }

    /// The bytes with the engine now.
    var heldBytes: Int { state.withLock { $0.held } }
    /// The most bytes ever with the engine at once.
    var peakBytes: Int { state.withLock { $0.peak } }

    /// Takes `cost`, first waiting while the connection's frames with the engine are at the
    /// limit. Only the connection's reader calls it, one frame at a time. Cancellation ends the
    /// wait (the cost is then taken anyway, and given back as for any frame).
    func take(_ cost: Int) async {
        if state.withLock({ $0.take(cost, limit: limit) }) { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.take(cost, limit: limit) { return true }
                    s.waiter = (c, cost)
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            close()
        }
    }

    /// Gives back the cost of a frame the engine has handled, and resumes the reader if that
    /// made room for the frame it waits to pass on.
    func give(_ cost: Int) {
        let resumed = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.held = max(0, s.held &- cost)
            guard let (c, need) = s.waiter, s.take(need, limit: limit) else { return nil }
            s.waiter = nil
            return c
        }
        resumed?.resume()
    }

    /// Ends any wait, now and later: the connection is going, and what its reader still passes
    /// on is never handled.
    func close() {
        let resumed = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.closed = true
            guard let (c, need) = s.waiter else { return nil }
            s.waiter = nil
            s.held &+= need
            return c
        }
        resumed?.resume()
    }
}
