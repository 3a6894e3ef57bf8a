// LaneExecutor: a node's asset lanes run on a serial queue of their own, off Swift's cooperative
// pool, so a record change never waits for a pool thread that asset work holds.

import Dispatch

/// Runs the jobs of tasks that prefer it (`Task(executorPreference:)`) on a serial Dispatch queue,
/// one per ``NetworkNode``, for its asset lanes (Spec/replication.md §3.7).
///
/// A default actor called from such a task runs there too (SE-0417): the lanes' calls into
/// `SyncNode` — decoding a batch of received chunk frames, encoding a run of served ones — and
/// into the node itself no longer occupy the cooperative pool's threads, one per core, which
/// every record change needs several times on its way (the engine, `SyncNode`, the store, the
/// application's notification). A job on the pool is never preempted by another, so a record
/// job used to wait for a lane's job to finish; the queue's thread is preempted by the kernel
/// like any other. Heavier work (hashing, chunk reads and writes) already runs on the asset
/// store's own threads.
final class LaneExecutor: TaskExecutor {
    /// Present on the queue's thread while it runs a job (for tests).
    static let key = DispatchSpecificKey<Bool>()

    private let queue: DispatchQueue

    /// A new serial queue, labelled `label`.
    init(label: String = "shoal.net.asset-lanes") {
        queue = DispatchQueue(label: label, qos: .utility)
        queue.setSpecific(key: Self.key, value: true)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// Whether the caller runs on a lane queue's thread.
    static var isCurrent: Bool { DispatchQueue.getSpecific(key: key) ?? false }
}
