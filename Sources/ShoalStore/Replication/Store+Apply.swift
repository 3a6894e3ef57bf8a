// Store+Apply: applying a batch of record versions from a peer, in one transaction, idempotently.

public import ShoalWire
import ShoalDiff

/// What ``Store/apply(remoteChanges:)`` did with a batch.
public struct ApplyResult: Sendable, Hashable {
    /// Versions of records this store did not hold.
    public var inserted = 0
    /// Versions that causally followed the stored one and replaced it.
    public var replaced = 0
    /// Versions concurrent with the stored one, merged field by field.
    public var merged = 0
    /// Versions the store had already seen (equal or older): no-ops.
    public var unchanged = 0
    /// Records deleted locally by `deleteSelf` cascades the batch triggered.
    public var cascaded = 0
    /// Versions stamped by a clock more than `maxForwardDrift` ahead of ours: applied, but their
    /// timestamps were not absorbed into this node's clock.
    public var skewed = 0
}

extension Store {
    /// Applies record versions received from a peer — live records and tombstones (records whose
    /// heads are all deletions) — in one transaction.
    ///
    /// Idempotent and order-insensitive: a version the stored one dominates is a no-op, one that
    /// dominates the stored one replaces it, and concurrent ones are merged field by field by
    /// their dots (the larger dot wins a field both changed; vectors union; a save concurrent
    /// with a delete keeps the record). A version of a record this store purged (its vector is
    /// dominated by the zone's purge horizon) is ignored; one carrying a write of this node that
    /// a purged deletion superseded is deleted again (Spec/replication.md §3.5.3 rule 8). Every change gets a new local change
    /// sequence number, fires subscriptions, and may cascade `deleteSelf` deletions.
    ///
    /// - Throws: `invalidArguments` for an unsaved or malformed record (nothing is applied);
    ///   `zoneNotFound` for a zone this store does not
    ///   hold; `limitExceeded` for a record over the limits; `quotaExceeded` when the disk is
    ///   full (nothing is applied).
    /// - Parameter syncState: replication values (``syncValue(_:)``) to store in the same
    ///   transaction, such as the position the batch brings the node to.
    @discardableResult
    public func apply(remoteChanges records: [Record], syncState: [SyncStateKey: [UInt8]] = [:]) throws(ShoalError)
        -> ApplyResult
    {
        try apply(remoteChanges: records, encodings: [], syncState: syncState)
    }

    /// ``apply(remoteChanges:syncState:)`` given the records' canonical encodings as received:
    /// `encodings[i]` is `records[i].encoded()` for every `i < encodings.count` (a decoder that
    /// accepts canonical encodings only guarantees it), and a version stored as it arrived keeps
    /// those bytes instead of being encoded again.
    ///
    /// `decodedUnder` is the limits the decoder enforced on those records: when they are this
    /// store's, the records are valid by construction (decoding checks everything
    /// `Record.validate(limits:)` does) and only the saved-version checks run again.
    @discardableResult
    ///
    /// `implied`: runs of the sender's own log its versions imply, kept in the same transaction
    /// (``keepImplied(_:batch:keepingMade:)``; Spec/authenticated-writes.md §5.1).
    package func apply(
        remoteChanges records: [Record], encodings: [ArraySlice<UInt8>], decodedUnder: WireLimits? = nil,
        syncState: [SyncStateKey: [UInt8]] = [:], implied: [ImpliedRun] = []
    ) throws(ShoalError) -> ApplyResult {
        guard encodings.count <= records.count else {
            throw .invalidArguments(
                "apply(remoteChanges:encodings:): \(encodings.count) encodings for \(records.count) records")
        }
        let decodedValid = decodedUnder == configuration.limits ? encodings.count : 0
        for (i, r) in records.enumerated() { try checkRemote(r, alreadyValid: i < decodedValid) }
        if !syncState.isEmpty { try ensureSyncTable() }
        return try writeTransaction(replication: true) { () throws(ShoalError) -> ApplyResult in
            for (key, value) in syncState.sorted(by: { $0.key < $1.key }) {
                try db.statement("INSERT OR REPLACE INTO sync_state(key, value) VALUES(?, ?)").bind(1, key.rawValue)
                    .bind(2, value).run()
            }
            // Versions of records this store does not hold (the bulk of an initial sync) are
            // inserted in batches, without lookups; if one turns out to exist, that attempt is
            // undone and the batch takes the per-record path.
            // Runs are kept before the versions are written: a version replaced in the batch
            // (a cascade) then keeps the entry it implies.
            if try shouldAssumeNew(records),
                let done = try assumingNew({ () throws(ShoalError) -> ApplyResult? in
                    // Every version is stored as it arrived, or the attempt is undone.
                    try keepImplied(implied, batch: records, keepingMade: true)
                    return try applyRecords(records, encodings: encodings, queued: true)
                })
            {
                return done
            }
            try keepImplied(implied, batch: records, keepingMade: false)
            guard let done = try applyRecords(records, encodings: encodings, queued: false) else {
                throw .internalError("applying a batch record by record found a record it had not looked up")
            }
            return done
        }
    }

