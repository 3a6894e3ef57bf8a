// Store+Indexes: declared secondary indexes — (zone, record type, field) → typed values → records.

public import ShoalWire

/// A declared secondary index: one field of one record type in one zone.
struct IndexKey: Hashable, Sendable {
    var zone: RecordZone.ID
    var recordType: String
    var field: String

    /// Every declared index with its ID (`index_decls.id`, which names it in its entries).
    static func loadAll(_ db: SQLiteDatabase) throws(ShoalError) -> [IndexKey: Int64] {
        let s = try db.statement("SELECT z.name, z.owner, d.type, d.field, d.id FROM index_decls d JOIN zones z ON z.id = d.zone")
        var out = [IndexKey: Int64]()
        while try s.step() {
            out[IndexKey(zone: RecordZone.ID(name: s.text(0), owner: s.text(1)), recordType: s.text(2), field: s.text(3))] = s.int64(4)
        }
        return out
    }
}

/// A declared index's field and ID, as the write path looks them up by zone and record type.
struct IndexedField: Hashable, Sendable {
    var field: String
    var id: Int64
}

/// A value as the `field_index` table stores it: SQLite's own types, so ranges use the index.
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
            throw .invalidArguments("index on \(recordType).\(field): record types and field names start with a letter and contain only letters, digits and _")
        }
        let key = IndexKey(zone: zone, recordType: recordType, field: field)
        if indexes[key] != nil { return }
        try writeTransaction { () throws(ShoalError) in
            try db.statement("INSERT INTO index_decls(zone, type, field) VALUES(?, ?, ?)")
                .bind(1, z.row).bind(2, recordType).bind(3, field).run()
            let id = db.lastInsertRowID
            indexes[key] = id
            try logEntries(of: IndexedField(field: field, id: id), recordType: recordType, in: z)
        }
    }

    /// Logs an entry for every value of `field` held by a live `recordType` record of `z` (an
    /// index being built; the next flush applies them).
    func logEntries(of field: IndexedField, recordType: String, in z: ZoneState) throws(ShoalError) {
        try insertPendingRows()
        let s = try db.statement("SELECT name, bytes FROM records WHERE zone = ? AND type = ? AND deleted = 0")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, recordType)
        var records = [Record]()
        while try s.step() {
            let name = s.text(0)
            records.append(try s.withBlob(1) { (raw) throws(ShoalError) -> Record in try decodeRow(raw, zone: z.id, name: name) })
        }
        s.reset()
        for r in records {
            guard let v = r[field.field] else { continue }
            for (kind, value) in IndexValue.entries(v) {
                try addLogRow(.init(index: field.id, kind: kind, value: value, name: r.id.name, present: true))
            }
        }
    }

    /// The indexed fields of `recordType` in `zone`.
    func indexedFields(_ zone: RecordZone.ID, _ recordType: String) -> [IndexedField] {
        indexedFieldsByZone[zone]?[recordType] ?? []
    }

    /// ``indexes`` grouped by zone and record type, for the write path.
    static func fieldsByZone(_ keys: [IndexKey: Int64]) -> [RecordZone.ID: [String: [IndexedField]]] {
        var out = [RecordZone.ID: [String: [IndexedField]]]()
        for (k, id) in keys { out[k.zone, default: [:]][k.recordType, default: []].append(IndexedField(field: k.field, id: id)) }
        return out
    }

    /// Logs the index changes a record's new version makes: entries of values that changed are
    /// removed and the new ones added; unchanged values are not touched.
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
            for (kind, value) in IndexValue.entries(n) {
                try addLogRow(.init(index: f.id, kind: kind, value: value, name: name, present: true))
            }
        }
    }

    /// Applies `field_index_log` to `field_index`, inside the current write transaction, and
    /// empties it. Each entry ends as its last logged change left it (adding and removing an entry
    /// both set its presence, so the last one wins whatever was there), and entries are written
    /// in key order, so every page of the index is written once per batch.
    ///
    /// A log of additions only (bulk saves, initial syncs) is one statement: every logged entry is
    /// present in the end. Otherwise the log is read once, sorted by key and then by log order,
    /// and every change is applied in that order, so each key's last change is applied last;
    /// each row is bound straight from the log's columns, nothing is converted on the way.
    func flushIndexLog() throws(ShoalError) {
        try insertPendingRows()
        if indexLogCount == 0 { return }
        let removals = try db.cached("SELECT EXISTS(SELECT 1 FROM field_index_log WHERE present = 0)")
        let anyRemoval = try removals.step() && removals.int64(0) != 0
        removals.reset()
        if !anyRemoval {
            try db.cached("""
                INSERT OR IGNORE INTO field_index(idx, kind, value, name)
                SELECT idx, kind, value, name FROM field_index_log ORDER BY idx, kind, value, name
                """).run()
        } else {
            let log = try db.cached("SELECT idx, kind, value, name, present FROM field_index_log ORDER BY idx, kind, value, name, id")
            defer { log.reset() }  // a statement left on a row would pin this connection's read snapshot
            let add = try db.cached("INSERT OR IGNORE INTO field_index(idx, kind, value, name) VALUES(?, ?, ?, ?)")
            let remove = try db.cached("DELETE FROM field_index WHERE idx = ? AND kind = ? AND value = ? AND name = ?")
            while try log.step() {
                let s = log.int64(4) != 0 ? add : remove
                for c in Int32(0)..<4 { s.bind(c + 1, column: c, of: log) }
                try s.run()
                s.reset()
            }
        }
        try db.execute("DELETE FROM field_index_log")
        indexLogCount = 0
    }

    /// Rows of `field_index_log` as the store counts them and as the table holds them (tests check
    /// that rollbacks keep the two equal).
    package func indexLogRows() throws(ShoalError) -> (counted: Int, stored: Int) {
        let s = try db.statement("SELECT count(*) FROM field_index_log")
        defer { s.reset() }
        return (indexLogCount, try s.step() ? s.int(0) : -1)
    }

    /// Applies pending index changes before `field_index` is read (its own write transaction).
    func flushIndexLogForRead() throws(ShoalError) {
        if indexLogCount == 0 { return }
        try writeTransaction { () throws(ShoalError) in try flushIndexLog() }
    }

    static func isIdentifier(_ s: String) -> Bool {
        guard let f = s.utf8.first, (f | 0x20) >= 97 && (f | 0x20) <= 122, s.utf8.count <= 255 else { return false }
        return s.utf8.allSatisfy { ($0 | 0x20) >= 97 && ($0 | 0x20) <= 122 || (48...57).contains($0) || $0 == 95 }
    }
}
