// Store+StoredVersions: the stored versions (live or tombstone) replication rebuilds sparse records onto.

public import ShoalWire

extension Store {
    /// The stored version of each record of `ids` that has one — live, or a tombstone that keeps
    /// its last fields. Records never stored here, or purged, are absent from the result.
    /// - Throws: `zoneNotFound`; `internalError` for a damaged row.
    package func storedVersions(of ids: [Record.ID]) throws(ShoalError) -> [Record.ID: Record] {
        var out = [Record.ID: Record]()
        out.reserveCapacity(ids.count)
        for id in ids {
            let z = try liveZone(id.zone)
            if let s = try loadStored(z, id.name)?.record { out[id] = s }
        }
        return out
    }
}
