// BatchBody: the part of a `changes` or `live-changes` payload after its header — the record
// count, the whole records, and the sparse section (Spec/replication.md §3.5, §3.5.4).

/// Sizes and writes a batch's body: `count` whole records (decoded, or given as their stored
/// encodings back to back) and, when there are any, `sparse` records against `base`.
enum BatchBody {
    static func size(records: [Record], sparse: [SparseRecord], base: VersionVector?, zone: RecordZone.ID) -> Int {
        var size = WireSize.varint(UInt64(records.count))
        for r in records { size &+= r.encodedSize }
        return size &+ sparseSize(sparse, base: base, zone: zone)
    }

    static func size(count: Int, recordBytes: [UInt8], sparse: [SparseRecord], base: VersionVector?, zone: RecordZone.ID) -> Int {
        WireSize.varint(UInt64(count)) &+ recordBytes.count &+ sparseSize(sparse, base: base, zone: zone)
    }

    static func write(records: [Record], sparse: [SparseRecord], base: VersionVector?, zone: RecordZone.ID, into w: inout WireWriter) {
        w.writeVarint(UInt64(records.count))
        for r in records { r.encode(into: &w) }
        writeSparse(sparse, base: base, zone: zone, into: &w)
    }

    static func write(count: Int, recordBytes: [UInt8], sparse: [SparseRecord], base: VersionVector?, zone: RecordZone.ID, into w: inout WireWriter) {
        w.writeVarint(UInt64(count))
        recordBytes.withUnsafeBytes { w.writeRaw($0) }
        writeSparse(sparse, base: base, zone: zone, into: &w)
    }

    private static func sparseSize(_ sparse: [SparseRecord], base: VersionVector?, zone: RecordZone.ID) -> Int {
        sparse.isEmpty ? 0 : SparseSection.size(sparse, base: base ?? VersionVector(), zone: zone)
    }

    private static func writeSparse(_ sparse: [SparseRecord], base: VersionVector?, zone: RecordZone.ID, into w: inout WireWriter) {
        if !sparse.isEmpty { SparseSection.write(sparse, base: base ?? VersionVector(), zone: zone, into: &w) }
    }
}
