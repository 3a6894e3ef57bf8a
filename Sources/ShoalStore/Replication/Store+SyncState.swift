// Store+SyncState: what replication keeps beside the records — positions, knowledge, zone announcements.

public import ShoalWire

extension Store {
    /// The value replication stored under `key`, or nil.
    ///
    /// Replication keeps its per-peer positions and per-zone knowledge here, in the store's own
    /// database, so they are as durable as the records they describe.
    /// - Throws: `internalError` if SQLite fails.
    public func syncValue(_ key: SyncStateKey) throws(ShoalError) -> [UInt8]? {
        try ensureSyncTable()
        let s = try db.statement("SELECT value FROM sync_state WHERE key = ?")
        defer { s.reset() }
        s.bind(1, key.rawValue)
        return try s.step() ? s.blob(0) : nil
    }

    /// Stores (or, with nil, removes) a replication value, committed with
    /// ``Configuration/replicationSynchronous``.
    /// - Throws: `internalError` if SQLite fails.
    public func setSyncValue(_ key: SyncStateKey, _ value: [UInt8]?) throws(ShoalError) {
        try setSyncValue(key, value, durably: false)
    }

    /// Stores (or, with nil, removes) a value as ``setSyncValue(_:_:)`` does; `durably` commits
    /// it with ``Configuration/synchronous``, as the node's own writes are: a value no peer can
    /// send back (a zone share its owner signed here) must survive a power cut once the call
    /// returned (Spec/store.md §2.3).
    /// - Throws: `internalError` if SQLite fails.
    package func setSyncValue(_ key: SyncStateKey, _ value: [UInt8]?, durably: Bool) throws(ShoalError) {
        try ensureSyncTable()
        try useSynchronous(replication: !durably)
        if let value {
            try db.statement("INSERT OR REPLACE INTO sync_state(key, value) VALUES(?, ?)").bind(1, key.rawValue).bind(
                2, value
            ).run()
        } else {
            try db.statement("DELETE FROM sync_state WHERE key = ?").bind(1, key.rawValue).run()
        }
    }

    func ensureSyncTable() throws(ShoalError) {
        try db.execute("CREATE TABLE IF NOT EXISTS sync_state(key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID")
    }

    /// Every zone this store has held, live or deleted, with its incarnation, sorted by ID — what
    /// a node announces to its peers.
    public func zoneAnnouncements() -> [ZoneAnnouncement] {
        zones.values.map { ZoneAnnouncement(zone: $0.id, incarnation: $0.incarnation, isDeleted: $0.deleted) }
            .sorted { $0.zone < $1.zone }
    }

    /// The announcements of those of `ids` this node holds (live or deleted), by zone: a lookup
    /// per ID, whatever the number of zones held, for a peer's announcement of a few zones.
    public func zoneAnnouncements(of ids: some Sequence<RecordZone.ID>) -> [RecordZone.ID: ZoneAnnouncement] {
        var found = [RecordZone.ID: ZoneAnnouncement]()
        for id in ids {
            guard let z = zones[id] else { continue }
            found[id] = ZoneAnnouncement(zone: z.id, incarnation: z.incarnation, isDeleted: z.deleted)
        }
        return found
    }

    /// How many zones this node holds, live or deleted (their tombstones not yet purged).
    public var zoneCount: Int { zones.count }

    /// Makes a live zone read-only on this node (local writes get `permissionFailure`) or
    /// writable again: replication follows the role its owner's share gives this device.
    /// - Throws: `zoneNotFound` for a zone that is not live; `internalError` if SQLite fails.
    public func setReadOnly(_ readOnly: Bool, for id: RecordZone.ID) throws(ShoalError) {
        var z = try liveZone(id)
        guard z.readOnly != readOnly else { return }
        try writeTransaction { () throws(ShoalError) in
            z.readOnly = readOnly
            try z.save(db)
            zones[id] = z
        }
    }

    /// Makes zone `id` follow a share this node adopted, in one transaction committed as the
    /// node's own writes are (durably): creates the zone in `incarnation` when it is not live
    /// (reviving a deleted one), or adopts `incarnation` when it is live in another; makes it
    /// read-only or writable; and stores `share` (its bytes) under `key`. A power cut
    /// leaves the zone as it was or following the share, never held without the share that says
    /// who may write it (Spec/store.md §2.3). Returns how the zone changed.
    /// - Throws: `invalidArguments` for an invalid zone ID; `internalError` if SQLite fails.
    package func followShare(
        zone id: RecordZone.ID, scope: DatabaseScope, readOnly: Bool, incarnation: NodeID,
        key: SyncStateKey, share: [UInt8]
    ) throws(ShoalError) -> FollowedShare {
        try checkZoneID(id)
        try ensureSyncTable()
        return try writeTransaction { () throws(ShoalError) -> FollowedShare in
            let change: FollowedShare
            if var z = zones[id], !z.deleted {
                change = z.incarnation == incarnation ? .kept : .adoptedIncarnation
                if z.incarnation != incarnation || z.readOnly != readOnly {
                    z.incarnation = incarnation
                    z.readOnly = readOnly
                    try z.save(db)
                    zones[id] = z
                    if change == .adoptedIncarnation { notifier.zoneChanged(id, deleted: false) }
                }
            } else {
                change = zones[id] == nil ? .created : .revived
                _ = try insertZone(id, scope: scope, readOnly: readOnly, incarnation: incarnation)
            }
            try db.cached("INSERT OR REPLACE INTO sync_state(key, value) VALUES(?, ?)").bind(1, key.rawValue).bind(
                2, share
            ).runAndRewind()
            return change
        }
    }

    /// Replaces a live zone's incarnation, keeping its records (replication uses this when two
    /// nodes created the same zone independently: both adopt the larger incarnation). Change
    /// tokens of the old incarnation then get `changeTokenExpired`.
    /// - Throws: `zoneNotFound` for a zone that is not live; `internalError` if SQLite fails.
    public func adoptIncarnation(_ incarnation: NodeID, for id: RecordZone.ID) throws(ShoalError) {
        var z = try liveZone(id)
        guard z.incarnation != incarnation else { return }
        try writeTransaction { () throws(ShoalError) in
            z.incarnation = incarnation
            try z.save(db)
            zones[id] = z
            notifier.zoneChanged(id, deleted: false)
        }
    }
}

/// How ``Store/followShare(zone:scope:readOnly:incarnation:key:share:)`` changed the zone.
package enum FollowedShare: Sendable, Equatable {
    /// The zone was not held: created.
    case created
    /// The zone was deleted here: created again (a new incarnation, its old tokens expired).
    case revived
    /// The zone was live in another incarnation: it adopted the share's, keeping its records.
    case adoptedIncarnation
    /// The zone was live in the share's incarnation (its read-only flag may have changed).
    case kept
}
