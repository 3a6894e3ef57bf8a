// SQLiteDatabase: one SQLite connection through the C API, with cached prepared statements.

import CSQLite

/// One SQLite connection. Not thread-safe: the ``Store`` actor owns it and is its only user.
final class SQLiteDatabase {
    private(set) var handle: OpaquePointer?
    private var cache: [String: SQLiteStatement] = [:]
    /// Statements of the hot paths, keyed by the address of their literal SQL: no hashing of the
    /// SQL text per use.
    private var literalCache: [UInt: SQLiteStatement] = [:]
    /// Statements prepared for a holder that keeps them (``prepare(_:)``), finalized on close.
    private var held: [SQLiteStatement] = []
    let path: String
    /// The background checkpointer, once ``checkpointInBackground(threshold:hardLimit:)`` ran.
    private(set) var checkpointer: WALCheckpointer?
    /// Long read-only queries, on a connection and a thread of their own.
    let reader: BackgroundReader
    /// `sqlite3_total_changes64` when the open transaction began.
    private var changesAtBegin: Int64 = 0

    /// The SQLite VFS every connection to this database opens through; nil: the default one.
    let vfs: String?

    /// Opens (creating if needed) the database at `path`, through the VFS named `vfs` (nil: the
    /// default), as the checkpointer's and the reader's connections will.
    init(path: String, busyTimeoutMilliseconds: Int32, vfs: String? = nil) throws(ShoalError) {
        self.path = path
        self.vfs = vfs
        reader = BackgroundReader(path: path, vfs: vfs)
        var h: OpaquePointer? = nil
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &h, flags, vfs)
        guard rc == SQLITE_OK, let h else {
            let msg = h.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(h)
            throw .internalError(
                "cannot open the store database at \(path): \(msg) (SQLite code \(rc)); check the directory exists and is writable"
            )
        }
        handle = h
        sqlite3_busy_timeout(h, busyTimeoutMilliseconds)
        sqlite3_extended_result_codes(h, 1)
    }

    deinit { close() }

    /// Moves checkpoints off the commit path (``WALCheckpointer``); call once, after WAL mode is on.
    func checkpointInBackground(threshold: Int32, hardLimit: Int32) {
        guard let h = handle, checkpointer == nil else { return }
        let c = WALCheckpointer(path: path, vfs: vfs, threshold: threshold, hardLimit: hardLimit)
        c.install(on: h)
        checkpointer = c
    }

    /// Finalizes every statement and closes the connection (the checkpointer's first, so this
    /// one, the last, checkpoints and removes the log as SQLite does on close).
    func close() {
        reader.close()
        checkpointer?.close(removingHookFrom: handle)
        checkpointer = nil
        for s in cache.values { s.finalize() }
        for s in literalCache.values { s.finalize() }
        for s in held { s.finalize() }
        cache = [:]
        literalCache = [:]
        held = []
        if let h = handle { sqlite3_close_v2(h) }
        handle = nil
    }

    /// The statement for `sql`, prepared once and reset for reuse.
    func statement(_ sql: String) throws(ShoalError) -> SQLiteStatement {
        if let s = cache[sql] {
            s.reset()
            return s
        }
        var stmt: OpaquePointer? = nil
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, "preparing \(sql)") }
        let s = SQLiteStatement(stmt, database: self)
        cache[sql] = s
        return s
    }

    /// The statement for the literal `sql`, prepared once and reset for reuse; looked up by the
    /// literal's address, so hot paths do not hash their SQL on every call.
    func cached(_ sql: StaticString) throws(ShoalError) -> SQLiteStatement {
        let key = UInt(bitPattern: sql.utf8Start)
        if let s = literalCache[key] {
            s.reset()
            return s
        }
        var stmt: OpaquePointer? = nil
        let rc = sqlite3_prepare_v3(
            handle, UnsafeRawPointer(sql.utf8Start).assumingMemoryBound(to: CChar.self), Int32(sql.utf8CodeUnitCount),
            UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, "preparing \(sql)") }
        let s = SQLiteStatement(stmt, database: self)
        literalCache[key] = s
        return s
    }

    /// A statement for the caller to hold (no lookup per use), finalized when the connection closes.
    func prepare(_ sql: String) throws(ShoalError) -> SQLiteStatement {
        var stmt: OpaquePointer? = nil
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, "preparing \(sql.prefix(80))") }
        let s = SQLiteStatement(stmt, database: self)
        held.append(s)
        return s
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(ShoalError) {
        var err: UnsafeMutablePointer<CChar>? = nil
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let msg = err.map { String(cString: $0) } ?? ""
            sqlite3_free(err)
            throw error(rc, "running \(sql.prefix(80)): \(msg)")
        }
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back if it throws.
    func transaction<T>(_ body: () throws(ShoalError) -> T) throws(ShoalError) -> T {
        try execute("BEGIN IMMEDIATE")
        changesAtBegin = sqlite3_total_changes64(handle)
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Whether the open transaction (``transaction(_:)``) has inserted, updated or deleted no
    /// row yet: undoing what it does next is then rolling it back and beginning it again
    /// (``restartTransaction()``), with no savepoint.
    var transactionIsUnchanged: Bool { sqlite3_total_changes64(handle) == changesAtBegin }

    /// Rolls back the open transaction and begins it again (`BEGIN IMMEDIATE`), for a caller
    /// undoing everything the transaction did. Like the first `BEGIN`, the second may fail with
    /// `requestRateLimited` when another process holds the database's write lock.
    func restartTransaction() throws(ShoalError) {
        try execute("ROLLBACK")
        try execute("BEGIN IMMEDIATE")
        changesAtBegin = sqlite3_total_changes64(handle)
    }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the last row inserted on this connection.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The error for SQLite result `rc`: busy and locked become `requestRateLimited`.
    func error(_ rc: Int32, _ doing: String) -> ShoalError {
        let msg = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "no connection"
        let primary = rc & 0xFF
        if primary == SQLITE_BUSY || primary == SQLITE_LOCKED {
            return .requestRateLimited(
                retryAfter: .milliseconds(100),
                "the store database \(path) is locked by another connection (\(msg)) while \(doing)")
        }
        if primary == SQLITE_FULL {
            // Nothing of the statement's transaction is kept (the caller rolls it back).
            return .quotaExceeded(
                "the disk holding the store database \(path) is full (\(msg)) while \(doing); free space on it, then retry"
            )
        }
        return .internalError("SQLite error \(rc) (\(msg)) while \(doing) in \(path)")
    }
}
