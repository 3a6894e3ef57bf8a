// Store+Indexes: declared secondary indexes — (zone, record type, field) → typed values → records.

public import ShoalWire

/// A declared secondary index: one field of one record type in one zone.
struct IndexKey: Hashable, Sendable {
    var zone: RecordZone.ID
    var recordType: String
    var field: String

    static func loadAll(_ db: SQLiteDatabase) throws(ShoalError) -> Set<IndexKey> {
        let s = try db.statement("SELECT z.name, z.owner, d.type, d.field FROM index_decls d JOIN zones z ON z.id = d.zone")
        var out = Set<IndexKey>()
        while try s.step() {
            out.insert(IndexKey(zone: RecordZone.ID(name: s.text(0), owner: s.text(1)), recordType: s.text(2), field: s.text(3)))
        }
        return out
    }
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
        if indexes.contains(key) { return }
        try writeTransaction { () throws(ShoalError) in
            try db.statement("INSERT OR IGNORE INTO index_decls(zone, type, field) VALUES(?, ?, ?)")
                .bind(1, z.row).bind(2, recordType).bind(3, field).run()
            indexes.insert(key)
            let s = try db.statement("SELECT name, bytes FROM records WHERE zone = ? AND type = ? AND deleted = 0")
            s.bind(1, z.row).bind(2, recordType)
            var records = [Record]()
            while try s.step() {
                let name = s.text(0)
                records.append(try s.withBlob(1) { (raw) throws(ShoalError) -> Record in try decodeRow(raw, zone: zone, name: name) })
            }
            let ins = try db.statement("INSERT OR IGNORE INTO field_index(zone, type, field, kind, value, name) VALUES(?, ?, ?, ?, ?, ?)")
            for r in records {
                guard let v = r[field] else { continue }
                for (kind, value) in IndexValue.entries(v) {
                    ins.bind(1, z.row).bind(2, recordType).bind(3, field).bind(4, kind)
                    value.bind(ins, 5)
                    try ins.bind(6, r.id.name).run()
                    ins.reset()
                }
            }
        }
    }

    /// The indexed fields of `recordType` in `zone`.
    func indexedFields(_ zone: RecordZone.ID, _ recordType: String) -> [String] {
        indexedFieldsByZone[zone]?[recordType] ?? []
    }

    /// ``indexes`` grouped by zone and record type, for the write path.
    static func fieldsByZone(_ keys: Set<IndexKey>) -> [RecordZone.ID: [String: [String]]] {
        var out = [RecordZone.ID: [String: [String]]]()
        for k in keys { out[k.zone, default: [:]][k.recordType, default: []].append(k.field) }
        return out
    }

    /// Keeps `field_index` in step with a record's new version: entries of values that changed
    /// are removed and the new ones inserted; unchanged values are not touched.
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
                guard let o = liveOld[f] else { continue }
                if sameType && newFields.contains(f) && new[f] == o { continue }
                let del = try db.cached("DELETE FROM field_index WHERE zone = ? AND type = ? AND field = ? AND kind = ? AND value = ? AND name = ?")
                for (kind, value) in IndexValue.entries(o) {
                    del.bind(1, z.row).bind(2, liveOld.recordType).bind(3, f).bind(4, kind)
                    value.bind(del, 5)
                    try del.bind(6, name).run()
                    del.reset()
                }
            }
        }
        for f in newFields {
            guard let n = new[f] else { continue }
            if sameType, let liveOld, liveOld[f] == n { continue }
            let ins = try db.cached("INSERT OR IGNORE INTO field_index(zone, type, field, kind, value, name) VALUES(?, ?, ?, ?, ?, ?)")
            for (kind, value) in IndexValue.entries(n) {
                ins.bind(1, z.row).bind(2, new.recordType).bind(3, f).bind(4, kind)
                value.bind(ins, 5)
                try ins.bind(6, name).run()
                ins.reset()
            }
        }
    }

    static func isIdentifier(_ s: String) -> Bool {
        guard let f = s.utf8.first, (f | 0x20) >= 97 && (f | 0x20) <= 122, s.utf8.count <= 255 else { return false }
        return s.utf8.allSatisfy { ($0 | 0x20) >= 97 && ($0 | 0x20) <= 122 || (48...57).contains($0) || $0 == 95 }
    }
}
