// Store+ZoneTombstones: which peers have announced each zone deletion, purging zone tombstones,
// and the purged incarnations kept so a deleted zone is not created again (Spec/replication.md §4.1).

public import ShoalWire

extension Store {
    /// Records what `peer` announced of the zones this store holds, live or deleted: its known
    /// peers of each zone, and whether each has announced the deletion this store holds
    /// (Spec/replication.md §4.1). Zones the store does not hold are ignored. Writes only what
    /// changed since the peer's last announcement.
    /// - Throws: `internalError` if SQLite fails.
    package func notePeerAnnouncements(_ announced: [ZoneAnnouncement], from peer: NodeID) throws(ShoalError) {
        let p = Bytes.nodeID(peer)
        let read = try db.statement("SELECT incarnation, deleted FROM zone_peers WHERE zone = ? AND peer = ?")
        var changed = [(row: Int64, announcement: ZoneAnnouncement)]()
        for a in announced {
            guard let z = zones[a.zone] else { continue }
            read.bind(1, z.row).bind(2, p)
            let same =
                try read.step() && Bytes.nodeID(read.blob(0)) == a.incarnation && (read.int(1) != 0) == a.isDeleted
            read.reset()
            if !same { changed.append((z.row, a)) }
        }
        guard !changed.isEmpty else { return }
        try writeTransaction(replication: true) { () throws(ShoalError) in
            let w = try db.statement(
                "INSERT OR REPLACE INTO zone_peers(zone, peer, incarnation, deleted) VALUES(?, ?, ?, ?)")
            for (row, a) in changed {
                w.bind(1, row).bind(2, p).bind(3, Bytes.nodeID(a.incarnation)).bind(4, a.isDeleted ? 1 : 0)
                try w.runAndRewind()
            }
        }
    }

    /// Purges the zone tombstones whose deletion every known peer of the zone has announced, or
    /// that are older than `retention` (Spec/replication.md §4.1): the zone's row goes, and only
    /// its ID, the purged incarnation and the deletion time are kept. The zone is then no longer
    /// announced, and a database change token older than the deletion gets `changeTokenExpired`.
    ///
    /// - Parameters:
    ///   - retention: how long a deletion waits for known peers that have not announced it; nil
    ///     waits for all of them. Measured from this node's deletion, on
    ///     ``Configuration/wallClock``.
    ///   - peersExpected: per zone, how many peers must have announced it (a shared zone's other
    ///     devices); while fewer have, announcements purge nothing there and only the retention does.
    ///   - forgetPurgedAfter: purged incarnations whose deletion is older than this are forgotten
    ///     (a peer that comes back with such a zone live creates it again); nil keeps them.
    /// - Returns: the number of zone tombstones purged.
    /// - Throws: `internalError` for a damaged row or when SQLite fails.
    @discardableResult
    public func purgeZoneTombstones(
        retention: Duration?, peersExpected: [RecordZone.ID: Int] = [:],
        forgetPurgedAfter: Duration? = nil
    ) throws(ShoalError) -> Int {
        let cutoff = retentionCutoff(retention)
        let forget = retentionCutoff(forgetPurgedAfter)
        let deleted = zones.values.filter(\.deleted).sorted { $0.id < $1.id }
        // Most passes find nothing to do: no write transaction (and no sync) for them.
        if deleted.isEmpty {
            guard let forget else { return 0 }
            let s = try db.statement("SELECT 1 FROM purged_zones WHERE deleted_at <= ? LIMIT 1")
            defer { s.reset() }
            s.bind(1, Int64(clamping: forget))
            guard try s.step() else { return 0 }
        }
        let before = zonePurgeSequence
        do throws(ShoalError) {
            return try writeTransaction { () throws(ShoalError) -> Int in
                var purged = 0
                for z in deleted {
                    let peers = try zonePeers(of: z)
                    let announced =
                        peers.count >= (peersExpected[z.id] ?? 0)
                        && peers.allSatisfy { $0.incarnation == z.incarnation && $0.deleted }
                    let deletedAt = try deletionTime(of: z)
                    guard announced || cutoff.map({ deletedAt <= $0 }) == true else { continue }
                    try db.statement("DELETE FROM zone_peers WHERE zone = ?").bind(1, z.row).run()
                    try db.statement("DELETE FROM zones WHERE id = ?").bind(1, z.row).run()
                    try db.statement(
                        "INSERT OR REPLACE INTO purged_zones(name, owner, incarnation, deleted_at) VALUES(?, ?, ?, ?)"
                    )
                    .bind(1, z.id.name).bind(2, z.id.owner).bind(3, Bytes.nodeID(z.incarnation))
                    .bind(4, Int64(clamping: deletedAt)).run()
                    zonePurgeSequence = max(zonePurgeSequence, z.databaseSequence)
                    zones[z.id] = nil
                    purged += 1
                }
                if purged > 0 { try Schema.setMeta(db, "zone_purge_seq", Int64(bitPattern: zonePurgeSequence)) }
                if let forget {
                    try db.statement("DELETE FROM purged_zones WHERE deleted_at <= ?").bind(1, Int64(clamping: forget))
                        .run()
                }
                return purged
            }
        } catch {
            zonePurgeSequence = before
            throw error
        }
    }

