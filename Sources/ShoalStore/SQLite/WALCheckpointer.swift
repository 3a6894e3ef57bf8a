// WALCheckpointer: copies the write-ahead log back into the database on a thread of its own,
// so no commit waits for a checkpoint's fsyncs.

import CSQLite
import Dispatch
import Synchronization

/// Runs the store's WAL checkpoints on its own serial queue with its own connection.
///
/// SQLite's automatic checkpoint runs inside the commit that takes the log past 1,000 pages:
/// that commit then copies the log into the database and fsyncs both, and the caller waits —
/// about 10 ms on a VM disk, every hundred or so small commits (the latency tail replication saw,
/// `shoal-bench sync`, case `change-latency`). Here the connection's WAL hook, called after each
/// commit with the log's size, only signals this object past ``threshold`` pages; a `PASSIVE`
/// checkpoint on the other connection then runs beside the writer (WAL mode lets a checkpoint,
/// readers and one writer proceed together), and the next commit after a complete one starts the
/// log over. Should the log still grow past ``hardLimit`` pages (checkpoints falling behind a bulk
/// load), the committing connection checkpoints itself, as SQLite would. Durability is unchanged:
/// it comes from the commit's own sync of the log.
final class WALCheckpointer: @unchecked Sendable {
    /// Log pages after which a background checkpoint is requested.
    let threshold: Int32
    /// Log pages after which the committing connection checkpoints itself.
    let hardLimit: Int32
    private let path: String
    /// The VFS the store's connection opened through (nil: the default).
    private let vfs: String?
    private let queue = DispatchQueue(label: "shoal.store.checkpoint")
    /// Whether a checkpoint is queued or running, and whether the checkpointer is closed.
    private let state = Mutex<(scheduled: Bool, closed: Bool, completed: Int)>((false, false, 0))
    /// The checkpointing connection: opened, used and closed on `queue` only.
    private var handle: OpaquePointer?

    init(path: String, vfs: String?, threshold: Int32, hardLimit: Int32) {
        self.path = path
        self.vfs = vfs
        self.threshold = max(1, threshold)
        self.hardLimit = max(self.threshold, hardLimit)
    }

    /// Background checkpoints so far that copied frames into the database (tests check the log
    /// is kept short this way, not only by the committer's hard limit).
    var completedCheckpoints: Int { state.withLock { $0.completed } }

    /// Installs the hook on `connection`, replacing SQLite's automatic checkpoints.
    func install(on connection: OpaquePointer) {
        sqlite3_wal_hook(
            connection,
            { context, db, name, pages in
                guard let context else { return SQLITE_OK }
                let me = Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
                if pages >= me.hardLimit {
                    // Falling behind: checkpoint here, as SQLite's automatic checkpoint would.
                    _ = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else if pages >= me.threshold {
                    me.schedule()
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Removes the hook from `connection` and waits for a running checkpoint to finish.
    func close(removingHookFrom connection: OpaquePointer?) {
        if let connection { sqlite3_wal_hook(connection, nil, nil) }
        state.withLock { $0.closed = true }
        queue.sync {
            if let h = handle { sqlite3_close_v2(h) }
            handle = nil
        }
    }

    private func schedule() {
        let start = state.withLock { s -> Bool in
            guard !s.scheduled, !s.closed else { return false }
            s.scheduled = true
            return true
        }
        if start { queue.async { self.run() } }
    }

    private func run() {
        defer { state.withLock { $0.scheduled = false } }
        guard !state.withLock({ $0.closed }) else { return }
        if handle == nil {
            var h: OpaquePointer? = nil
            // A new connection learns the database is in WAL mode only when it first reads it;
            // until then a checkpoint through it is a successful no-op (SQLite reports a log of
            // -1 frames). The pragma reads the header and opens the log.
            guard sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, vfs) == SQLITE_OK, let h,
                sqlite3_exec(h, "PRAGMA journal_mode=WAL", nil, nil, nil) == SQLITE_OK
            else {
                sqlite3_close_v2(h)
                return  // the committing connection's hard limit still bounds the log
            }
            handle = h
        }
        var logFrames: Int32 = 0, copiedFrames: Int32 = 0
        if sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copiedFrames) == SQLITE_OK,
            copiedFrames > 0
        {
            state.withLock { $0.completed += 1 }
        }
    }
}
