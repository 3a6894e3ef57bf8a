// Store+Zones: creating, listing and deleting zones (a deletion is a zone tombstone peers learn of).

public import ShoalWire

extension Store {
    /// Creates a zone, or returns it unchanged if it already exists.
    ///
    /// Creating a zone that was deleted starts a new incarnation: change tokens from before the
    /// deletion get `changeTokenExpired`.
    /// - Parameters:
    ///   - id: the zone's name and owner.
    ///   - scope: the database it belongs to (default private).
    ///   - readOnly: refuse local writes with `permissionFailure` (for zones shared read-only).
    ///   - incarnation: the incarnation to adopt — replication passes the one of the peer the zone
    ///     is replicated from, so every replica of a zone answers the same change tokens; nil (the
    ///     default) for a new random one.
    /// - Throws: `invalidArguments` for an invalid name; `internalError` if SQLite fails.
    @discardableResult
    public func createZone(
        _ id: RecordZone.ID, scope: DatabaseScope = .private, readOnly: Bool = false,
        incarnation: NodeID? = nil
    ) throws(ShoalError) -> ZoneInfo {
        try checkZoneID(id)
        if let z = zones[id], !z.deleted { return z.info }
        return try writeTransaction { () throws(ShoalError) -> ZoneInfo in
            try insertZone(id, scope: scope, readOnly: readOnly, incarnation: incarnation)
        }
    }

    /// Throws `invalidArguments` for a zone name or owner that is empty or too long.
    func checkZoneID(_ id: RecordZone.ID) throws(ShoalError) {
        for (what, n) in [("zone name", id.name), ("zone owner", id.owner)] {
            guard !n.isEmpty, n.utf8.count <= configuration.limits.maxNameBytes else {
                throw .invalidArguments(
                    "\(what) \(n.debugDescription) must be 1–\(configuration.limits.maxNameBytes) UTF-8 bytes")
            }
        }
    }

    /// Creates zone `id`, not live, or revives it, deleted, inside the caller's transaction
    /// (``createZone(_:scope:readOnly:incarnation:)``).
    func insertZone(_ id: RecordZone.ID, scope: DatabaseScope, readOnly: Bool, incarnation: NodeID?) throws(ShoalError)
        -> ZoneInfo
    {
        databaseSequence += 1
        if var z = zones[id] {
            z.deleted = false
            z.incarnation = incarnation ?? configuration.newIdentifier()
            z.vector = VersionVector()
            z.horizon = VersionVector()
            z.log = WriterLogHead()
            z.implied = []
            z.scope = scope
            z.readOnly = readOnly
            z.databaseSequence = databaseSequence
            try z.save(db)
            zones[id] = z
            notifier.zoneChanged(id, deleted: false)
            return z.info
        }
        let s = try db.statement(
            "INSERT INTO zones(name, owner, scope, read_only, incarnation, seq, vector, horizon, deleted, db_seq) VALUES(?, ?, ?, ?, ?, 0, x'', x'', 0, ?)"
        )
        let inc = incarnation ?? configuration.newIdentifier()
        try s.bind(1, id.name).bind(2, id.owner).bind(3, Int(scope.rawValue)).bind(4, readOnly ? 1 : 0)
            .bind(5, Bytes.nodeID(inc)).bind(6, Int64(bitPattern: databaseSequence)).run()
        let row = try lastRow()
        let z = ZoneState(
            row: row, id: id, scope: scope, readOnly: readOnly, incarnation: inc, seq: 0,
            vector: VersionVector(), horizon: VersionVector(), deleted: false,
            databaseSequence: databaseSequence)
        zones[id] = z
        notifier.zoneChanged(id, deleted: false)
        return z.info
    }

    func lastRow() throws(ShoalError) -> Int64 {
        let s = try db.statement("SELECT last_insert_rowid()")
        defer { s.reset() }
        guard try s.step() else { throw .internalError("SQLite returned no last_insert_rowid") }
        return s.int64(0)
    }

    /// The zone `id`.
    /// - Throws: `zoneNotFound` when it does not exist or was deleted.
    public func zone(_ id: RecordZone.ID) throws(ShoalError) -> ZoneInfo {
        try liveZone(id).info
    }

    /// The live zones of `scope` (all scopes when nil), sorted by ID.
    public func zones(in scope: DatabaseScope? = nil) -> [ZoneInfo] {
        zones.values.filter { !$0.deleted && (scope == nil || $0.scope == scope) }.map(\.info).sorted { $0.id < $1.id }
    }

    /// Deletes a zone and all its records. The deletion stays as a zone tombstone that
    /// ``databaseChanges(since:)`` reports, so peers learn of it, until
    /// ``purgeZoneTombstones(retention:peersExpected:forgetPurgedAfter:)`` purges it.
    /// - Throws: `zoneNotFound` if the zone does not exist; `permissionFailure` for a read-only zone.
    public func deleteZone(_ id: RecordZone.ID) throws(ShoalError) {
        try deleteZone(id, asReplica: false)
    }

    /// Deletes a zone as ``deleteZone(_:)`` does; `asReplica` deletes a read-only zone too
    /// (replication passes on its owner's deletion).
    package func deleteZone(_ id: RecordZone.ID, asReplica: Bool) throws(ShoalError) {
        var z = try liveZone(id)
        guard asReplica || !z.readOnly else {
            throw .permissionFailure(
                "zone \(id) is read-only on this node (shared with it read-only); only its owner can delete it")
        }
        try writeTransaction { () throws(ShoalError) in
            try flushIndexLog()
            for (key, index) in indexes where key.zone == id {
                try db.statement("DELETE FROM field_postings WHERE idx = ?").bind(1, index).run()
            }
            try db.statement("DELETE FROM index_progress WHERE zone = ?").bind(1, z.row).run()
            for sql in [
                "DELETE FROM records WHERE zone = ?", "DELETE FROM record_clock WHERE zone = ?",
                "DELETE FROM refs WHERE zone = ?", "DELETE FROM merged_heads WHERE zone = ?",
                "DELETE FROM index_decls WHERE zone = ?", "DELETE FROM peer_acks WHERE zone = ?",
                "DELETE FROM writer_entries WHERE zone = ?", "DELETE FROM writer_logs WHERE zone = ?",
                "DELETE FROM writer_checkpoints WHERE zone = ?", "DELETE FROM writer_implied WHERE zone = ?",
                // Keyed by asset, so this one reads the whole table: zone deletions are rare.
                "DELETE FROM asset_refs WHERE zone = ?"
            ] {
                try db.statement(sql).bind(1, z.row).run()
            }
            noteAssetReferenceRemoval()
            databaseSequence += 1
            let dot = tick()
            z.deleted = true
            z.implied = []
            z.vector.advance(dot.node, to: dot.hlc)
            z.databaseSequence = databaseSequence
            try z.save(db)
            let d = try db.statement("UPDATE zones SET deletion = ? WHERE id = ?")
            try d.bind(1, Bytes.nodeID(dot.node) + Bytes.vector(VersionVector([(dot.node, dot.hlc)])).suffix(8)).bind(
                2, z.row
            ).run()
            zones[id] = z
            indexes = indexes.filter { $0.key.zone != id }
            notifier.zoneChanged(id, deleted: true)
        }
    }

    /// The zone's state, or `zoneNotFound`.
    func liveZone(_ id: RecordZone.ID) throws(ShoalError) -> ZoneState {
        guard let z = zones[id], !z.deleted else { throw .zoneNotFound(id) }
        return z
    }
}
