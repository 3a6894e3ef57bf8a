// Store+Tombstones: peer acknowledgements, causally stable tombstone purges and the purge horizon.

public import ShoalWire

extension Store {
    /// Records that `peer` has received every change of `zone` up to `vector`.
    ///
    /// Peers that have acknowledged a zone are its known peers: a tombstone is purged only when
    /// every one of them has acknowledged it. Acknowledgements only move forward (union).
    /// - Throws: `zoneNotFound`.
    public func acknowledge(peer: NodeID, zone: RecordZone.ID, vector: VersionVector) throws(ShoalError) {
        let z = try liveZone(zone)
        try writeTransaction(replication: true) { () throws(ShoalError) in
            var v = vector
            let s = try db.statement("SELECT vector FROM peer_acks WHERE zone = ? AND peer = ?")
            defer { s.reset() }
            s.bind(1, z.row).bind(2, Bytes.nodeID(peer))
            if try s.step() {
                v.formUnion(try Bytes.vector(s.blob(0), "the acknowledgement of \(peer.short) for \(zone)"))
            }
            try db.statement("INSERT OR REPLACE INTO peer_acks(zone, peer, vector) VALUES(?, ?, ?)")
                .bind(1, z.row).bind(2, Bytes.nodeID(peer)).bind(3, Bytes.vector(v)).run()
        }
    }

    /// Forgets a peer of `zone` (retired for good), so it no longer holds back purges: of the
    /// zone's tombstones, or of the zone itself once deleted (Spec/replication.md §4.1). A peer
    /// that announces the zone again is known again.
    /// - Throws: `zoneNotFound` for a zone this store does not hold, live or deleted.
    public func removePeer(_ peer: NodeID, from zone: RecordZone.ID) throws(ShoalError) {
        guard let z = zones[zone] else { throw .zoneNotFound(zone) }
        try writeTransaction { () throws(ShoalError) in
            for sql in [
                "DELETE FROM peer_acks WHERE zone = ? AND peer = ?",
                "DELETE FROM zone_peers WHERE zone = ? AND peer = ?"
            ] {
                try db.statement(sql).bind(1, z.row).bind(2, Bytes.nodeID(peer)).run()
            }
        }
    }

    /// Deletes tombstones every known peer of their zone has acknowledged (with no known peers,
    /// every tombstone), and raises each zone's purge horizon to cover them.
    ///
    /// A change token whose vector does not cover the new horizon then gets `changeTokenExpired`,
    /// so a reader that was away is told to refetch rather than silently missing a deletion.
    /// - Returns: the number of tombstones purged.
    @discardableResult
    public func purgeTombstones() throws(ShoalError) -> Int {
        try purgeTombstones(retention: nil, knowledge: nil)
    }

    /// Deletes the tombstones that every known peer of their zone has acknowledged, or whose
    /// deletion is older than `retention`, and raises each zone's purge horizon to cover them
    /// (Spec/replication.md §3.5.3).
    ///
    /// - Parameters:
    ///   - retention: how long a deletion waits for peers that have not acknowledged it; nil
    ///     waits for all of them. A deletion's age is measured from its newest deletion head, on
    ///     ``Configuration/wallClock``.
    ///   - knowledge: per zone, what the caller's replication guarantees this store reflects
    ///     (Spec/replication.md §1.1). When given, only tombstones it covers are purged, and zones
    ///     it leaves out are not purged at all: the horizon then never claims a write the store
    ///     may not reflect, which is what lets a record created here again carry the horizon
    ///     in its vector.
    ///   - peersExpected: per zone, how many peers the caller knows must acknowledge (a shared
    ///     zone's other devices); while fewer have acknowledged the zone here, acknowledgements
    ///     purge nothing there and only the retention does.
    /// - Returns: the number of tombstones purged.
    @discardableResult
    public func purgeTombstones(
        retention: Duration?, knowledge: [RecordZone.ID: VersionVector]?,
        peersExpected: [RecordZone.ID: Int] = [:]
    ) throws(ShoalError) -> Int {
        let cutoff = retentionCutoff(retention)
        return try writeTransaction { () throws(ShoalError) -> Int in
            var purged = 0
            for var z in zones.values.sorted(by: { $0.id < $1.id }) where !z.deleted {
                let covered: VersionVector?
                if let knowledge {
                    guard let k = knowledge[z.id] else { continue }
                    covered = k
                } else {
                    covered = nil
                }
                let acks = try peerAcknowledgements(of: z).map(\.vector)
                let enoughPeers = acks.count >= (peersExpected[z.id] ?? 0)
                var dead = [Record]()
                let s = try db.statement("SELECT name, bytes FROM records WHERE zone = ? AND deleted = 1")
                s.bind(1, z.row)
                while try s.step() {
                    let name = s.text(0)
                    let r = try s.withBlob(1) { (raw) throws(ShoalError) -> Record in
                        try decodeRow(raw, zone: z.id, name: name)
                    }
                    if let covered, !r.versionVector.isDominated(by: covered) { continue }
                    if enoughPeers && acks.allSatisfy({ r.versionVector.isDominated(by: $0) })
                        || cutoff.map({ Self.deletionTime(of: r) <= $0 }) == true
                    {
                        dead.append(r)
                    }
                }
                if dead.isEmpty { continue }
                for r in dead {
                    try removeRows(r, in: z)
                    z.horizon.formUnion(r.versionVector)
                }
                purged += dead.count
                try z.save(db)
                zones[z.id] = z
            }
            return purged
        }
    }

