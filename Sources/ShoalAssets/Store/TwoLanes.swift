// TwoLanes: the asset lane's own threads, an executor on them, and running a batch of blocking
// work on two threads at once.

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

/// Threads for a transfer's asset work — hashing, chunk reads and writes, fsyncs — apart from the
/// cooperative pool that applies record changes, so that blocking work never occupies the threads
/// records need (a transfer must not delay record changes). They are named
/// `shoal-assets` and run at normal priority: lowering them (`SCHED_IDLE` and the idle I/O
/// class) bought about 0.7 ms on the median record change during a transfer, and starved
/// transfers whenever other programs kept the cores busy (Spec/assets.md §5.1 has the
/// measurements). Instead they give way (``giveWay()``) after every job and every item of a
/// two-lane batch, so a thread woken for record work waits behind at most one chunk's hashing or
/// I/O on them.
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
            DispatchQueue.global(qos: .utility).async(execute: work)
            return
        }
        queue.withLock { $0.append(work) }
        available.signal()
    }

    /// A thread's loop: name and mark the thread, then run work forever.
    fileprivate func serve() {
        shoal_thread_set_name("shoal-assets")
        shoal_thread_mark_lane()
        while true {
            available.wait()
            let work = queue.withLock { q -> (@Sendable () -> Void)? in q.isEmpty ? nil : q.removeFirst() }
            work?()
            Self.giveWay()
        }
    }

    /// How many times the lane's threads have given way (for tests).
    static let givenWay = Atomic<Int>(0)

    /// Lets a thread that is waiting for this CPU run now, if one is (`sched_yield`; it returns at
    /// once when none is). Called by the lane's threads between chunks.
    ///
    /// Without it, a thread woken while both cores run lane work — the event loop that reads a
    /// record frame, the task that applies it — waited for the lane thread's time slice to end.
    /// Linux's scheduler (EEVDF, with run-to-parity) lets the running thread finish its slice, and
    /// with a tick every 4 ms (`HZ=250`) that end is seen at the next tick: `perf sched` showed
    /// the cooperative pool and the event loops waiting 1–4 ms behind the lane threads a hundred
    /// times and more per transfer. Giving way at every chunk bounds that wait by one chunk's
    /// work, tens of microseconds, at the same transfer speed and CPU time; it adds context
    /// switches (about 5 per chunk received instead of 3), which a VM short of host CPU pays for
    /// in stolen time (Spec/assets.md §5.1).
    static func giveWay() {
        sched_yield()
        givenWay.add(1, ordering: .relaxed)
    }
}

/// Starts threads that wait for the pool to exist, then serve it.
private final class ThreadBody: Sendable {
    let pool = Mutex<BackgroundThreads?>(nil)

    /// Starts one detached thread; false if the system refused.
    func start() -> Bool {
        let context = Unmanaged.passRetained(self).toOpaque()
        #if canImport(Darwin)
            var thread: pthread_t?
        #else
            var thread = pthread_t()
        #endif
        let status = pthread_create(
            &thread, nil,
            { raw in
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
