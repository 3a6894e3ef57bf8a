// SQLiteStatement: a prepared statement — bind, step, read columns without copying blobs.

import CSQLite
import ShoalWire

/// SQLite's "copy the bytes now" destructor (`SQLITE_TRANSIENT`, a macro Swift cannot import).
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement owned by a ``SQLiteDatabase``.
final class SQLiteStatement {
    let stmt: OpaquePointer
    unowned let database: SQLiteDatabase

    init(_ stmt: OpaquePointer, database: SQLiteDatabase) {
        self.stmt = stmt
        self.database = database
    }

    func finalize() { sqlite3_finalize(stmt) }

    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    // MARK: Binding (1-based indexes, as SQLite counts)

    @discardableResult func bind(_ i: Int32, _ v: Int64) -> SQLiteStatement {
        sqlite3_bind_int64(stmt, i, v); return self
    }
    @discardableResult func bind(_ i: Int32, _ v: Int) -> SQLiteStatement { bind(i, Int64(v)) }
    @discardableResult func bind(_ i: Int32, _ v: Double) -> SQLiteStatement {
        sqlite3_bind_double(stmt, i, v); return self
    }
    @discardableResult func bind(_ i: Int32, _ v: String) -> SQLiteStatement {
        var v = v
        // The UTF-8 bytes in place, with their length: no C-string copy, no strlen.
        v.withUTF8 { u in
            if let base = u.baseAddress, u.count > 0 {
                _ = sqlite3_bind_text(
                    stmt, i, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(u.count), sqliteTransient
                )
            } else {
                _ = sqlite3_bind_text(stmt, i, "", 0, sqliteTransient)  // empty text, not NULL
            }
        }
        return self
    }
    @discardableResult func bind(_ i: Int32, _ v: [UInt8]) -> SQLiteStatement { bind(i, v[...]) }
    @discardableResult func bind(_ i: Int32, _ v: ArraySlice<UInt8>) -> SQLiteStatement {
        v.withUnsafeBytes { raw in
            // A zero-length blob still needs a non-null pointer to bind as a blob, not NULL.
            _ = sqlite3_bind_blob(
                stmt, i, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), sqliteTransient)
        }
        return self
    }
    /// Binds a node ID as its 16 big-endian bytes, without an intermediate array.
    @discardableResult func bind(_ i: Int32, _ n: NodeID) -> SQLiteStatement {
        var be = (n.high.bigEndian, n.low.bigEndian)
        withUnsafeBytes(of: &be) { raw in
            _ = sqlite3_bind_blob(stmt, i, raw.baseAddress, 16, sqliteTransient)
        }
        return self
    }
    /// Binds the bytes at `range` of `buffer` as text (UTF-8) or a blob, without SQLite copying
    /// them (`SQLITE_STATIC`): the bytes must stay where they are, unchanged, until the statement
    /// has run and ``clearBindings()`` dropped them. An empty range binds empty text or an empty
    /// blob, never NULL.
    @discardableResult func bindBorrowed(_ i: Int32, _ buffer: UnsafeRawBufferPointer, _ range: Range<Int>, text: Bool)
        -> SQLiteStatement
    {
        precondition(
            range.lowerBound >= 0 && range.upperBound <= buffer.count, "a borrowed binding lies inside its buffer")
        // A zero-length value still needs a non-null pointer to bind as text or a blob, not NULL.
        let p = buffer.baseAddress.map { $0 + range.lowerBound } ?? UnsafeRawPointer(bitPattern: 1)
        if text {
            sqlite3_bind_text(stmt, i, p?.assumingMemoryBound(to: CChar.self), Int32(range.count), nil)
        } else {
            sqlite3_bind_blob(stmt, i, p, Int32(range.count), nil)
        }
        return self
    }

    /// Drops every binding (to NULL), so none still borrows memory (``bindBorrowed(_:_:_:text:)``).
    func clearBindings() { sqlite3_clear_bindings(stmt) }

    /// Binds column `c` of the row `row` is on, as it is (type and bytes), without converting it.
    @discardableResult func bind(_ i: Int32, column c: Int32, of row: SQLiteStatement) -> SQLiteStatement {
        sqlite3_bind_value(stmt, i, sqlite3_column_value(row.stmt, c)); return self
    }
    @discardableResult func bindNull(_ i: Int32) -> SQLiteStatement {
        sqlite3_bind_null(stmt, i); return self
    }

    // MARK: Stepping

    /// Advances to the next row; false when done.
    func step() throws(ShoalError) -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let sql = sqlite3_sql(stmt).map { String(cString: $0) } ?? "?"
        let e = database.error(rc, "running \(sql.prefix(80))")
        sqlite3_reset(stmt)
        throw e
    }

    /// Runs a statement that returns no rows.
    func run() throws(ShoalError) {
        while try step() {}
    }

    /// Runs a statement that returns no rows and rewinds it for the next use, keeping its
    /// bindings (for held statements whose every parameter is bound again each time).
    func runAndRewind() throws(ShoalError) {
        while try step() {}
        sqlite3_reset(stmt)
    }

    // MARK: Columns (0-based)

    func int64(_ i: Int32) -> Int64 { sqlite3_column_int64(stmt, i) }
    func int(_ i: Int32) -> Int { Int(sqlite3_column_int64(stmt, i)) }
    func double(_ i: Int32) -> Double { sqlite3_column_double(stmt, i) }
    func isNull(_ i: Int32) -> Bool { sqlite3_column_type(stmt, i) == SQLITE_NULL }
    /// SQLite's storage class of column `i` (NULL reads as a blob: the store never writes one
    /// where it asks).
    func columnType(_ i: Int32) -> ColumnType {
        switch sqlite3_column_type(stmt, i) {
        case SQLITE_INTEGER: .integer
        case SQLITE_FLOAT: .real
        case SQLITE_TEXT: .text
        default: .blob
        }
    }
    enum ColumnType { case integer, real, text, blob }
    func text(_ i: Int32) -> String {
        guard let p = sqlite3_column_text(stmt, i) else { return "" }
        let n = Int(sqlite3_column_bytes(stmt, i))
        return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
    }
    /// The size in bytes of column `i`'s blob (or text) on the current row.
    func blobSize(_ i: Int32) -> Int { Int(sqlite3_column_bytes(stmt, i)) }

    /// The blob in column `i`, borrowed until the next step or reset.
    func withBlob<T>(_ i: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let p = sqlite3_column_blob(stmt, i)
        let n = Int(sqlite3_column_bytes(stmt, i))
        return body(UnsafeRawBufferPointer(start: n > 0 ? p : nil, count: n))
    }
    func withBlob<T>(_ i: Int32, _ body: (UnsafeRawBufferPointer) throws(ShoalError) -> T) throws(ShoalError) -> T {
        let p = sqlite3_column_blob(stmt, i)
        let n = Int(sqlite3_column_bytes(stmt, i))
        return try body(UnsafeRawBufferPointer(start: n > 0 ? p : nil, count: n))
    }
    func blob(_ i: Int32) -> [UInt8] {
        let p = sqlite3_column_blob(stmt, i)
        let n = Int(sqlite3_column_bytes(stmt, i))
        guard n > 0, let p else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}
