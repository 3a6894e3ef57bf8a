// Store+Query: running queries — candidates from a declared index when one applies, else a scan
// of the record type; then the full predicate, the sort and the page.

public import ShoalWire

extension Store {
    /// Largest `resultsLimit`.
    public static let maxResultsLimit = 10_000

    /// Runs `query` in `zone` and returns the first page.
    ///
    /// When a conjunct of the predicate constrains a field with a declared index
    /// (``declareIndex(zone:recordType:field:)``) by `==`, `IN`, `CONTAINS`, `BEGINSWITH` or a
    /// range, only the records the index names are read; otherwise every record of the type is.
    /// - Parameters:
    ///   - desiredKeys: when given, only these fields are returned.
    ///   - resultsLimit: records per page, 1…``maxResultsLimit``.
    /// - Throws: `zoneNotFound`; `invalidArguments` for a bad limit or record type.
    public func records(
        matching query: Query, in zone: RecordZone.ID, desiredKeys: [String]? = nil,
        resultsLimit: Int = 100
    ) throws(ShoalError) -> QueryResult {
        try runQuery(query, zone: zone, after: nil, desiredKeys: desiredKeys, limit: resultsLimit)
    }

    /// The next page of a query.
    /// - Throws: as ``records(matching:in:desiredKeys:resultsLimit:)``.
    public func records(continuing cursor: QueryCursor, desiredKeys: [String]? = nil, resultsLimit: Int = 100)
        throws(ShoalError) -> QueryResult
    {
        try runQuery(
            cursor.query, zone: cursor.zone, after: (cursor.lastSortValues, cursor.lastName), desiredKeys: desiredKeys,
            limit: resultsLimit)
    }

    func runQuery(_ q: Query, zone: RecordZone.ID, after: ([FieldValue?], String)?, desiredKeys: [String]?, limit: Int)
        throws(ShoalError) -> QueryResult
    {
        let z = try liveZone(zone)
        guard (1...Self.maxResultsLimit).contains(limit) else {
            throw .invalidArguments(
                "resultsLimit \(limit) for a query on \(q.recordType) must be 1…\(Self.maxResultsLimit); page with the returned cursor"
            )
        }
        guard Self.isIdentifier(q.recordType) else {
            throw .invalidArguments("query record type \(q.recordType.debugDescription) is not a valid record type")
        }
        var matches = [(key: [FieldValue?], record: Record)]()
        var decoded = 0
        func consider(_ r: Record) {
            decoded += 1
            guard !r.isDeleted, r.recordType == q.recordType, q.predicate.evaluate(r) else { return }
            let key = q.sortValues(r)
            if let after, q.compare((key, r.id.name), after) <= 0 { return }
            matches.append((key, r))
        }
        if let names = try indexCandidates(q, z) {
            let get = try db.statement("SELECT bytes FROM records WHERE zone = ? AND name = ?")
            defer { get.reset() }
            for name in names.sorted() {
                get.reset()
                get.bind(1, z.row).bind(2, name)
                guard try get.step() else { continue }
                consider(
                    try get.withBlob(0) { (raw) throws(ShoalError) -> Record in
                        try decodeRow(raw, zone: zone, name: name)
                    })
            }
        } else {
            let s = try db.statement("SELECT name, bytes FROM records WHERE zone = ? AND type = ? AND deleted = 0")
            s.bind(1, z.row).bind(2, q.recordType)
            while try s.step() {
                let name = s.text(0)
                consider(
                    try s.withBlob(1) { (raw) throws(ShoalError) -> Record in try decodeRow(raw, zone: zone, name: name)
                    })
            }
        }
        lastQueryDecodeCount = decoded
        matches.sort { q.compare(($0.key, $0.record.id.name), ($1.key, $1.record.id.name)) < 0 }
        let page = matches.prefix(limit)
        let cursor =
            matches.count > limit
            ? page.last.map {
                QueryCursor(query: q, zone: zone, lastSortValues: $0.key, lastName: $0.record.id.name)
            } : nil
        return QueryResult(records: page.map { Self.project($0.record, desiredKeys) }, cursor: cursor)
    }

    /// Names of candidate records from a declared index, or nil when no conjunct can use one.
    func indexCandidates(_ q: Query, _ z: ZoneState) throws(ShoalError) -> Set<String>? {
        var fields = [String: Int64]()
        for f in indexedFields(z.id, q.recordType) { fields[f.field] = f.id }
        if fields.isEmpty { return nil }
        try flushIndexLogForRead()
        for c in q.predicate.conjuncts {
            switch c {
            case let .compare(f, op, v) where fields[f] != nil && op != .notEqual:
                guard let x = IndexValue.scalar(v) else { continue }
                let sql: String
                switch op {
                case .equal: sql = "= ?"
                case .less: sql = "< ?"
                case .lessOrEqual: sql = "<= ?"
                case .greater: sql = "> ?"
                default: sql = ">= ?"
                }
                return try indexNames(fields[f] ?? 0, kind: v.kind, condition: "value \(sql)", [x])
            case let .between(f, lo, hi) where fields[f] != nil && lo.kind == hi.kind:
                guard let a = IndexValue.scalar(lo), let b = IndexValue.scalar(hi) else { continue }
                return try indexNames(fields[f] ?? 0, kind: lo.kind, condition: "value >= ? AND value <= ?", [a, b])
            case let .isIn(f, vs) where fields[f] != nil:
                var out = Set<String>()
                for v in vs {
                    guard let x = IndexValue.scalar(v) else { return nil }
                    out.formUnion(try indexNames(fields[f] ?? 0, kind: v.kind, condition: "value = ?", [x]))
                }
                return out
            case let .contains(f, v) where fields[f] != nil:
                guard let x = IndexValue.scalar(v) else { continue }
                return try indexNames(fields[f] ?? 0, kind: v.kind, condition: "value = ?", [x])
            case let .beginsWith(f, p) where fields[f] != nil:
                let index = fields[f] ?? 0
                var out = Set<String>()
                let s = try db.statement(
                    "SELECT names, value FROM field_postings WHERE idx = ? AND kind = ? AND value >= ? ORDER BY value")
                defer { s.reset() }
                s.bind(1, index).bind(2, Int(FieldValue.Kind.string.rawValue)).bind(3, p)
                while try s.step() {
                    guard s.text(1).utf8.starts(with: p.utf8) else { break }
                    try s.withBlob(0) { (raw) throws(ShoalError) in
                        try PostingList.forEach(raw, index: index) { out.insert($0) }
                    }
                }
                return out
            default:
                continue
            }
        }
        return nil
    }

    /// Names of records whose entry in index `index` (of values of `kind`) meets `condition`.
    func indexNames(_ index: Int64, kind: FieldValue.Kind, condition: String, _ values: [IndexValue]) throws(ShoalError)
        -> Set<String>
    {
        let s = try db.statement("SELECT names FROM field_postings WHERE idx = ? AND kind = ? AND \(condition)")
        defer { s.reset() }
        s.bind(1, index).bind(2, Int(kind.rawValue))
        for (i, v) in values.enumerated() { v.bind(s, Int32(3 + i)) }
        var out = Set<String>()
        while try s.step() {
            try s.withBlob(0) { (raw) throws(ShoalError) in
                try PostingList.forEach(raw, index: index) { out.insert($0) }
            }
        }
        return out
    }
}
