// TwoLanes: running a batch of blocking work on two threads at once, the caller's and one of the
// lane threads (ShoalLanes' ``BackgroundThreads``).

import CShoalThread
import ShoalLanes
import Dispatch
import Synchronization

/// One half of a two-lane batch: given to a background thread, or taken back by the caller if no
/// thread has started it by the time the caller is done with its own half — so callers that are
/// themselves background threads never wait for a thread that is waiting for them.
private final class LaneJob: Sendable {
    private let body: Mutex<(@Sendable () -> Void)?>
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Void) { self.body = Mutex(body) }

    /// Runs the half unless it was taken; signals once it has run. False if taken already.
    @discardableResult
    func runIfUntaken() -> Bool {
        guard take() else { return false }
        done.signal()
        return true
    }

    /// Takes the body out (so nothing holds it afterwards) and runs it; false if it was gone.
    private func take() -> Bool {
        guard
            let b = body.withLock({ b -> (@Sendable () -> Void)? in
                defer { b = nil }; return b
            })
        else { return false }
        b()
        return true
    }

    /// Returns once the half has run, running it here if nobody started it.
    func finish() {
        if !runIfUntaken() { done.wait() }
    }
}

/// Runs `body(index, lane)` for every index in `0..<count`, lane 0 taking the even indices on
/// this thread and lane 1 the odd ones on a second thread, and returns the results in index order
/// once both are done. For batches of hashing, file creations and fsyncs: two at a time use both
/// cores.
///
/// Called on a ``BackgroundThreads`` thread (a transfer), lane 1 goes to the other background
/// thread, or runs here after lane 0 if none was free — so two callers on the two threads never
/// wait for each other. Called elsewhere (a local import, in the application's task), lane 1
/// runs on a Dispatch worker, leaving the two background threads to transfers.
func inTwoLanes<T: Sendable>(_ count: Int, _ body: @Sendable (_ index: Int, _ lane: Int) -> T) -> [T] {
    guard count > 1 else { return (0..<count).map { body($0, 0) } }
    let results = LaneSlots(UnsafeMutableBufferPointer<T>.allocate(capacity: count))
    defer { results.slots.deallocate() }
    withoutActuallyEscaping(body) { body in
        // Each lane initializes only its own indices.
        @Sendable func lane(_ l: Int) {
            let onLaneThread = shoal_thread_is_lane() != 0
            for i in stride(from: l, to: count, by: 2) {
                (results.slots.baseAddress.unsafelyUnwrapped + i).initialize(to: body(i, l))
                if onLaneThread { BackgroundThreads.giveWay() }
            }
        }
        guard shoal_thread_is_lane() != 0 else {
            DispatchQueue.concurrentPerform(iterations: 2, execute: lane)
            return
        }
        let other = LaneJob { lane(1) }
        BackgroundThreads.shared.submit { other.runIfUntaken() }
        lane(0)
        other.finish()
    }
    let out = Array(results.slots)
    _ = results.slots.deinitialize()
    return out
}

/// Values that two lanes share without synchronization because each touches disjoint parts
/// (result slots by index; a per-lane compressor; content bytes only read). The caller keeps
/// them alive and unmodified until ``inTwoLanes(_:_:)`` returns.
struct LaneSlots<Value>: @unchecked Sendable {
    let slots: Value
    init(_ slots: Value) { self.slots = slots }
}