    /// The incarnation each zone of `ids` that this store does not hold was purged with, for
    /// those it remembers (Spec/replication.md §4.1).
    /// - Throws: `internalError` for a damaged row or when SQLite fails.
    package func purgedIncarnations(of ids: [RecordZone.ID]) throws(ShoalError) -> [RecordZone.ID: NodeID] {
        var out = [RecordZone.ID: NodeID]()
        let s = try db.statement("SELECT incarnation FROM purged_zones WHERE name = ? AND owner = ?")
        for id in ids where zones[id] == nil && out[id] == nil {
            s.bind(1, id.name).bind(2, id.owner)
            defer { s.reset() }
            guard try s.step() else { continue }
            guard let inc = Bytes.nodeID(s.blob(0)) else {
                throw .internalError("the purged incarnation of zone \(id) is not 16 bytes; the store is damaged")
            }
            out[id] = inc
        }
        return out
    }

    /// The deleted zones still kept as zone tombstones, sorted by ID, with the peers each waits
    /// for (``purgeZoneTombstones(retention:peersExpected:forgetPurgedAfter:)``).
    /// - Parameter peersExpected: as for the purge: per zone, how many peers must have announced it.
    /// - Throws: `internalError` for a damaged row.
    public func zoneTombstones(peersExpected: [RecordZone.ID: Int] = [:]) throws(ShoalError) -> [ZoneTombstone] {
        var out = [ZoneTombstone]()
        for z in zones.values.sorted(by: { $0.id < $1.id }) where z.deleted {
            let peers = try zonePeers(of: z)
            let waiting = peers.filter { $0.incarnation != z.incarnation || !$0.deleted }.map(\.peer)
            let ms = try deletionTime(of: z)
            out.append(
                ZoneTombstone(
                    zone: z.id, incarnation: z.incarnation,
                    deletedAt: Timestamp(millisecondsSince1970: Int64(clamping: ms)),
                    knownPeers: peers.map(\.peer).sorted(), waitingFor: waiting.sorted(),
                    peersMissing: max(0, (peersExpected[z.id] ?? 0) - peers.count)))
        }
        return out
    }

    /// How many purged zone incarnations the store remembers.
    /// - Throws: `internalError` if SQLite fails.
    public func purgedZoneCount() throws(ShoalError) -> Int {
        let s = try db.statement("SELECT count(*) FROM purged_zones")
        defer { s.reset() }
        return try s.step() ? s.int(0) : 0
    }

    /// Each known peer of `z` and what it last announced of the zone.
    private func zonePeers(of z: ZoneState) throws(ShoalError) -> [(peer: NodeID, incarnation: NodeID, deleted: Bool)] {
        var out = [(peer: NodeID, incarnation: NodeID, deleted: Bool)]()
        let s = try db.statement("SELECT peer, incarnation, deleted FROM zone_peers WHERE zone = ?")
        s.bind(1, z.row)
        while try s.step() {
            // A damaged row fails the purge rather than being skipped: skipping it would purge a
            // deletion that peer may not know of.
            guard let peer = Bytes.nodeID(s.blob(0)), let inc = Bytes.nodeID(s.blob(1)) else {
                throw .internalError(
                    "a peer's announcement of zone \(z.id) names no node ID or incarnation; the store is damaged")
            }
            out.append((peer, inc, s.int(2) != 0))
        }
        return out
    }

    /// When this node deleted `z` (wall milliseconds of its deletion dot); 0 when the row
    /// records none, so the retention purges it.
    private func deletionTime(of z: ZoneState) throws(ShoalError) -> UInt64 {
        let s = try db.statement("SELECT deletion FROM zones WHERE id = ?")
        defer { s.reset() }
        s.bind(1, z.row)
        guard try s.step() else { return 0 }
        let b = s.blob(0)
        guard b.count == 24 else { return 0 }
        var h: UInt64 = 0
        for x in b[16..<24] { h = h << 8 | UInt64(x) }
        return HLC(rawValue: h).milliseconds
    }
}

/// A deleted zone kept as a zone tombstone (``Store/zoneTombstones(peersExpected:)``): it is
/// announced deleted until every known peer has announced it deleted too, or the retention passed.
public struct ZoneTombstone: Sendable, Hashable {
    /// The zone.
    public var zone: RecordZone.ID
    /// The incarnation that was deleted.
    public var incarnation: NodeID
    /// When this node deleted it, by its wall clock.
    public var deletedAt: Timestamp
    /// The peers that have announced the zone here: the purge waits for each to announce this
    /// incarnation deleted.
    public var knownPeers: [NodeID]
    /// Those of ``knownPeers`` that have not announced this incarnation deleted yet.
    public var waitingFor: [NodeID]
    /// For a shared zone, how many of its other devices have not announced it here at all yet
    /// (the purge waits for them too, or for the retention).
    public var peersMissing: Int
}
