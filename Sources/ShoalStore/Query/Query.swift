// Query: a record type, a predicate and a sort order; QueryCursor resumes a paged query.

public import ShoalWire

/// A query over one record type in one zone.
public struct Query: Sendable, Hashable {
    /// What a query sorts by.
    public enum SortKey: Sendable, Hashable {
        /// A field's value (records without it first when ascending).
        case field(String)
        /// When the record was created.
        case creationDate
        /// When the newest write the record has seen was made.
        case modificationDate
        /// The record's name.
        case recordName
    }

    /// One sort criterion.
    public struct SortDescriptor: Sendable, Hashable {
        /// What to sort by.
        public var key: SortKey
        /// Ascending (default) or descending.
        public var ascending: Bool
        /// Creates a sort criterion.
        public init(_ key: SortKey, ascending: Bool = true) {
            self.key = key
            self.ascending = ascending
        }
    }

    /// The record type queried.
    public var recordType: String
    /// The condition records must meet.
    public var predicate: Predicate
    /// The order of results; ties (and the end of the list) are broken by record name.
    public var sortDescriptors: [SortDescriptor]

    /// Creates a query.
    public init(recordType: String, predicate: Predicate = .all, sortDescriptors: [SortDescriptor] = []) {
        self.recordType = recordType
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
    }

    func sortValues(_ r: Record) -> [FieldValue?] {
        sortDescriptors.map { d in
            switch d.key {
            case .field(let f): return r[f]
            case .creationDate: return r.creation.map { .int64(Int64(bitPattern: $0.hlc.rawValue)) }
            case .modificationDate: return r.versionVector.latest.map { .int64(Int64(bitPattern: $0.hlc.rawValue)) }
            case .recordName: return .string(r.id.name)
            }
        }
    }

    /// Compares two positions (sort values, then record name).
    func compare(_ a: ([FieldValue?], String), _ b: ([FieldValue?], String)) -> Int {
        for (i, d) in sortDescriptors.enumerated() {
            let c = ValueOrder.compare(a.0[i], b.0[i])
            if c != 0 { return d.ascending ? c : -c }
        }
        return UTF8Order.compare(a.1, b.1)
    }
}

/// Where a paged query resumes: after the last record returned, by the query's order, so
/// changes between pages neither repeat nor skip unchanged records.
public struct QueryCursor: Sendable, Hashable {
    /// The query being paged.
    public let query: Query
    /// Its zone.
    public let zone: RecordZone.ID
    let lastSortValues: [FieldValue?]
    let lastName: String
}

/// One page of query results.
public struct QueryResult: Sendable {
    /// The matching records, in the query's order.
    public var records: [Record]
    /// Pass this to ``Store/records(continuing:desiredKeys:resultsLimit:)`` for the next page; nil
    /// when there is none.
    public var cursor: QueryCursor?
}
