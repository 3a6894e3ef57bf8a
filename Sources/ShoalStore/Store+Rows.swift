// Store+Rows: reading and writing one record version — the row, its clock entries, refs and index.

import ShoalWire

/// A record version as stored, with the change sequence of the write that produced it.
struct StoredRecord {
    var record: Record
    var seq: UInt64
}

extension Store {
    /// Decodes a stored row, turning damage into `internalError` (never a trap).
    func decodeRow(_ raw: UnsafeRawBufferPointer, zone: RecordZone.ID, name: String) throws(ShoalError) -> Record {
        try Self.decodeRow(raw, zone: zone, name: name, limits: configuration.limits)
    }

    /// ``decodeRow(_:zone:name:)`` off the actor, for decoding pages of rows in parallel.
    nonisolated static func decodeRow(
        _ raw: UnsafeRawBufferPointer, zone: RecordZone.ID, name: String,
        limits: WireLimits
    ) throws(ShoalError) -> Record {
        let r: Record
        do throws(WireError) {
            r = try Record(decoding: raw, limits: limits)
        } catch {
            throw .internalError(
                "the stored row for record \(zone)/\(name) does not decode (\(error)); the store is damaged — restore it from a peer by deleting the data directory and syncing again"
            )
        }
        guard r.id.name == name, r.id.zone == zone else {
            throw .internalError("the stored row for record \(zone)/\(name) holds record \(r.id); the store is damaged")
        }
        return r
    }

    /// The stored version of `name` in `z`, live or tombstone.
    func loadStored(_ z: ZoneState, _ name: String) throws(ShoalError) -> StoredRecord? {
        if !pending.records.isEmpty { try insertQueuedVersions() }
        let s = try db.cached("SELECT seq, bytes FROM records WHERE zone = ? AND name = ?")
        defer { s.reset() }  // a statement left on a row would pin this connection's read snapshot
        s.bind(1, z.row).bind(2, name)
        guard try s.step() else { return nil }
        let seq = UInt64(bitPattern: s.int64(0))
        let rec = try s.withBlob(1) { (raw) throws(ShoalError) -> Record in try decodeRow(raw, zone: z.id, name: name) }
        return StoredRecord(record: rec, seq: seq)
    }

    /// The version before the stored one, if kept (the ancestor of a conflicting save).
    func loadPrevious(_ z: ZoneState, _ name: String) throws(ShoalError) -> Record? {
        try loadKept(z, name).previous
    }