    /// The index of each record of `records` by name (the last, for a name given twice).
    static func names(of records: [Record]) -> [String: Int] {
        var out = [String: Int](minimumCapacity: records.count)
        for (i, r) in records.enumerated() { out[r.id.name] = i }
        return out
    }

    /// Whether a batch looks like versions of records this store does not hold: at least a
    /// batch of rows, and its first record is not stored.
    func shouldAssumeNew(_ records: [Record]) throws(ShoalError) -> Bool {
        guard records.count >= WriteStatements.batchRows, let first = records.first,
            let z = zones[first.id.zone], !z.deleted
        else { return false }
        let s = try db.cached("SELECT 1 FROM records WHERE zone = ? AND name = ?")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, first.id.name)
        return try !s.step()
    }

    /// Applies `records` inside the current transaction. `queued`: versions of records the store
    /// does not hold are inserted in batches (``insertVersion(_:encoded:in:queued:indexEntries:refs:)``), and the
    /// result is nil as soon as one is found to exist or a version needs a lookup (the caller
    /// undoes the attempt).
    func applyRecords(_ records: [Record], encodings: [ArraySlice<UInt8>], queued: Bool) throws(ShoalError)
        -> ApplyResult?
    {
        var result = ApplyResult()
        var newlyDeleted = [Record.ID]()
        var live = [Record]()
        var touched = Set<RecordZone.ID>()
        // The zone being written is held out of `zones` (so its vector is not copied on every
        // write) and put back when the batch moves to another zone or ends.
        var current: ZoneState? = nil
        defer { if let c = current { zones[c.id] = c } }
        for (index, incoming) in records.enumerated() {
            let encoded = index < encodings.count ? encodings[index] : nil
            if current?.id != incoming.id.zone {
                if let c = current { zones[c.id] = c }
                current = nil
                guard let next = zones[incoming.id.zone], !next.deleted else { throw .zoneNotFound(incoming.id.zone) }
                current = zones.removeValue(forKey: incoming.id.zone)
                touched.insert(next.id)
            }
            // Moved out of `current` (no copy of its vectors) and moved back before the next
            // record; a throw leaves it out, and writeTransaction restores every zone.
            guard var z = current.take() else { throw .zoneNotFound(incoming.id.zone) }
            if let latest = incoming.versionVector.latest {
                // A timestamp too far ahead of our wall clock is not absorbed (our later writes
                // keep our own clock), but the version is still applied here; replication refuses
                // such a batch before it reaches the store (Spec/replication.md §3.8, §7).
                do throws(HLC.ClockError) {
                    try clock.observe(latest.hlc, wallMilliseconds: configuration.wallClock())
                } catch {
                    result.skewed += 1
                }
            }
            // A record this store does not hold (the bulk of an initial sync) is inserted
            // directly: the insert itself tells whether the row existed, saving a lookup.
            // A version the purge horizon dominates may be of a purged record, and one that
            // names a write of this node at or below the horizon may carry a write a purged
            // deletion superseded: look first.
            let own = incoming.versionVector[nodeID]
            let ownBelowHorizon = own != .zero && own <= z.horizon[nodeID]
            if z.horizon.isEmpty || !incoming.versionVector.isDominated(by: z.horizon) && !ownBelowHorizon {
                let inserted = try insertVersion(incoming, encoded: encoded, in: &z, queued: queued)
                if inserted {
                    current = consume z
                    result.inserted += 1
                    if incoming.isDeleted { newlyDeleted.append(incoming.id) } else { live.append(incoming) }
                    continue
                }
            }
            if queued {
                current = z
                return nil
            }
            let stored = try loadStored(z, incoming.id.name)?.record
            let next: Record
            var nextEncoded: ArraySlice<UInt8>? = nil
            if ownBelowHorizon,
                Self.carriesOwnWrites(
                    incoming, of: nodeID, after: stored?.versionVector[nodeID] ?? .zero, upTo: z.horizon[nodeID]),
                stored != nil || !incoming.versionVector.isDominated(by: z.horizon)
            {
                // The version holds a write of this node (a head, a stamp) that the stored
                // version does not reflect. This node's own writes to a record are always in its
                // stored version, unless a deletion superseded them and was purged here: that
                // write, at or below the horizon, is deleted. Delete it again, with a write of this node that
                // supersedes the incoming version everywhere (Spec/replication.md §3.5.3 rule 8).
                next = try deletingOwnPurgedWrites(
                    stored.map { s throws(ShoalError) in try Self.merged(s, incoming) } ?? incoming,
                    reflected: stored?.versionVector[nodeID] ?? .zero)
                result.merged += 1
            } else if let stored {
                switch incoming.versionVector.compare(stored.versionVector) {
                case .equal, .before:
                    result.unchanged += 1
                    current = z
                    continue
                case .after:
                    // Replacing without merging: merge(stored, incoming) is incoming itself
                    // when incoming's vector dominates (ReplaceFastPathTests checks the bytes).
                    // A merge of a concurrent edit may bury one of stored's: it may be this
                    // node's to decide.
                    if incoming.heads.count < 2 {
                        next = incoming
                        nextEncoded = encoded
                    } else {
                        next = try decideConflicts(stored, incoming, next: incoming, concurrent: false, in: z)
                        if next.versionVector == incoming.versionVector { nextEncoded = encoded }
                    }
                    result.replaced += 1
                case .concurrent:
                    next = try decideConflicts(
                        stored, incoming, next: Self.merged(stored, incoming), concurrent: true, in: z)
                    result.merged += 1
                }
            } else {
                if !z.horizon.isEmpty && incoming.versionVector.isDominated(by: z.horizon) {
                    result.unchanged += 1  // a version of a record whose tombstone was purged
                    current = z
                    continue
                }
                next = incoming
                nextEncoded = encoded
                result.inserted += 1
            }
            let base =
                stored == nil ? BaseUpdate.unchanged : baseUpdate(writing: next, for: incoming, encoded: encoded, in: z)
            try writeVersion(next, encoded: nextEncoded, over: stored, in: &z, base: base)
            current = z
            if next.isDeleted {
                if !(stored?.isDeleted ?? false) { newlyDeleted.append(next.id) }
            } else {
                live.append(next)
            }
        }
        if let c = current { zones[c.id] = c }
        current = nil
        if queued, try !insertPendingVersionRows() { return nil }
        for id in touched { try zones[id]?.save(db) }
        // A live record pointing (deleteSelf) at a record already deleted here goes too, so
        // every node ends with the same cascade whatever the order of arrival.
        for r in live {
            // Most records hold no deleteSelf reference: no zone lookup (hashing its ID) for them.
            let targets = Self.cascadeTargets(r)
            guard !targets.isEmpty, let z = zones[r.id.zone] else { continue }
            for t in targets.sorted() {
                if let target = try loadStored(z, t)?.record, target.isDeleted,
                    let cur = try loadStored(z, r.id.name)?.record, !cur.isDeleted
                {
                    var zz = z
                    try writeVersion(tombstone(of: cur), over: cur, in: &zz)
                    try zz.save(db)
                    zones[zz.id] = zz
                    newlyDeleted.append(r.id)
                    result.cascaded += 1
                    break
                }
            }
        }
        result.cascaded += try cascadeDeletes(from: newlyDeleted).count
        return result
    }

    /// Whether `version` holds a write of `node` — its head, or a slot it stamped — after
    /// `reflected` and at or below `horizon`. An entry alone is no such write: a record created
    /// again over a purge horizon names other nodes' writes to other records (rule 2).
    nonisolated static func carriesOwnWrites(
        _ version: Record, of node: NodeID, after reflected: HLC, upTo horizon: HLC
    ) -> Bool {
        let entry = version.versionVector[node]
        if entry > reflected, entry <= horizon, version.heads.contains(where: { $0.node == node }) { return true }
        return version.fields.contains { f in
            guard let s = f.stamp, s.node == node else { return false }
            return s.hlc > reflected && s.hlc <= horizon
        }
    }

    /// `version` without this node's writes after `reflected` — its head and the slots it
    /// stamped, which a deletion purged here superseded — and with a deletion by this node at a
    /// new dot, which has seen `version`. The other nodes' heads stay: a save concurrent with the
    /// purged deletion still keeps the record.
    func deletingOwnPurgedWrites(_ version: Record, reflected: HLC) -> Record {
        let dot = tick()
        var vv = version.versionVector
        vv.advance(dot.node, to: dot.hlc)
        var heads = version.heads.filter { $0.node != dot.node }
        heads.append(Record.Head(node: dot.node, isDeletion: true))
        heads.sort { $0.node < $1.node }
        let fields = version.fields.filter { f in
            guard let s = f.stamp else { return true }
            return s.node != dot.node || s.hlc <= reflected
        }
        return Record(
            recordType: version.recordType, id: version.id, parent: version.parent, creation: version.creation,
            versionVector: vv, heads: heads, fields: fields, extensions: version.extensions)
    }

    /// The dot-driven merge of two versions of one record (ShoalDiff's `merge`).
    package nonisolated static func merged(_ stored: Record, _ incoming: Record) throws(ShoalError) -> Record {
        do throws(DiffError) {
            return try merge(stored, incoming)
        } catch {
            throw .internalError("merging two versions of \(incoming.id): \(error)")
        }
    }

    /// Rejects a remote record that is not a saved, well-formed version.
    func checkRemote(_ r: Record, alreadyValid: Bool = false) throws(ShoalError) {
        if !alreadyValid {
            do throws(WireError) {
                try r.validate(limits: configuration.limits)
            } catch {
                throw error.code == .limitExceeded
                    ? .limitExceeded("record \(r.id) from a peer: \(error.detail)")
                    : .invalidArguments("record \(r.id) from a peer is not valid: \(error.detail)")
            }
        }
        guard !r.versionVector.isEmpty, !r.heads.isEmpty, r.creation != nil else {
            throw .invalidArguments(
                "record \(r.id) from a peer was never saved (no version vector or heads); peers send saved versions only"
            )
        }
        if let f = r.fields.first(where: { $0.stamp == nil }) {
            throw .invalidArguments(
                "record \(r.id) from a peer has an unsaved edit of field \(f.name) (no stamp); peers send saved versions only"
            )
        }
    }
}

extension Store {
    /// This store's wall clock now and how far ahead of it a peer's timestamp may be
    /// (`Configuration.wallClock`, `Configuration.maxForwardDrift`): replication refuses a batch
    /// stamped beyond their sum before applying any of it (Spec/replication.md §3.8).
    package nonisolated func remoteClockBound() -> (wallMilliseconds: UInt64, maxForwardDrift: UInt64) {
        (configuration.wallClock(), configuration.maxForwardDrift)
    }
}
