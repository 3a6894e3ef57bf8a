// WriteStatements: the write path's prepared statements, held directly rather than looked up.

/// The statements every written record version runs, prepared once when the store opens and held
/// in stored properties: no lookup per use. The `…Rows` statements insert ``batchRows`` rows at
/// once, so SQLite's per-statement work (cursor opening, halting, resetting) is paid once per
/// batch instead of once per row.
final class WriteStatements {
    /// Rows per multi-row insert.
    static let batchRows = 64

    /// `records`: a version of a record the store does not hold (nothing when it does).
    let insertRecord: SQLiteStatement
    /// `records`: ``batchRows`` versions of records the store does not hold (nothing for those
    /// it does).
    let insertRecordRows: SQLiteStatement
    /// `records`: a version replacing the stored one, whose bytes move to `previous`.
    let upsertRecord: SQLiteStatement
    /// `records.base`: the stored version's bytes, when there is no base yet or parameter 3 is 1.
    let keepStoredAsBase: SQLiteStatement
    /// `records.base`: the bytes given (parameter 3), or none (NULL).
    let setBase: SQLiteStatement
    let insertClock: SQLiteStatement
    let insertClockRows: SQLiteStatement
    let deleteClock: SQLiteStatement
    let insertLog: SQLiteStatement
    let insertLogRows: SQLiteStatement

    init(_ db: SQLiteDatabase) throws(ShoalError) {
        let record = "INSERT INTO records(zone, name, type, seq, deleted, bytes, previous) VALUES"
        let row = " (?, ?, ?, ?, ?, ?, NULL)"
        insertRecord = try db.prepare(record + row + " ON CONFLICT(zone, name) DO NOTHING")
        insertRecordRows = try db.prepare(
            record + Array(repeating: row, count: Self.batchRows).joined(separator: ",")
                + " ON CONFLICT(zone, name) DO NOTHING")
        // One statement whether or not the row exists; on update the old bytes move to `previous`
        // inside SQLite (no re-encoding of the old version) and unchanged index keys stay put.
        upsertRecord = try db.prepare(
            """
            INSERT INTO records(zone, name, type, seq, deleted, bytes, previous) VALUES(?, ?, ?, ?, ?, ?, NULL)
            ON CONFLICT(zone, name) DO UPDATE SET type = excluded.type, seq = excluded.seq,
            deleted = excluded.deleted, previous = records.bytes, bytes = excluded.bytes
            """)
        keepStoredAsBase = try db.prepare(
            "UPDATE records SET base = bytes WHERE zone = ? AND name = ? AND (base IS NULL OR ?)")
        setBase = try db.prepare(
            "UPDATE records SET base = ?3 WHERE zone = ?1 AND name = ?2 AND (base IS NOT NULL OR ?3 IS NOT NULL)")
        let clock = "INSERT OR IGNORE INTO record_clock(zone, origin, hlc, name) VALUES"
        insertClock = try db.prepare(clock + Self.values(4, rows: 1))
        insertClockRows = try db.prepare(clock + Self.values(4, rows: Self.batchRows))
        deleteClock = try db.prepare("DELETE FROM record_clock WHERE zone = ? AND origin = ? AND hlc = ? AND name = ?")
        let log = "INSERT INTO field_index_log(idx, kind, value, name, present) VALUES"
        insertLog = try db.prepare(log + Self.values(5, rows: 1))
        insertLogRows = try db.prepare(log + Self.values(5, rows: Self.batchRows))
    }

    /// ` (?, …), (?, …), …`: `rows` groups of `columns` parameters.
    static func values(_ columns: Int, rows: Int) -> String {
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
        return " " + Array(repeating: row, count: rows).joined(separator: ", ")
    }
}
