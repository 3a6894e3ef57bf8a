// Store+PendingRows: rows a write gathers (records, clock, index log), inserted many per statement.

import ShoalWire

/// `record_clock` and `field_index_log` rows a write transaction has produced but not inserted
/// yet: appended as records are written, inserted ``WriteStatements/batchRows`` per statement,
/// the rest when the transaction is about to read or delete such rows, and before it commits.
/// Log rows keep their order, so the log's ids still follow write order. `records` rows are
/// queued only by writes that undo their whole batch when one of its records exists
/// (``Store/insertVersion(_:encoded:in:queued:)``).
struct PendingRows {
    struct Clock {
        var zone: Int64
        var origin: NodeID
        var hlc: Int64
        var name: String
    }

    /// A `field_index_log` row: an entry of index `index` added (`present`) or removed.
    struct Log {
        var index: Int64
        var kind: Int
        var value: IndexValue
        var name: String
        var present: Bool
    }

    /// A `records` row of a version written as new (``Store/insertVersion(_:encoded:in:queued:)``).
    struct Version {
        var zone: Int64
        var name: String
        var type: String
        var seq: Int64
        var deleted: Bool
        var bytes: ArraySlice<UInt8>
    }

    var clock: [Clock] = []
    var log: [Log] = []
    var records: [Version] = []
}

extension Store {
    /// Queues a `record_clock` row; inserts a full batch.
    func addClockRow(_ z: ZoneState, _ origin: NodeID, _ hlc: HLC, _ name: String) throws(ShoalError) {
        pending.clock.append(.init(zone: z.row, origin: origin, hlc: Bytes.hlcKey(hlc), name: name))
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
    func addNewVersionRow(_ row: PendingRows.Version) throws(ShoalError) -> Bool {
        pending.records.append(row)
        if pending.records.count == WriteStatements.batchRows { return try insertPendingVersionRows() }
        return true
    }

    /// Inserts the queued `records` rows; false when one of them named a record that exists.
    func insertPendingVersionRows() throws(ShoalError) -> Bool {
        if pending.records.isEmpty { return true }
        defer { pending.records.removeAll(keepingCapacity: true) }
        let rows = pending.records
        let batch = rows.count == WriteStatements.batchRows
        let s = batch ? writes.insertRecordRows : writes.insertRecord
        var inserted = 0
        for (i, r) in rows.enumerated() {
            let p = batch ? Int32(i) * 6 : 0
            s.bind(p + 1, r.zone).bind(p + 2, r.name).bind(p + 3, r.type).bind(p + 4, r.seq)
                .bind(p + 5, r.deleted ? 1 : 0).bind(p + 6, r.bytes)
            if !batch {
                try s.runAndRewind()
                inserted += db.changes
            }
        }
        if batch {
            try s.runAndRewind()
            inserted = db.changes
        }
        return inserted == rows.count
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
    }

    /// Forgets queued rows (their transaction, or its savepoint, is rolled back).
    func discardPendingRows() {
        pending.records.removeAll(keepingCapacity: true)
        pending.clock.removeAll(keepingCapacity: true)
        pending.log.removeAll(keepingCapacity: true)
    }

    private func insertPendingClockRows() throws(ShoalError) {
        defer { pending.clock.removeAll(keepingCapacity: true) }
        let rows = pending.clock
        let batch = rows.count == WriteStatements.batchRows
        let s = batch ? writes.insertClockRows : writes.insertClock
        for (i, r) in rows.enumerated() {
            let p = batch ? Int32(i) * 4 : 0
            s.bind(p + 1, r.zone).bind(p + 2, r.origin).bind(p + 3, r.hlc).bind(p + 4, r.name)
            if !batch { try s.runAndRewind() }
        }
        if batch { try s.runAndRewind() }
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
