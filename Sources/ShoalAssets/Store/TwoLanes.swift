// TwoLanes: the asset lane's background threads (lowest CPU and I/O priority), an executor on
// them, and running a batch of blocking work on two threads at once.

import CShoalThread
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Threads for asset work — hashing, chunk reads and writes, fsyncs — that yield to everything
/// else: on Linux each runs with the `SCHED_IDLE` policy and the idle I/O class
/// (`shoal_thread_lower_priority`), so the threads that apply record changes get a core, and
/// their disk writes are dispatched, first. A large transfer then takes what records leave
/// (issue #8: it must not delay record changes).
///
/// The threads are created once per process and live as long as it does, like Dispatch's.
final class BackgroundThreads: Sendable {
    /// The process's pool: two threads (the work is two lanes at most per caller; more callers
    /// queue, and a caller waiting for its own lane takes it back, ``inTwoLanes(_:_:)``).
    static let shared = BackgroundThreads(count: 2)

    private let queue = Mutex<[@Sendable () -> Void]>([])
    private let available = DispatchSemaphore(value: 0)
    /// Threads actually started (creation can fail; with none, work goes to Dispatch).
    private let started: Int
    /// What ``shoal_thread_lower_priority()`` achieved on the first thread (1 CPU, 2 I/O).
    let lowered = Atomic<Int>(-1)

    init(count: Int) {
        var n = 0
        let box = ThreadBody()
        for _ in 0..<count where box.start() { n += 1 }
        started = n
        box.pool.withLock { $0 = self }
    }

    /// Runs `work` on one of the threads (in submission order, as threads free up).
    func submit(_ work: @escaping @Sendable () -> Void) {
        guard started > 0 else {
            DispatchQueue.global(qos: .background).async(execute: work)
            return
        }
        queue.withLock { $0.append(work) }
        available.signal()
    }

    /// A thread's loop: lower its priority once, then run work forever.
    fileprivate func serve() {
        shoal_thread_set_name("shoal-assets")
        let achieved = Int(shoal_thread_lower_priority())
        _ = lowered.compareExchange(expected: -1, desired: achieved, ordering: .relaxed)
        while true {
            available.wait()
            let work = queue.withLock { q -> (@Sendable () -> Void)? in q.isEmpty ? nil : q.removeFirst() }
            work?()
        }
    }
}

/// Starts threads that wait for the pool to exist, then serve it.
private final class ThreadBody: Sendable {
    let pool = Mutex<BackgroundThreads?>(nil)
    let ready = DispatchSemaphore(value: 0)

    /// Starts one detached thread; false if the system refused.
    func start() -> Bool {
        let context = Unmanaged.passRetained(self).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        let status = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            let body = Unmanaged<ThreadBody>.fromOpaque(raw).takeRetainedValue()
            body.run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(context).release()
            return false
        }
        #if canImport(Darwin)
        if let thread { pthread_detach(thread) }
        #else
        pthread_detach(thread)
        #endif
        return true
    }

    private func run() {
        // The pool is set right after its threads are created.
        while true {
            if let pool = pool.withLock({ $0 }) {
                pool.serve()
                return
            }
            usleep(100)
        }
    }
}

/// The asset lane's executor: tasks that prefer it (`withTaskExecutorPreference`) run their
/// synchronous stretches — hashing, file I/O — on ``BackgroundThreads``, off the cooperative pool
/// that applies records.
package final class AssetLaneExecutor: TaskExecutor {
    /// An executor on the process's background threads.
    package init() {}

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        BackgroundThreads.shared.submit { job.runSynchronously(on: executor) }
    }
}

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
        guard let b = body.withLock({ b -> (@Sendable () -> Void)? in defer { b = nil }; return b }) else { return false }
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
/// The second thread has the caller's priority. Called on a ``BackgroundThreads`` thread (the
/// asset lane), lane 1 goes to the other background thread, or runs here after lane 0 if none
/// was free. Called elsewhere (a local import, at the application's priority), lane 1 runs on a
/// Dispatch worker: a normal thread never blocks waiting for a lowered one, which may not get a
/// core while the machine is busy.
func inTwoLanes<T: Sendable>(_ count: Int, _ body: @Sendable (_ index: Int, _ lane: Int) -> T) -> [T] {
    guard count > 1 else { return (0..<count).map { body($0, 0) } }
    let results = LaneSlots(UnsafeMutableBufferPointer<T>.allocate(capacity: count))
    defer { results.slots.deallocate() }
    withoutActuallyEscaping(body) { body in
        // Each lane initializes only its own indices.
        @Sendable func lane(_ l: Int) {
            for i in stride(from: l, to: count, by: 2) { (results.slots.baseAddress.unsafelyUnwrapped + i).initialize(to: body(i, l)) }
        }
        guard shoal_thread_is_lowered() != 0 else {
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
