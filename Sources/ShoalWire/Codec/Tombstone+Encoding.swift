// Tombstone+Encoding: the canonical bytes of a tombstone (type, ID, vector, deleting write).

extension Tombstone {
    /// The tombstone's canonical bytes: record type, record name, zone name, zone owner, the
    /// plain version vector, then the deleting write as a stamp against that vector.
    public func encoded() -> [UInt8] {
        let size =
            WireSize.string(recordType) + WireSize.string(id.name) + WireSize.string(id.zone.name)
            + WireSize.string(id.zone.owner) + WireSize.plainVector(versionVector)
            + StampCoding.size(deletion, in: versionVector)
        return WireWriter.encode(size: size) { w in
            w.writeString(recordType)
            w.writeString(id.name)
            w.writeString(id.zone.name)
            w.writeString(id.zone.owner)
            w.writePlainVector(versionVector)
            StampCoding.write(deletion, in: versionVector, into: &w)
        }
    }

    /// Decodes a tombstone.
    /// - Throws: ``WireError`` for malformed or non-canonical input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        let result: Result<Tombstone, WireError> = bytes.withUnsafeBytes { raw in
            var r = WireReader(raw, limits: limits)
            do throws(WireError) {
                let type = try r.readIdentifier("record type", max: limits.maxNameBytes, limitName: "maxNameBytes")
                let name = try r.readName("record name")
                let zone = RecordZone.ID(name: try r.readName("zone name"), owner: try r.readName("zone owner"))
                let vvAt = r.offset
                let vv = try r.readPlainVector("tombstone vector")
                guard !vv.isEmpty else {
                    throw WireError(.invalidValue, at: vvAt, "a tombstone's vector has at least the deleting write")
                }
                let deletion = try r.readStamp(vv, "deletion stamp")
                try r.expectEnd("the tombstone")
                return .success(
                    Tombstone(
                        id: Record.ID(name: name, zone: zone), recordType: type, versionVector: vv, deletion: deletion))
            } catch { return .failure(error) }
        }
        self = try result.get()
    }
}
