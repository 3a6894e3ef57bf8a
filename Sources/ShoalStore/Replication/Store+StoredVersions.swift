// Store+StoredVersions: the stored versions (live or tombstone) replication rebuilds sparse records onto.

package import ShoalWire

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

extension Store {
    /// At most how many changes ``changes(in:since:limit:)`` still has for `zone` after `token`
    /// (nil: from the beginning), for progress displays; nil when the token is not a position in
    /// this store's change log.
    /// - Throws: `zoneNotFound`.
    package func remainingChanges(in zone: RecordZone.ID, after token: ChangeToken?) throws(ShoalError) -> Int? {
        let z = try liveZone(zone)
        var after: UInt64 = 0
        if let token {
            guard let c = try? token.contents(limits: configuration.limits), c.incarnation == z.incarnation,
                  let cur = c.cursor, cur.source == incarnation, cur.sequence <= z.seq else { return nil }
            after = cur.sequence
        }
        let s = try db.statement("SELECT COUNT(*) FROM records WHERE zone = ? AND seq > ?")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, Int64(bitPattern: after))
        guard try s.step() else { return nil }
        return Int(s.int64(0))
    }
}
