// BatchBody: the part of a `changes` or `live-changes` payload after its header — the record
// count, the whole records, and the sparse section (Spec/replication.md §3.5, §3.5.4).

/// Sizes and writes a batch's body: `count` whole records (decoded, or given as their stored
/// encodings back to back) and, when there are any, `sparse` records against `base`.
enum BatchBody {
    static func size(
        records: [Record], sparse: [SparseRecord], base: VersionVector?, reference: VersionVector? = nil,
        zone: RecordZone.ID
    ) -> Int {
        var size = WireSize.varint(UInt64(records.count))
        for r in records { size &+= r.encodedSize }
        return size &+ sparseSize(sparse, base: base, reference: reference, zone: zone)
    }

    static func size(
        count: Int, recordBytes: [UInt8], sparse: [SparseRecord], base: VersionVector?, reference: VersionVector? = nil,
        zone: RecordZone.ID
    ) -> Int {
        WireSize.varint(UInt64(count)) &+ recordBytes.count
            &+ sparseSize(sparse, base: base, reference: reference, zone: zone)
    }

    static func write(
        records: [Record], sparse: [SparseRecord], base: VersionVector?, reference: VersionVector? = nil,
        zone: RecordZone.ID,
        into w: inout WireWriter
    ) {
        w.writeVarint(UInt64(records.count))
        for r in records { r.encode(into: &w) }
        writeSparse(sparse, base: base, reference: reference, zone: zone, into: &w)
    }

    static func write(
        count: Int, recordBytes: [UInt8], sparse: [SparseRecord], base: VersionVector?, reference: VersionVector? = nil,
        zone: RecordZone.ID, into w: inout WireWriter
    ) {
        w.writeVarint(UInt64(count))
        recordBytes.withUnsafeBytes { w.writeRaw($0) }
        writeSparse(sparse, base: base, reference: reference, zone: zone, into: &w)
    }

    /// The sparse section's size; its base is written against `reference` when there is one.
    private static func sparseSize(
        _ sparse: [SparseRecord], base: VersionVector?, reference: VersionVector?, zone: RecordZone.ID
    ) -> Int {
        sparse.isEmpty ? 0 : SparseSection.size(sparse, base: base ?? VersionVector(), reference: reference, zone: zone)
    }

    private static func writeSparse(
        _ sparse: [SparseRecord], base: VersionVector?, reference: VersionVector?, zone: RecordZone.ID,
        into w: inout WireWriter
    ) {
        if !sparse.isEmpty {
            SparseSection.write(sparse, base: base ?? VersionVector(), reference: reference, zone: zone, into: &w)
        }
    }

    /// Reads a body: the record count (at most `maxMessageItems`, each record at least a byte),
    /// the records — each in `zone`, `invalid_value` at its first byte otherwise, naming `what`
    /// holds them — with their byte ranges appended to `recordRanges`, and, when `sparse`, the
    /// sparse section (its base written against `reference` when there is one).
    static func read(
        from r: inout WireReader, zone: RecordZone.ID, sparse: Bool, reference: VersionVector? = nil, what: String,
        recordRanges: inout [Range<Int>]?
    ) throws(WireError) -> (records: [Record], sparse: [SparseRecord], base: VersionVector?) {
        let count = try r.readCount(max: r.limits.maxMessageItems, "record count", limitName: "maxMessageItems")
        try r.require(count, "\(count) records")
        var records = [Record]()
        records.reserveCapacity(min(count, 4096))
        for _ in 0..<count {
            let at = r.offset
            let record = try Record(reading: &r)
            guard record.id.zone == zone else {
                throw WireError(.invalidValue, at: at, "record \(record.id) is not in zone \(zone) of \(what)")
            }
            records.append(record)
            recordRanges?.append(at..<r.offset)
        }
        guard sparse else { return (records, [], nil) }
        let (base, items) = try SparseSection.read(from: &r, reference: reference, zone: zone)
        return (records, items, base)
    }
}
