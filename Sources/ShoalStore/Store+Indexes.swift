// Store+Indexes: declared secondary indexes — (zone, record type, field) → typed values → records.

public import ShoalWire

/// A declared secondary index: one field of one record type in one zone.
struct IndexKey: Hashable, Sendable {
    var zone: RecordZone.ID
    var recordType: String
    var field: String

    /// Every declared index with its ID (`index_decls.id`, which names it in its entries).
    static func loadAll(_ db: SQLiteDatabase) throws(ShoalError) -> [IndexKey: Int64] {
        let s = try db.statement(
            "SELECT z.name, z.owner, d.type, d.field, d.id FROM index_decls d JOIN zones z ON z.id = d.zone")
        var out = [IndexKey: Int64]()
        while try s.step() {
            out[
                IndexKey(
                    zone: RecordZone.ID(name: s.text(0), owner: s.text(1)), recordType: s.text(2), field: s.text(3))] =
                s.int64(4)
        }
        return out
    }
}

/// A declared index's field and ID, as the write path looks them up by zone and record type.
struct IndexedField: Hashable, Sendable {
    var field: String
    var id: Int64
}

/// A value as the `field_postings` table stores it: SQLite's own types, so ranges use the index.
enum IndexValue: Hashable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// The kind tag and typed values `v` is indexed under (each element, for a list); nil when
    /// the type is not indexable (assets, locations).
    static func entries(_ v: FieldValue) -> [(kind: Int, value: IndexValue)] {
        switch v {
        case .list(let l): return l.elements.flatMap(entries)
        default:
            guard let x = scalar(v) else { return [] }
            return [(Int(v.kind.rawValue), x)]
        }
    }

    static func scalar(_ v: FieldValue) -> IndexValue? {
        switch v {
        case .string(let s): return .text(s)
        case .int64(let i): return .integer(i)
        case .double(let d): return .real(d)
        case .bool(let b): return .integer(b ? 1 : 0)
        case .date(let t): return .integer(t.millisecondsSince1970)
        case .reference(let r): return .text(r.recordID.name)
        case .bytes(let b): return .blob(b)
        case .asset, .location, .list: return nil
        }
    }

    func bind(_ s: SQLiteStatement, _ i: Int32) {
        switch self {
        case .integer(let x): s.bind(i, x)
        case .real(let x): s.bind(i, x)
        case .text(let x): s.bind(i, x)
        case .blob(let x): s.bind(i, x)
        }
    }
}

extension Store {
    /// Declares a secondary index on `field` of `recordType` records in `zone`, and builds it.
    ///
    /// Queries whose predicate constrains an indexed field with `==`, `IN`, `CONTAINS`,
    /// `BEGINSWITH` or a range read only the matching rows instead of decoding every record.
    /// Declaring an index that exists does nothing.
    /// - Throws: `zoneNotFound`; `invalidArguments` for an invalid type or field name.
    public func declareIndex(zone: RecordZone.ID, recordType: String, field: String) throws(ShoalError) {
        let z = try liveZone(zone)
        guard Self.isIdentifier(recordType), Self.isIdentifier(field) else {
            throw .invalidArguments(
                "index on \(recordType).\(field): record types and field names start with a letter and contain only letters, digits and _"
            )
        }
        let key = IndexKey(zone: zone, recordType: recordType, field: field)
        if indexes[key] != nil { return }
        try writeTransaction { () throws(ShoalError) in
            try db.statement("INSERT INTO index_decls(zone, type, field) VALUES(?, ?, ?)")
                .bind(1, z.row).bind(2, recordType).bind(3, field).run()
            let id = db.lastInsertRowID
            indexes[key] = id
            try addEntries(of: IndexedField(field: field, id: id), recordType: recordType, in: z)
            // The entries of records written before the index's progress mark are not derived
            // again on opening: they are written before this transaction commits.
            try flushIndexLog()
        }
    }

