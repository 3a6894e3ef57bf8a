// LaneThreads: the process's asset-lane threads and the one executor on them, which the network's
// asset lanes and the asset store's blocking work share, off Swift's cooperative pool.

import CShoalThread
import Dispatch
package import Synchronization
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
package final class BackgroundThreads: Sendable {
    /// The process's pool: two threads (the work is two lanes at most per caller; more callers
    /// queue, and a caller waiting for its own lane takes it back, ``inTwoLanes(_:_:)``).
    package static let shared = BackgroundThreads(count: 2)

    private let queue = Mutex(JobQueue())
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
    package func submit(_ work: @escaping @Sendable () -> Void) {
        guard started > 0 else {
            DispatchQueue.global(qos: .utility).async(execute: work)
            return
        }
        queue.withLock { $0.push(work) }
        available.signal()
    }

    /// A thread's loop: name and mark the thread, then run work forever.
    fileprivate func serve() {
        shoal_thread_set_name("shoal-assets")
        shoal_thread_mark_lane()
        while true {
            available.wait()
            let work = queue.withLock { $0.pop() }
            work?()
            Self.giveWay()
        }
    }

    /// How many times the lane's threads have given way (for tests).
    package static let givenWay = Atomic<Int>(0)

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
    package static func giveWay() {
        sched_yield()
        givenWay.add(1, ordering: .relaxed)
    }
}

/// The jobs waiting for a lane thread, first in first out, each taken in constant time: a
/// transfer queues a job per chunk, and taking the first of an array moves all the others.
package struct JobQueue {
    /// A job as the threads run it.
    package typealias Job = @Sendable () -> Void
    /// Jobs taken are nil until the taken prefix is dropped, so that what they hold goes at once.
    private var jobs: [Job?] = []
    /// The index of the first job not taken.
    private var head = 0

    package init() {}

    /// How many jobs wait.
    package var count: Int { jobs.count &- head }

    /// Adds `job` after the others.
    package mutating func push(_ job: @escaping Job) { jobs.append(job) }

    /// Takes the job that has waited longest; nil when none waits.
    package mutating func pop() -> Job? {
        guard head < jobs.count else { return nil }
        let job = jobs[head]
        jobs[head] = nil
        head &+= 1
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head &* 2 >= jobs.count {
            // Drops the taken prefix once it is most of the array: each job moves at most once.
            jobs.removeFirst(head)
            head = 0
        }
        return job
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

/// The lanes' executor, the one every asset lane uses: tasks that prefer it
/// (`Task(executorPreference:)`, `withTaskExecutorPreference`) run their jobs on
/// ``BackgroundThreads``, off the cooperative pool that applies records — the network's asset
/// lanes (receiving chunks, serving requests) and the default actors they call (SE-0417), and
/// the asset store's hashing and file I/O they reach.
package final class LaneExecutor: TaskExecutor {
    /// An executor on the process's lane threads.
    package init() {}

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        BackgroundThreads.shared.submit { job.runSynchronously(on: executor) }
    }

    /// Whether the caller runs on one of the lane threads.
    package static var isCurrent: Bool { shoal_thread_is_lane() != 0 }
}