    /// The versions a row keeps besides its stored one: the one before it (`previous`) and the
    /// newest one a peer is known to hold too (`base`, kept in zones with a resolver).
    func loadKept(_ z: ZoneState, _ name: String) throws(ShoalError) -> (previous: Record?, base: Record?) {
        let s = try db.statement("SELECT previous, base FROM records WHERE zone = ? AND name = ?")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, name)
        guard try s.step() else { return (nil, nil) }
        var kept = [Record?]()
        for c in Int32(0)...1 {
            kept.append(
                s.isNull(c)
                    ? nil
                    : try s.withBlob(c) { (raw) throws(ShoalError) -> Record in
                        try decodeRow(raw, zone: z.id, name: name)
                    })
        }
        return (kept[0], kept[1])
    }

    /// Writes `new` as the latest version of its record, replacing `old` (the stored version, whose
    /// bytes the row keeps as `previous`): a new change sequence, the zone vector, clock rows,
    /// `deleteSelf` refs, asset references and declared index entries all follow. `encoded` is
    /// `new.encoded()` when the caller already has it; `base` says what becomes of the row's base
    /// (``BaseUpdate``).
    func writeVersion(
        _ new: Record, encoded: ArraySlice<UInt8>? = nil, over old: Record?, in z: inout ZoneState,
        base: BaseUpdate = .unchanged
    ) throws(ShoalError) {
        if !pending.records.isEmpty { try insertQueuedVersions() }  // one may be of this record
        if let old, !z.implied.isEmpty { try materializeImplied(over: old, in: z) }
        z.seq += 1
        let name = new.id.name
        let bytes = encoded ?? new.encoded()[...]
        if case .storedIfShared(let shared) = base, old != nil {
            try writes.keepStoredAsBase.bind(1, z.row).bind(2, name).bind(3, shared ? 1 : 0).runAndRewind()
        }
        try writes.upsertRecord.bind(1, z.row).bind(2, name).bind(3, new.recordType).bind(4, Int64(bitPattern: z.seq))
            .bind(5, new.isDeleted ? 1 : 0).bind(6, bytes).runAndRewind()
        switch base {
        case .cleared: try writes.setBase.bind(1, z.row).bind(2, name).bindNull(3).runAndRewind()
        case .set(let version): try writes.setBase.bind(1, z.row).bind(2, name).bind(3, version).runAndRewind()
        case .unchanged, .storedIfShared: break
        }

        // Clock rows: remove entries that changed, add the new ones.
        let newVector = new.versionVector
        if let old {
            let oldVector = old.versionVector
            if oldVector != newVector {
                try insertPendingRows()  // a row to delete may still be queued
                let del = writes.deleteClock
                for e in oldVector.entries where newVector[e.node] != e.hlc {
                    try del.bind(1, z.row).bind(2, e.node).bind(3, Bytes.hlcKey(e.hlc)).bind(4, name).runAndRewind()
                }
                for e in newVector.entries where oldVector[e.node] != e.hlc { try addClockRow(z, e.node, e.hlc, name) }
            }
        } else {
            for e in newVector.entries { try addClockRow(z, e.node, e.hlc, name) }
        }

        // deleteSelf references held by live versions.
        let oldRefs = old.map(Self.cascadeTargets) ?? []
        let newRefs = Self.cascadeTargets(new)
        if oldRefs != newRefs {
            let del = try db.cached("DELETE FROM refs WHERE zone = ? AND target = ? AND source = ?")
            for t in oldRefs.subtracting(newRefs) {
                try del.bind(1, z.row).bind(2, t).bind(3, name).run()
                del.reset()
            }
            let ins = try db.cached("INSERT OR IGNORE INTO refs(zone, target, source) VALUES(?, ?, ?)")
            for t in newRefs.subtracting(oldRefs) {
                try ins.bind(1, z.row).bind(2, t).bind(3, name).run()
                ins.reset()
            }
        }

        try noteMergedHeads(new, was: old.map(Self.hasMergedHeads) ?? false, in: z)
        try noteAssetReferences(new, over: old, in: z)
        try updateIndexes(new, over: old, in: z)

        try enterOwnWrite(new, in: &z)
        z.vector.formUnion(newVector)
        databaseSequence += 1
        z.databaseSequence = databaseSequence
        noteRecordChanged(zone: z.id, old: old, new: new)
    }

    /// Writes `new` as a record this store does not hold, if so: false (and nothing written) when
    /// a row for its name exists. Does what ``writeVersion(_:encoded:over:in:)`` does with no old
    /// version, without looking the name up first.
    ///
    /// `queued`: the row is queued with others and inserted in a batch, for callers that undo
    /// the whole batch when one of its records exists: then false means that a record of the
    /// batch exists (this one, or one written since the last batch), and the caller must roll
    /// back to before the batch's first write. Queued rows are inserted by
    /// ``insertPendingVersionRows()``, or ``insertPendingRows()`` before anything reads `records`.
    ///
    /// `indexEntries` and `refs`: the declared-index entries `new` adds and the names its
    /// `deleteSelf` references target (``cascadeTargets(_:)``), when already computed
    /// (``SavePlanner``); nil computes them here. `logEntry`, likewise: its entry in this node's
    /// log without the sequence (``enterOwnWrite(_:in:tail:)``).
    func insertVersion(
        _ new: Record, encoded: ArraySlice<UInt8>? = nil, in z: inout ZoneState, queued: Bool = false,
        indexEntries: [IndexChange]? = nil, refs: Set<String>? = nil, logEntry: [UInt8]? = nil
    ) throws(ShoalError) -> Bool {
        let bytes = encoded ?? new.encoded()[...]
        if queued {
            guard
                try addNewVersionRow(
                    zone: z.row, name: new.id.name, type: new.recordType, seq: Int64(bitPattern: z.seq &+ 1),
                    deleted: new.isDeleted, bytes: bytes)
            else { return false }
        } else {
            if !pending.records.isEmpty { try insertQueuedVersions() }  // one may be of this record
            try writes.insertRecord.bind(1, z.row).bind(2, new.id.name).bind(3, new.recordType).bind(
                4, Int64(bitPattern: z.seq &+ 1)
            )
            .bind(5, new.isDeleted ? 1 : 0).bind(6, bytes).runAndRewind()
            guard db.changes == 1 else { return false }
        }
        z.seq += 1
        for e in new.versionVector.entries { try addClockRow(z, e.node, e.hlc, new.id.name) }
        try noteMergedHeads(new, was: false, in: z)
        try noteAssetReferences(new, over: nil, in: z)
        let refs = refs ?? Self.cascadeTargets(new)
        if !refs.isEmpty {
            let r = try db.cached("INSERT OR IGNORE INTO refs(zone, target, source) VALUES(?, ?, ?)")
            for t in refs {
                try r.bind(1, z.row).bind(2, t).bind(3, new.id.name).run()
                r.reset()
            }
        }
        if let indexEntries {
            let order = 2 * indexLogCount
            for var e in indexEntries {
                e.order = order
                indexAdds.append(e)
            }
        } else {
            try updateIndexes(new, over: nil, in: z)
        }
        try enterOwnWrite(new, in: &z, tail: logEntry)
        z.vector.formUnion(new.versionVector)
        databaseSequence += 1
        z.databaseSequence = databaseSequence
        noteRecordChanged(zone: z.id, old: nil, new: new)
        return true
    }

    /// Whether `r` is a live version with two or more heads (a row of `merged_heads`).
    static func hasMergedHeads(_ r: Record) -> Bool { r.heads.count >= 2 && !r.isDeleted }

    /// Keeps `merged_heads` in step with `new`, written over a version that `was` listed there.
    func noteMergedHeads(_ new: Record, was: Bool, in z: ZoneState) throws(ShoalError) {
        let now = Self.hasMergedHeads(new)
        guard now != was else { return }
        let s =
            now
            ? try db.cached("INSERT OR IGNORE INTO merged_heads(zone, name) VALUES(?, ?)")
            : try db.cached("DELETE FROM merged_heads WHERE zone = ? AND name = ?")
        try s.bind(1, z.row).bind(2, new.id.name).run()
        s.reset()
    }

    /// Removes a record's rows entirely (tombstone purge).
    func removeRows(_ r: Record, in z: ZoneState) throws(ShoalError) {
        try insertPendingRows()  // a clock row to delete may still be queued
        if !z.implied.isEmpty { try materializeImplied(over: r, in: z) }
        try db.statement("DELETE FROM records WHERE zone = ? AND name = ?").bind(1, z.row).bind(2, r.id.name).run()
        if Self.hasMergedHeads(r) {
            try db.statement("DELETE FROM merged_heads WHERE zone = ? AND name = ?").bind(1, z.row).bind(2, r.id.name)
                .run()
        }
        if !Self.assetReferences(r).isEmpty {
            try db.statement("DELETE FROM asset_refs WHERE zone = ? AND name = ?").bind(1, z.row).bind(2, r.id.name)
                .run()
            noteAssetReferenceRemoval()
        }
        let del = try db.statement("DELETE FROM record_clock WHERE zone = ? AND origin = ? AND hlc = ? AND name = ?")
        for e in r.versionVector.entries {
            try del.bind(1, z.row).bind(2, Bytes.nodeID(e.node)).bind(3, Bytes.hlcKey(e.hlc)).bind(4, r.id.name).run()
            del.reset()
        }
    }

    /// Names of same-zone records that `r`, while live, deletes itself with (`deleteSelf`).
    static func cascadeTargets(_ r: Record) -> Set<String> {
        if r.isDeleted { return [] }
        guard
            r.fields.contains(where: { f in
                switch f.value {
                case .reference?, .list(.reference)?: return true
                default: return false
                }
            })
        else { return [] }
        var out = Set<String>()
        for f in r.fields {
            switch f.value {
            case .reference(let ref)?:
                if ref.action == .deleteSelf, ref.recordID.zone == r.id.zone { out.insert(ref.recordID.name) }
            case .list(.reference(let refs))?:
                for ref in refs where ref.action == .deleteSelf && ref.recordID.zone == r.id.zone {
                    out.insert(ref.recordID.name)
                }
            default: break
            }
        }
        return out
    }

    /// Live records in `z` holding a `deleteSelf` reference to `target`, sorted by name.
    func referrers(of target: String, in z: ZoneState) throws(ShoalError) -> [String] {
        let s = try db.statement("SELECT source FROM refs WHERE zone = ? AND target = ? ORDER BY source")
        s.bind(1, z.row).bind(2, target)
        var out = [String]()
        while try s.step() { out.append(s.text(0)) }
        return out
    }
}
