// CommandThread: the thread a control command runs on, so waiting for its client blocks no shared thread.

import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import Shoal
#if canImport(Glibc)
    import Glibc
#endif

/// The thread one command runs on inside the daemon (its task's executor preference), so that
/// the command waiting for its client (``ControlOutput``) blocks this thread and none of Swift's
/// cooperative pool, which the node's replication shares. ``stop()`` once the task has finished;
/// the thread runs what is queued, then ends.
final class CommandThread: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs = [UnownedJob]()
    private var next = 0
    private var stopped = false
    /// Set once, before the thread starts.
    private var thread: Thread?

    init() {
        // The thread holds its executor only while it runs (``work()``).
        let thread = Thread { [weak self] in self?.work() }
        thread.name = "shoal-control"
        self.thread = thread
        thread.start()
    }

    /// Whether the caller runs on this thread.
    var isCurrent: Bool { Thread.current === thread }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    /// Ends the thread once its queue is empty.
    func stop() {
        condition.withLock {
            stopped = true
            condition.signal()
        }
    }

    private func work() {
        while true {
            condition.lock()
            while next == jobs.count && !stopped { condition.wait() }
            if next == jobs.count {
                condition.unlock()
                return
            }
            let job = jobs[next]
            next += 1
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
