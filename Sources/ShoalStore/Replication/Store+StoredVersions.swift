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

    /// The version each record held before its stored one (the `previous` column), for the IDs
    /// that have one. A sparse record that cannot be rebuilt on the stored version, because this
    /// node wrote the record since, may be rebuilt on the one before (Spec/replication.md §3.5.1).
    package func previousVersions(of ids: [Record.ID]) throws(ShoalError) -> [Record.ID: Record] {
        var out = [Record.ID: Record]()
        for id in ids {
            let z = try liveZone(id.zone)
            if let p = try loadPrevious(z, id.name) { out[id] = p }
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
        guard let (z, after) = try feedPosition(zone, after: token) else { return nil }
        let s = try db.statement("SELECT COUNT(*) FROM records WHERE zone = ? AND seq > ?")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, Int64(bitPattern: after))
        guard try s.step() else { return nil }
        return Int(s.int64(0))
    }

    /// What ``remainingChanges(in:after:quickLimit:)`` found.
    package enum RemainingCount: Sendable {
        /// Counted (nil: the token is not a position in this store's change log).
        case counted(Int?)
        /// More than the limit may remain: count with ``remainingChangesInBackground(in:after:)``.
        case long
    }

    /// ``remainingChanges(in:after:)`` when at most `quickLimit` changes can remain (the zone's
    /// change sequence minus the token's bounds them), so the count is quick; `.long` otherwise.
    package func remainingChanges(in zone: RecordZone.ID, after token: ChangeToken?, quickLimit: UInt64)
        throws(ShoalError) -> RemainingCount
    {
        guard let (z, after) = try feedPosition(zone, after: token) else { return .counted(nil) }
        return z.seq &- after <= quickLimit ? .counted(try remainingChanges(in: zone, after: token)) : .long
    }

    /// ``remainingChanges(in:after:)`` counted on the store's background reader (its own
    /// connection and thread), so the store serves other calls meanwhile.
    package func remainingChangesInBackground(in zone: RecordZone.ID, after token: ChangeToken?)
        async throws(ShoalError) -> Int?
    {
        guard let (z, after) = try feedPosition(zone, after: token) else { return nil }
        return await db.reader.countChanges(zone: z.row, after: after)
    }

    /// The zone and the change sequence `token` resumes after (0 for nil); nil when the token is
    /// not a position in this store's change log.
    private func feedPosition(_ zone: RecordZone.ID, after token: ChangeToken?) throws(ShoalError) -> (
        ZoneState, UInt64
    )? {
        let z = try liveZone(zone)
        guard let token else { return (z, 0) }
        guard let c = try? token.contents(limits: configuration.limits), c.incarnation == z.incarnation,
            let cur = c.cursor, cur.source == incarnation, cur.sequence <= z.seq
        else { return nil }
        return (z, cur.sequence)
    }
}
