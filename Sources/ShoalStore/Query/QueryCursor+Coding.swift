// QueryCursor+Coding: a query cursor as bytes an app or a command line can keep and hand back
// (a canonical ShoalWire record, as subscriptions are stored; no new format).

import ShoalWire

extension QueryCursor {
    /// The most bytes ``init(decoding:)`` reads: a cursor holds a query and one record's sort
    /// values, far below a record's limit.
    public static let maxEncodedBytes = 1 << 20

    /// The cursor as bytes, to keep between runs or hand to another program (`shoal query
    /// --cursor` prints them in base64url). ``init(decoding:)`` restores it.
    ///
    /// The bytes are one canonical record (Spec/wire-format.md §5) of type `QueryCursor`: the
    /// zone, the query (type, predicate and sort order) and the position after the last record
    /// returned. They are not secret and not signed: a cursor edited by hand pages a different
    /// query, as if that query had been written.
    public func encoded() -> [UInt8] {
        var r = Record(recordType: "QueryCursor", id: Record.ID(name: "cursor", zone: SubscriptionCoding.zone))
        r["zoneName"] = .string(zone.name)
        r["zoneOwner"] = .string(zone.owner)
        r["recordType"] = .string(query.recordType)
        r["predicate"] = .bytes(SubscriptionCoding.encode(query.predicate))
        r["sortCount"] = .int64(Int64(query.sortDescriptors.count))
        for (i, d) in query.sortDescriptors.enumerated() {
            switch d.key {
            case .field(let f): r["sortKey\(i)"] = .string(f)
            case .creationDate: r["sortKey\(i)"] = .int64(1)
            case .modificationDate: r["sortKey\(i)"] = .int64(2)
            case .recordName: r["sortKey\(i)"] = .int64(3)
            }
            r["sortAscending\(i)"] = .bool(d.ascending)
            if i < lastSortValues.count, let v = lastSortValues[i] { r["last\(i)"] = v }
        }
        r["lastName"] = .string(lastName)
        return r.encoded()
    }

    /// Restores a cursor from ``encoded()``.
    /// - Throws: `invalidArguments` when the bytes are longer than ``maxEncodedBytes`` or are
    ///   not a cursor's (damaged, cut short, or of another kind), naming what is wrong.
    public init(decoding bytes: [UInt8]) throws(ShoalError) {
        guard bytes.count <= Self.maxEncodedBytes else {
            throw .invalidArguments(
                "a query cursor of \(bytes.count) bytes is over the limit of \(Self.maxEncodedBytes); pass the cursor a query returned"
            )
        }
        let r: Record
        do { r = try Record(decoding: bytes) } catch {
            throw .invalidArguments(
                "the query cursor does not decode (\(error)); pass the cursor a query returned, whole")
        }
        func bad(_ what: String) -> ShoalError {
            .invalidArguments("the query cursor has \(what); pass the cursor a query returned, whole")
        }
        guard r.recordType == "QueryCursor" else { throw bad("the type \(r.recordType), not QueryCursor") }
        guard case .string(let zoneName)? = r["zoneName"], case .string(let zoneOwner)? = r["zoneOwner"] else {
            throw bad("no zone")
        }
        guard case .string(let recordType)? = r["recordType"] else { throw bad("no record type") }
        guard case .bytes(let predicateBytes)? = r["predicate"],
            let predicate = try? SubscriptionCoding.decodePredicate(predicateBytes, depth: 0)
        else { throw bad("a damaged predicate") }
        guard case .int64(let count)? = r["sortCount"], (0...64).contains(count) else {
            throw bad("no valid sort count")
        }
        guard case .string(let lastName)? = r["lastName"] else { throw bad("no position") }
        var sort = [Query.SortDescriptor]()
        var last = [FieldValue?]()
        for i in 0..<Int(count) {
            let key: Query.SortKey
            switch r["sortKey\(i)"] {
            case .string(let f)?: key = .field(f)
            case .int64(1)?: key = .creationDate
            case .int64(2)?: key = .modificationDate
            case .int64(3)?: key = .recordName
            default: throw bad("no valid sort key \(i)")
            }
            guard case .bool(let ascending)? = r["sortAscending\(i)"] else {
                throw bad("no direction for sort key \(i)")
            }
            sort.append(Query.SortDescriptor(key, ascending: ascending))
            last.append(r["last\(i)"])
        }
        self.init(
            query: Query(recordType: recordType, predicate: predicate, sortDescriptors: sort),
            zone: RecordZone.ID(name: zoneName, owner: zoneOwner), lastSortValues: last, lastName: lastName)
    }
}
