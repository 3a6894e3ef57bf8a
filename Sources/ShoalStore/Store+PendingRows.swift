// Store+PendingRows: rows a write gathers (records, clock, index log), inserted many per statement.

import ShoalWire

/// `record_clock` and `field_index_log` rows a write transaction has produced but not inserted
/// yet: appended as records are written, inserted ``WriteStatements/batchRows`` per statement,
/// the rest when the transaction is about to read or delete such rows, and before it commits.
/// Log rows keep their order, so the log's ids still follow write order. `records` rows are
/// queued only by writes that undo their whole batch when one of its records exists
/// (``Store/insertVersion(_:encoded:in:queued:indexEntries:refs:)``).
///
/// The text and blob columns of queued `records` and `record_clock` rows are copied into one
/// buffer per kind as they are queued, and bound from it without SQLite copying them again
/// (``SQLiteStatement/bindBorrowed(_:_:text:)``): a row costs a copy into a buffer that is reused,
/// not an allocation per column.
struct PendingRows {
    /// A `record_clock` row; its origin (16 bytes, as ``Bytes/nodeID(_:)`` writes it) and name
    /// lie in ``clockBytes``.
    struct Clock {
        var zone: Int64
        var hlc: Int64
        var origin: Int
        var name: Range<Int>
    }

    /// A `field_index_log` row: an entry of index `index` added (`present`) or removed.
    struct Log {
        var index: Int64
        var kind: Int
        var value: IndexValue
        var name: String
        var present: Bool
    }

    /// A `records` row of a version written as new (``Store/insertVersion(_:encoded:in:queued:indexEntries:refs:)``);
    /// its name, type and bytes lie in ``recordBytes``.
    struct Version {
        var zone: Int64
        var seq: Int64
        var deleted: Bool
        var name: Range<Int>
        var type: Range<Int>
        var bytes: Range<Int>
    }

    /// An entry of this node's own log for zone row `zone`, with the chain value after it.
    struct OwnEntry {
        var zone: Int64
        var sequence: UInt64
        var hlc: HLC
        var bytes: [UInt8]
        var chain: [UInt8]
    }

    var clock: [Clock] = []
    var log: [Log] = []
    var records: [Version] = []
    /// This node's own log entries written since the last flush, in the order they were made.
    var ownEntries: [OwnEntry] = []
    /// The origins and names of the queued clock rows, back to back.
    var clockBytes: [UInt8] = []
    /// The names, types and encodings of the queued `records` rows, back to back.
    var recordBytes: [UInt8] = []

    /// Queues a `records` row, copying its text and bytes into ``recordBytes``.
    mutating func appendVersion(
        zone: Int64, name: String, type: String, seq: Int64, deleted: Bool, bytes: ArraySlice<UInt8>
    ) {
        let n = Self.append(name, to: &recordBytes)
        let t = Self.append(type, to: &recordBytes)
        let start = recordBytes.count
        recordBytes.append(contentsOf: bytes)
        records.append(
            Version(zone: zone, seq: seq, deleted: deleted, name: n, type: t, bytes: start..<recordBytes.count))
    }

    /// Queues a `record_clock` row, copying its origin and name into ``clockBytes``.
    mutating func appendClock(zone: Int64, origin: NodeID, hlc: Int64, name: String) {
        let at = clockBytes.count
        var be = (origin.high.bigEndian, origin.low.bigEndian)
        withUnsafeBytes(of: &be) { clockBytes.append(contentsOf: $0) }
        clock.append(Clock(zone: zone, hlc: hlc, origin: at, name: Self.append(name, to: &clockBytes)))
    }

    /// Forgets the queued `records` rows.
    mutating func removeVersions() {
        records.removeAll(keepingCapacity: true)
        recordBytes.removeAll(keepingCapacity: true)
    }

    /// Forgets the queued `record_clock` rows.
    mutating func removeClocks() {
        clock.removeAll(keepingCapacity: true)
        clockBytes.removeAll(keepingCapacity: true)
    }

    /// Appends the UTF-8 bytes of `s` to `buffer`; where they lie.
    private static func append(_ s: String, to buffer: inout [UInt8]) -> Range<Int> {
        let start = buffer.count
        var s = s
        s.withUTF8 { buffer.append(contentsOf: $0) }
        return start..<buffer.count
    }
}

extension Store {
    /// Queues a `record_clock` row; inserts a full batch.
    func addClockRow(_ z: ZoneState, _ origin: NodeID, _ hlc: HLC, _ name: String) throws(ShoalError) {
        pending.appendClock(zone: z.row, origin: origin, hlc: Bytes.hlcKey(hlc), name: name)
        if pending.clock.count == WriteStatements.batchRows { try insertPendingClockRows() }
    }

    /// Queues a `field_index_log` row; inserts a full batch.
    func addLogRow(_ row: PendingRows.Log) throws(ShoalError) {
        pending.log.append(row)
        indexLogCount += 1
        if pending.log.count == WriteStatements.batchRows { try insertPendingLogRows() }
    }