    /// The wall time (ms) at or before which a deletion is older than `retention`; nil for none.
    func retentionCutoff(_ retention: Duration?) -> UInt64? {
        retention.map { r in
            let (seconds, attoseconds) = r.components
            let (ms, overflow) = UInt64(clamping: seconds).multipliedReportingOverflow(by: 1000)
            let span =
                overflow
                ? UInt64.max
                : ms.addingReportingOverflow(UInt64(clamping: attoseconds / 1_000_000_000_000_000)).partialValue
            let now = configuration.wallClock()
            return now > span ? now - span : 0
        }
    }

    /// When `tombstone` was deleted: the wall time of its newest deletion head.
    nonisolated static func deletionTime(of tombstone: Record) -> UInt64 {
        tombstone.heads.filter(\.isDeletion).map { tombstone.versionVector[$0.node].milliseconds }.max() ?? 0
    }

    /// Takes a peer's purge `horizon` into `zone`'s at the end of a full resync from it
    /// (Spec/replication.md §3.5.3): a record created here again then supersedes those deletions
    /// on the nodes that still hold their tombstones, and versions of records this store does not
    /// hold that the horizon dominates are ignored, as for its own purges. The horizon must be
    /// one the peer stated and the caller checked (§3.8).
    /// - Throws: `zoneNotFound`.
    package func adoptHorizon(_ horizon: VersionVector, of zone: RecordZone.ID) throws(ShoalError) {
        try writeTransaction { () throws(ShoalError) in
            var z = try liveZone(zone)
            let before = z.horizon
            z.horizon.formUnion(horizon)
            guard z.horizon != before else { return }
            z.vector.formUnion(horizon)
            try z.save(db)
            zones[z.id] = z
        }
    }

    /// The purge horizon of `zone`: the union of the vectors of every tombstone purged from it.
    /// - Throws: `zoneNotFound`.
    public func purgeHorizon(of zone: RecordZone.ID) throws(ShoalError) -> VersionVector {
        try liveZone(zone).horizon
    }

    /// What `zone` keeps for deletions: its live records and tombstones, its purge horizon, and
    /// for each known peer how many tombstones it has not acknowledged (those a purge keeps for
    /// it). Reads every tombstone: for status, not for hot paths.
    /// - Throws: `zoneNotFound`; `internalError` for a stored row that does not decode.
    public func tombstoneState(of zone: RecordZone.ID) throws(ShoalError) -> TombstoneState {
        let z = try liveZone(zone)
        let acks = try peerAcknowledgements(of: z)
        let live = try db.statement("SELECT COUNT(*) FROM records WHERE zone = ? AND deleted = 0")
        live.bind(1, z.row)
        let liveCount = try live.step() ? Int(live.int64(0)) : 0
        var tombstones = 0
        var heldBack = [NodeID: Int]()
        let s = try db.statement("SELECT name, bytes FROM records WHERE zone = ? AND deleted = 1")
        s.bind(1, z.row)
        while try s.step() {
            let name = s.text(0)
            let r = try s.withBlob(1) { (raw) throws(ShoalError) -> Record in try decodeRow(raw, zone: z.id, name: name)
            }
            tombstones += 1
            for (peer, v) in acks where !r.versionVector.isDominated(by: v) { heldBack[peer, default: 0] += 1 }
        }
        return TombstoneState(
            liveRecords: liveCount, tombstones: tombstones, horizon: z.horizon,
            knownPeers: acks.map(\.0).sorted(), heldBackBy: heldBack)
    }

    /// What `peer` has acknowledged of `zone` as stored (nil: nothing), for status and tests.
    /// - Throws: `zoneNotFound`; `internalError` for a stored row that does not decode.
    package func acknowledgement(of peer: NodeID, in zone: RecordZone.ID) throws(ShoalError) -> VersionVector? {
        try peerAcknowledgements(of: try liveZone(zone)).first { $0.peer == peer }?.vector
    }

    /// What each known peer of `z` has acknowledged (`acknowledge(peer:zone:vector:)`).
    func peerAcknowledgements(of z: ZoneState) throws(ShoalError) -> [(peer: NodeID, vector: VersionVector)] {
        var acks = [(peer: NodeID, vector: VersionVector)]()
        let a = try db.statement("SELECT peer, vector FROM peer_acks WHERE zone = ?")
        a.bind(1, z.row)
        while try a.step() {
            // A damaged row fails the purge rather than being ignored: ignoring it would purge
            // tombstones that peer may still need.
            guard let peer = Bytes.nodeID(a.blob(0)) else {
                throw .internalError("a peer acknowledgement for \(z.id) names no node ID; the store is damaged")
            }
            acks.append((peer, try Bytes.vector(a.blob(1), "a peer acknowledgement for \(z.id)")))
        }
        return acks
    }
}

/// What a zone keeps for deletions (``Store/tombstoneState(of:)``).
public struct TombstoneState: Sendable, Hashable {
    /// Records not deleted.
    public var liveRecords: Int
    /// Deleted records still kept, so that peers learn of the deletions.
    public var tombstones: Int
    /// The union of the vectors of the tombstones purged so far; empty when none was.
    public var horizon: VersionVector
    /// The peers that have acknowledged the zone: a tombstone is purged once all of them have
    /// acknowledged it.
    public var knownPeers: [NodeID]
    /// For each known peer with tombstones it has not acknowledged, how many: a purge keeps
    /// those tombstones for it.
    public var heldBackBy: [NodeID: Int]
}