    /// Queues an entry for every value of `field` held by a live `recordType` record of `z` (an
    /// index being built).
    func addEntries(of field: IndexedField, recordType: String, in z: ZoneState) throws(ShoalError) {
        try insertPendingRows()
        let s = try db.statement("SELECT name, bytes FROM records WHERE zone = ? AND type = ? AND deleted = 0")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, recordType)
        var records = [Record]()
        while try s.step() {
            let name = s.text(0)
            records.append(
                try s.withBlob(1) { (raw) throws(ShoalError) -> Record in try decodeRow(raw, zone: z.id, name: name) })
        }
        s.reset()
        for r in records {
            guard let v = r[field.field] else { continue }
            for (kind, value) in IndexValue.entries(v) { addEntry(field.id, kind, value, r.id.name) }
        }
    }

    /// The indexed fields of `recordType` in `zone`.
    func indexedFields(_ zone: RecordZone.ID, _ recordType: String) -> [IndexedField] {
        indexedFieldsByZone[zone]?[recordType] ?? []
    }

    /// ``indexes`` grouped by zone and record type, for the write path.
    static func fieldsByZone(_ keys: [IndexKey: Int64]) -> [RecordZone.ID: [String: [IndexedField]]] {
        var out = [RecordZone.ID: [String: [IndexedField]]]()
        for (k, id) in keys {
            out[k.zone, default: [:]][k.recordType, default: []].append(IndexedField(field: k.field, id: id))
        }
        return out
    }

    /// Queues an index entry to add (in memory: additions are derived from `records` again on
    /// opening, see ``flushIndexLog()``), ordered after every log row written so far.
    func addEntry(_ index: Int64, _ kind: Int, _ value: IndexValue, _ name: String) {
        indexAdds.append(
            IndexChange(index: index, kind: kind, value: value, name: name, order: 2 * indexLogCount, present: true))
    }

    /// Records the index changes a record's new version makes: entries of values that changed
    /// are removed (logged) and the new ones added (queued); unchanged values are not touched.
    func updateIndexes(_ new: Record, over old: Record?, in z: ZoneState) throws(ShoalError) {
        guard let byType = indexedFieldsByZone[z.id] else { return }
        let liveOld = old.flatMap { $0.isDeleted ? nil : $0 }
        let oldFields = liveOld.flatMap { byType[$0.recordType] } ?? []
        let newFields = new.isDeleted ? [] : byType[new.recordType] ?? []
        if oldFields.isEmpty && newFields.isEmpty { return }
        let sameType = liveOld?.recordType == new.recordType
        let name = new.id.name
        if let liveOld {
            for f in oldFields {
                guard let o = liveOld[f.field] else { continue }
                if sameType && newFields.contains(f) && new[f.field] == o { continue }
                for (kind, value) in IndexValue.entries(o) {
                    try addLogRow(.init(index: f.id, kind: kind, value: value, name: name, present: false))
                }
            }
        }
        for f in newFields {
            guard let n = new[f.field] else { continue }
            if sameType, let liveOld, liveOld[f.field] == n { continue }
            for (kind, value) in IndexValue.entries(n) { addEntry(f.id, kind, value, name) }
        }
    }

    /// Runs a value may have before an addition merges them (queries read every run of a value).
    static let maxRunsPerValue = 8

    /// Writes the queued additions and logged removals to `field_postings`, inside the current
    /// write transaction, and empties both; every declared index's zone then has its
    /// `index_progress` at its current sequence.
    ///
    /// The changes are sorted by entry and then by order (a log row's place among the additions
    /// is kept by ``IndexChange/order``), so each entry's last change is the one applied. Per
    /// value: additions alone append one run of names; a removal, or a value already holding
    /// ``maxRunsPerValue`` runs, rewrites the value's runs as one. A batch of new records costs
    /// one row per distinct value, not one b-tree insert per record.
    ///
    /// Additions live in memory only: after a crash (or any reopening) they are derived again
    /// from the records written since `index_progress` (``pendingAdditions(_:zones:fields:limits:order:)``),
    /// whose current versions are exactly what those additions would leave; removals are logged
    /// in the same transaction as the records, as the old values are gone once a record changes.
    func flushIndexLog() throws(ShoalError) {
        try insertPendingRows()
        if indexLogCount == 0 && indexAdds.isEmpty { return }
        var changes = indexAdds
        if indexLogCount > 0 {
            let log = try db.cached("SELECT idx, kind, value, name, present FROM field_index_log ORDER BY id")
            defer { log.reset() }  // a statement left on a row would pin this connection's read snapshot
            var rank = 0
            while try log.step() {
                changes.append(
                    IndexChange(
                        index: log.int64(0), kind: log.int(1), value: IndexValue(column: 2, of: log),
                        name: log.text(3), order: 2 * rank + 1, present: log.int(4) != 0))
                rank += 1
            }
        }
        if indexLogCount == 0 {
            // Additions only: every entry ends present, so grouping by value is all there is to
            // do (a name twice in a run is harmless: runs are read into a set).
            var groups = [IndexedValue: [String]]()
            for a in changes { groups[a.key, default: []].append(a.name) }
            for (key, names) in groups.sorted(by: { IndexedValue.compare($0.key, $1.key) < 0 }) {
                try applyIndexChanges(key, added: names, removed: [])
            }
        } else {
            changes.sort(by: IndexChange.sortsBefore)
            var start = 0
            while start < changes.count {
                var end = start + 1
                while end < changes.count && IndexedValue.compare(changes[start].key, changes[end].key) == 0 {
                    end += 1
                }
                // The group is sorted by name, then order: each name's last change counts.
                var added = [String](), removed = [String]()
                var i = start
                while i < end {
                    var j = i + 1
                    while j < end && UTF8Order.equal(changes[j].name, changes[i].name) { j += 1 }
                    if changes[j - 1].present { added.append(changes[i].name) } else { removed.append(changes[i].name) }
                    i = j
                }
                try applyIndexChanges(changes[start].key, added: added, removed: removed)
                start = end
            }
        }
        try db.execute("DELETE FROM field_index_log")
        try saveIndexProgress()
        indexLogCount = 0
        // Kept until the transaction commits: a rollback queues them again.
        if txFlushedAdds.isEmpty {
            swap(&txFlushedAdds, &indexAdds)
        } else {
            txFlushedAdds.append(contentsOf: indexAdds)
        }
        indexAdds = []
    }

    /// Makes the names in `added` present and those in `removed` absent under one value.
    private func applyIndexChanges(_ first: IndexedValue, added: [String], removed: [String]) throws(ShoalError) {
        func bindValue(_ s: SQLiteStatement) -> SQLiteStatement {
            s.bind(1, first.index).bind(2, first.kind)
            first.value.bind(s, 3)
            return s
        }
        let runs = try bindValue(
            db.cached("SELECT run FROM field_postings WHERE idx = ? AND kind = ? AND value = ? ORDER BY run"))
        var runCount = 0, lastRun: Int64 = 0
        while try runs.step() {
            runCount += 1
            lastRun = runs.int64(0)
        }
        runs.reset()
        let insert = try bindValue(
            db.cached("INSERT INTO field_postings(idx, kind, value, run, names) VALUES(?, ?, ?, ?, ?)"))
        if removed.isEmpty && runCount < Self.maxRunsPerValue {
            if added.isEmpty { return }
            guard lastRun < Int64.max else {
                throw .internalError("index \(first.index) has a run numbered \(lastRun); the store is damaged")
            }
            try insert.bind(4, lastRun + 1).bind(5, PostingList.encode(added)).runAndRewind()
            return
        }
        // One run from all of them: stored names, less the removed (and the re-added, which
        // are appended again), then the additions. Without removals the runs' bytes are
        // concatenated as they are (a name twice is harmless; the next merge with a removal
        // drops the copy).
        var merged = [UInt8]()
        if runCount > 0 {
            let dropped = removed.isEmpty ? Set<String>() : Set(removed).union(added)
            let stored = try bindValue(
                db.cached("SELECT names FROM field_postings WHERE idx = ? AND kind = ? AND value = ?"))
            defer { stored.reset() }
            while try stored.step() {
                try stored.withBlob(0) { (raw) throws(ShoalError) in
                    if dropped.isEmpty { merged.append(contentsOf: raw); return }
                    try PostingList.forEach(raw, index: first.index) { name in
                        if !dropped.contains(name) { PostingList.append(name, to: &merged) }
                    }
                }
            }
            stored.reset()
            try bindValue(db.cached("DELETE FROM field_postings WHERE idx = ? AND kind = ? AND value = ?"))
                .runAndRewind()
        }
        for name in added { PostingList.append(name, to: &merged) }
        if merged.isEmpty { return }
        try insert.bind(4, Int64(1)).bind(5, merged).runAndRewind()
    }

    /// Marks every zone with a declared index as indexed through its current sequence.
    private func saveIndexProgress() throws(ShoalError) {
        let s = try db.cached("INSERT OR REPLACE INTO index_progress(zone, seq) VALUES(?, ?)")
        for zone in indexedFieldsByZone.keys {
            guard let z = zones[zone], !z.deleted else { continue }
            try s.bind(1, z.row).bind(2, Int64(bitPattern: z.seq)).runAndRewind()
        }
    }

    /// The additions a flush would owe for records written since each indexed zone's
    /// `index_progress` (their current versions' indexed values), ordered at `order`: what was
    /// queued in memory when the store was last closed, or lost in a crash.
    static func pendingAdditions(
        _ db: SQLiteDatabase, zones: [RecordZone.ID: ZoneState],
        fields: [RecordZone.ID: [String: [IndexedField]]],
        limits: WireLimits, order: Int
    ) throws(ShoalError) -> [IndexChange] {
        var out = [IndexChange]()
        let progress = try db.statement("SELECT seq FROM index_progress WHERE zone = ?")
        let rows = try db.statement("SELECT name, type, bytes FROM records WHERE zone = ? AND seq > ? AND deleted = 0")
        for (zone, byType) in fields {
            guard let z = zones[zone], !z.deleted else { continue }
            progress.bind(1, z.row)
            let from = try progress.step() ? progress.int64(0) : 0
            progress.reset()
            if from >= Int64(bitPattern: z.seq) { continue }
            rows.bind(1, z.row).bind(2, from)
            defer { rows.reset() }
            while try rows.step() {
                guard let indexed = byType[rows.text(1)] else { continue }
                let name = rows.text(0)
                let r = try rows.withBlob(2) { (raw) throws(ShoalError) -> Record in
                    try decodeRow(raw, zone: zone, name: name, limits: limits)
                }
                for f in indexed {
                    guard let v = r[f.field] else { continue }
                    for (kind, value) in IndexValue.entries(v) {
                        out.append(
                            IndexChange(index: f.id, kind: kind, value: value, name: name, order: order, present: true))
                    }
                }
            }
            rows.reset()
        }
        return out
    }

    /// Rows of `field_index_log` as the store counts them and as the table holds them (tests check
    /// that rollbacks keep the two equal).
    package func indexLogRows() throws(ShoalError) -> (counted: Int, stored: Int) {
        let s = try db.statement("SELECT count(*) FROM field_index_log")
        defer { s.reset() }
        return (indexLogCount, try s.step() ? s.int(0) : -1)
    }

    /// Additions queued in memory (tests check that rollbacks drop theirs).
    package var pendingIndexAdditions: Int { indexAdds.count }

    /// Applies pending index changes before `field_postings` is read (its own write transaction).
    func flushIndexLogForRead() throws(ShoalError) {
        if indexLogCount == 0 && indexAdds.isEmpty { return }
        try writeTransaction { () throws(ShoalError) in try flushIndexLog() }
    }

    static func isIdentifier(_ s: String) -> Bool {
        guard let f = s.utf8.first, (f | 0x20) >= 97 && (f | 0x20) <= 122, s.utf8.count <= 255 else { return false }
        return s.utf8.allSatisfy { ($0 | 0x20) >= 97 && ($0 | 0x20) <= 122 || (48...57).contains($0) || $0 == 95 }
    }
}