    /// Queues the `records` row of a version written as new; inserts a full batch. False when a
    /// record of the batch turned out to exist (none of the batch's rows is then certain to be
    /// written: the caller rolls back).
    func addNewVersionRow(
        zone: Int64, name: String, type: String, seq: Int64, deleted: Bool,
        bytes: ArraySlice<UInt8>
    ) throws(ShoalError) -> Bool {
        pending.appendVersion(zone: zone, name: name, type: type, seq: seq, deleted: deleted, bytes: bytes)
        if pending.records.count == WriteStatements.batchRows { return try insertPendingVersionRows() }
        return true
    }

    /// Inserts the queued `records` rows; false when one of them named a record that exists.
    func insertPendingVersionRows() throws(ShoalError) -> Bool {
        if pending.records.isEmpty { return true }
        defer { pending.removeVersions() }
        let rows = pending.records
        let batch = rows.count == WriteStatements.batchRows
        let s = batch ? writes.insertRecordRows : writes.insertRecord
        let inserted: Result<Int, ShoalError> = pending.recordBytes.withUnsafeBytes { data in
            defer { s.clearBindings() }  // the bindings borrow `data`
            do throws(ShoalError) {
                var inserted = 0
                for (i, r) in rows.enumerated() {
                    let p = batch ? Int32(i) * 6 : 0
                    s.bind(p + 1, r.zone).bindBorrowed(p + 2, data, r.name, text: true).bindBorrowed(
                        p + 3, data, r.type, text: true
                    )
                    .bind(p + 4, r.seq).bind(p + 5, r.deleted ? 1 : 0).bindBorrowed(p + 6, data, r.bytes, text: false)
                    if !batch {
                        try s.runAndRewind()
                        inserted += db.changes
                    }
                }
                if batch {
                    try s.runAndRewind()
                    inserted = db.changes
                }
                return .success(inserted)
            } catch {
                return .failure(error)
            }
        }
        return try inserted.get() == rows.count
    }

    /// Inserts the queued `records` rows for a caller that cannot undo them: one naming a record
    /// that exists is an error (the transaction rolls back).
    func insertQueuedVersions() throws(ShoalError) {
        guard try insertPendingVersionRows() else {
            throw .internalError("a record written as new exists in the store; nothing was saved")
        }
    }

    /// Inserts every queued row. Called before the transaction reads `records` or reads or deletes
    /// `record_clock` or `field_index_log` rows, and before it commits.
    func insertPendingRows() throws(ShoalError) {
        if !pending.records.isEmpty { try insertQueuedVersions() }
        if !pending.clock.isEmpty { try insertPendingClockRows() }
        if !pending.log.isEmpty { try insertPendingLogRows() }
        if !pending.ownEntries.isEmpty { try insertPendingOwnEntries() }
    }

    /// Keeps the queued entries of this node's own logs, each zone's consecutive ones in pages
    /// (``WriterLogPage``): a transaction that saves many records writes a row per page.
    private func insertPendingOwnEntries() throws(ShoalError) {
        defer { pending.ownEntries.removeAll(keepingCapacity: true) }
        let entries = pending.ownEntries
        var start = 0
        while start < entries.count {
            // A run: one zone's entries, consecutive, at most a page.
            var end = start &+ 1
            while end < entries.count, end &- start < WriterLogPage.maxEntries,
                entries[end].zone == entries[start].zone,
                entries[end].sequence == entries[end &- 1].sequence &+ 1
            { end &+= 1 }
            let run = entries[start..<end].map { (hlc: $0.hlc, bytes: $0.bytes, chain: $0.chain) }
            try insertRun(run[...], of: nodeID, zoneRow: entries[start].zone, lastSequence: entries[end &- 1].sequence)
            start = end
        }
    }

    /// Forgets queued rows (their transaction, or its savepoint, is rolled back).
    func discardPendingRows() {
        pending.removeVersions()
        pending.removeClocks()
        pending.log.removeAll(keepingCapacity: true)
        pending.ownEntries.removeAll(keepingCapacity: true)
    }

    private func insertPendingClockRows() throws(ShoalError) {
        defer { pending.removeClocks() }
        let rows = pending.clock
        let batch = rows.count == WriteStatements.batchRows
        let s = batch ? writes.insertClockRows : writes.insertClock
        let done: Result<Void, ShoalError> = pending.clockBytes.withUnsafeBytes { data in
            defer { s.clearBindings() }  // the bindings borrow `data`
            do throws(ShoalError) {
                for (i, r) in rows.enumerated() {
                    let p = batch ? Int32(i) * 4 : 0
                    s.bind(p + 1, r.zone).bindBorrowed(p + 2, data, r.origin..<r.origin + 16, text: false)
                        .bind(p + 3, r.hlc).bindBorrowed(p + 4, data, r.name, text: true)
                    if !batch { try s.runAndRewind() }
                }
                if batch { try s.runAndRewind() }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try done.get()
    }

    private func insertPendingLogRows() throws(ShoalError) {
        defer { pending.log.removeAll(keepingCapacity: true) }
        let rows = pending.log
        let batch = rows.count == WriteStatements.batchRows
        let s = batch ? writes.insertLogRows : writes.insertLog
        for (i, r) in rows.enumerated() {
            let p = batch ? Int32(i) * 5 : 0
            s.bind(p + 1, r.index).bind(p + 2, r.kind)
            r.value.bind(s, p + 3)
            s.bind(p + 4, r.name).bind(p + 5, r.present ? 1 : 0)
            if !batch { try s.runAndRewind() }
        }
        if batch { try s.runAndRewind() }
    }
}
