// BackgroundReader: long read-only queries on a connection and a thread of their own.

import CSQLite
import Dispatch

/// Runs long read-only queries on a second connection to the store's database, on a serial queue
/// of its own. WAL lets it read a snapshot while the store's connection writes, and the store's
/// actor serves other calls meanwhile. Today it counts a zone's remaining changes for a catch-up's
/// progress (≈ 100 ms per million records, which held the first batch of an initial sync back).
///
/// The connection opens at the first query; `handle` and `closed` are touched on `queue` only.
final class BackgroundReader: @unchecked Sendable {
    private let path: String
    /// The VFS the store's connection opened through (nil: the default).
    private let vfs: String?
    private let queue = DispatchQueue(label: "shoal.store.reader", qos: .utility)
    private var handle: OpaquePointer?
    private var closed = false

    init(path: String, vfs: String?) {
        self.path = path
        self.vfs = vfs
    }

    /// Rows of the zone with row ID `zone` whose change sequence is above `after`, as of a snapshot
    /// taken when the query starts; nil when the database cannot be read or the reader is closed.
    func countChanges(zone: Int64, after: UInt64) async -> Int? {
        await withCheckedContinuation { done in
            queue.async { done.resume(returning: self.count(zone, after)) }
        }
    }

    private func count(_ zone: Int64, _ after: UInt64) -> Int? {
        guard !closed else { return nil }
        if handle == nil {
            var h: OpaquePointer? = nil
            guard sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, vfs) == SQLITE_OK, let h,
                sqlite3_exec(h, "PRAGMA query_only=1", nil, nil, nil) == SQLITE_OK
            else {
                sqlite3_close_v2(h)
                return nil
            }
            sqlite3_busy_timeout(h, 5_000)
            handle = h
        }
        var stmt: OpaquePointer? = nil
        guard
            sqlite3_prepare_v2(handle, "SELECT COUNT(*) FROM records WHERE zone = ? AND seq > ?", -1, &stmt, nil)
                == SQLITE_OK,
            let stmt
        else { return nil }
        defer { sqlite3_finalize(stmt) }
        sqlite3_bind_int64(stmt, 1, zone)
        sqlite3_bind_int64(stmt, 2, Int64(bitPattern: after))
        guard sqlite3_step(stmt) == SQLITE_ROW else { return nil }
        return Int(sqlite3_column_int64(stmt, 0))
    }

    /// Closes the connection; later queries return nil.
    func close() {
        queue.sync {
            closed = true
            if let h = handle { sqlite3_close_v2(h) }
            handle = nil
        }
    }
}
