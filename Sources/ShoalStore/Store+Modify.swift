// Store+Modify: saving and deleting records with CloudKit's semantics — policies, atomic zone
// batches, per-item errors, deleteSelf cascades, limits and automatic chunking.

public import ShoalWire

extension Store {
    /// Saves and deletes records in one request.
    ///
    /// Every saved record gets a new dot (this node, a new HLC tick): the fields it changes are
    /// stamped with it, its version vector's entry for this node becomes its timestamp, and it
    /// becomes the record's only head. A deletion keeps the record's fields as a tombstone, so a
    /// concurrent save elsewhere can restore it. Deleting a record also deletes, in ID order, every
    /// live record of its zone that holds a `deleteSelf` reference to it, recursively.
    ///
    /// - Parameters:
    ///   - saving: records to save (each ID at most once, and not also in `deleting`).
    ///   - deleting: IDs of records to delete.
    ///   - policy: how saves treat the stored record (``SavePolicy``).
    ///   - atomically: when true (the default), the items of each zone commit all or nothing: if one
    ///     fails, the others of its zone fail with `batchRequestFailed`. The whole request is one
    ///     transaction, of at most ``Configuration/maxAtomicBatchItems`` items. When false, the
    ///     request is chunked into transactions of ``Configuration/chunkSize`` items and each item
    ///     succeeds or fails alone.
    /// - Returns: the saved records and deleted IDs.
    /// - Throws: `partialFailure` when some items failed (``ShoalError/partialErrors`` holds each
    ///   one's error: `serverRecordChanged`, `unknownItem`, `zoneNotFound`, `permissionFailure`,
    ///   `limitExceeded`, `invalidArguments`, `batchRequestFailed`; ``ShoalError/savedRecords`` what
    ///   was saved); `invalidArguments` for a malformed request; `limitExceeded` for an atomic batch
    ///   over the limit; `requestRateLimited` when another process holds the database lock;
    ///   `quotaExceeded` when the disk is full (the transaction under way is rolled back whole:
    ///   free space, then retry).
    @discardableResult
    public func modify(
        saving: [Record] = [], deleting: [Record.ID] = [], policy: SavePolicy = .ifServerRecordUnchanged,
        atomically: Bool = true
    ) throws(ShoalError) -> ModifyResult {
        if let id = DuplicateIDFinder.firstDuplicate(saving: saving, deleting: deleting) {
            throw .invalidArguments(
                "record \(id) appears more than once in one modify request; save or delete each record once per request"
            )
        }
        let total = saving.count + deleting.count
        if atomically && total > configuration.maxAtomicBatchItems {
            throw .limitExceeded(
                "an atomic modify request has \(total) items, over the limit of \(configuration.maxAtomicBatchItems) (Configuration.maxAtomicBatchItems); split it, or pass atomically: false to have it chunked into transactions of \(configuration.chunkSize)"
            )
        }
        var saved = [Record]()
        var deleted = [Record.ID]()
        var errors = [Record.ID: ShoalError]()
        let chunk = atomically ? max(total, 1) : max(configuration.chunkSize, 1)
        for start in stride(from: 0, to: total, by: chunk) {
            let r = try modifyChunk(
                saving: saving, deleting: deleting, start..<min(start + chunk, total), policy: policy,
                atomically: atomically)
            if saved.isEmpty { saved = r.saved } else { saved += r.saved }
            deleted += r.deleted
            errors.merge(r.errors) { a, _ in a }
        }
        if !errors.isEmpty { throw .partialFailure(errors, saved: saved, total: total) }
        return ModifyResult(savedRecords: saved, deletedRecordIDs: deleted)
    }

    /// Saves one record. See ``modify(saving:deleting:policy:atomically:)``.
    /// - Returns: the record as saved, with its new change tag.
    /// - Throws: the item's own error (`serverRecordChanged`, `zoneNotFound`, …), not `partialFailure`.
    @discardableResult
    public func save(_ record: Record, policy: SavePolicy = .ifServerRecordUnchanged) throws(ShoalError) -> Record {
        do throws(ShoalError) {
            let r = try modify(saving: [record], policy: policy)
            guard let s = r.savedRecords.first else {
                throw ShoalError.internalError("a save of \(record.id) returned no record")
            }
            return s
        } catch {
            throw error.code == .partialFailure ? error.partialErrors[record.id] ?? error : error
        }
    }

    /// Deletes one record (and its `deleteSelf` dependents).
    /// - Throws: `unknownItem` if it does not exist; `zoneNotFound`; `permissionFailure`.
    public func delete(_ id: Record.ID) throws(ShoalError) {
        do throws(ShoalError) {
            try modify(deleting: [id])
        } catch {
            throw error.code == .partialFailure ? error.partialErrors[id] ?? error : error
        }
    }

    enum Item {
        case save(Record)
        case delete(Record.ID)
        var id: Record.ID {
            switch self {
            case .save(let r): return r.id
            case .delete(let id): return id
            }
        }
    }

    typealias ChunkResult = (saved: [Record], deleted: [Record.ID], errors: [Record.ID: ShoalError])

    /// One transaction's worth of items: positions `range` of the request's items, the saves
    /// first, then the deletions.
    func modifyChunk(
        saving: [Record], deleting: [Record.ID], _ range: Range<Int>, policy: SavePolicy,
        atomically: Bool
    ) throws(ShoalError) -> ChunkResult {
        try writeTransaction { () throws(ShoalError) -> ChunkResult in
            // Saves of records with no change tag — new records, the bulk of an import — are
            // planned as new and inserted without looking each name up first. If one turns out
            // to exist, that attempt is undone and the chunk takes the full path.
            if range.upperBound <= saving.count, let done = try modifyAssumingNew(saving[range]) { return done }
            let items = range.map { i in
                i < saving.count ? Item.save(saving[i]) : Item.delete(deleting[i - saving.count])
            }
            return try modifyPlanned(items[...], policy: policy, atomically: atomically)
        }
    }

    /// Saves of records with no change tag, written as new without looking their names up
    /// (``assumingNew(_:)``): nil, with nothing changed, when a record turned out to exist or an
    /// item failed (the caller then redoes the request with lookups, which also reports each
    /// item's error). The versions are planned on another core while this one writes
    /// (``SavePlanner``).
    func modifyAssumingNew(_ clients: ArraySlice<Record>) throws(ShoalError) -> ChunkResult? {
        // Each zone's purge horizon, which a record new here starts its vector from. The records
        // are read through a buffer pointer: subscripting the slice would copy each one.
        var horizons = [RecordZone.ID: VersionVector]()
        let eligible = clients.withUnsafeBufferPointer { records in
            var zoneID: RecordZone.ID? = nil
            for i in records.indices {
                guard records[i].versionVector.isEmpty else { return false }  // it has a change tag
                if zoneID != records[i].id.zone {
                    let id = records[i].id.zone
                    guard let z = try? writableZone(id) else { return false }
                    horizons[id] = z.horizon
                    zoneID = id
                }
            }
            return true
        }
        guard eligible else { return nil }
        let dots = (0..<clients.count).map { _ in tick() }
        return try assumingNew { () throws(ShoalError) -> ChunkResult? in
            let planner = SavePlanner(
                clients, dots: dots, horizons: horizons, limits: configuration.limits, indexed: indexedFieldsByZone)
            defer { planner.finish() }
            var saved = [Record]()
            saved.reserveCapacity(clients.count)
            var touched = Set<RecordZone.ID>()
            // As in modifyPlanned: the zone's state is moved out of `zones` while written.
            var current: ZoneState? = nil
            defer { if let c = current { zones[c.id] = c } }
            for i in 0..<clients.count {
                guard case .success(let (record, row)) = planner.take(i) else { return nil }
                if current?.id != record.id.zone {
                    if let c = current { zones[c.id] = c }
                    current = zones.removeValue(forKey: record.id.zone)
                    touched.insert(record.id.zone)
                }
                guard var z = current.take() else { return nil }
                guard
                    try insertVersion(
                        record, encoded: row.bytes, in: &z, queued: true, indexEntries: row.entries,
                        refs: row.refs, logEntry: row.logEntry)
                else { return nil }
                current = consume z
                saved.append(record)
            }
            if let c = current.take() { zones[c.id] = c }
            guard try insertPendingVersionRows() else { return nil }
            for id in touched { try zones[id]?.save(db) }
            return (saved, [], [:])
        }
    }

    /// Runs `attempt` (writes that assume their records are new) inside the current write
    /// transaction, such that when it returns nil — a record turned out to exist — everything it
    /// did is undone: its rows, the rows it queued, zone states, sequence numbers, the index-log
    /// count and the notifications it noted; the caller then redoes the work with lookups.
    ///
    /// When the transaction has changed nothing before the attempt (a modify's), undoing it is
    /// rolling the transaction back and beginning it again; otherwise the attempt runs inside a
    /// savepoint. A savepoint is not free: SQLite copies every page the attempt changes into a
    /// sub-journal, a temporary file past 64 KiB — for a bulk save, more bytes than its log.
    func assumingNew<T>(_ attempt: () throws(ShoalError) -> T?) throws(ShoalError) -> T? {
        try insertPendingRows()
        let savedZones = zones, savedSequence = databaseSequence, savedIndexLog = indexLogCount
        let savedIndexAdds = indexAdds.count
        let restart = db.transactionIsUnchanged
        if !restart { try db.execute("SAVEPOINT assume_new") }
        if let done = try attempt() {
            if !restart { try db.execute("RELEASE assume_new") }
            return done
        }
        if restart {
            try db.restartTransaction()
        } else {
            try db.execute("ROLLBACK TO assume_new")
            try db.execute("RELEASE assume_new")
        }
        discardPendingRows()
        zones = savedZones
        databaseSequence = savedSequence
        indexLogCount = savedIndexLog
        if indexAdds.count > savedIndexAdds { indexAdds.removeSubrange(savedIndexAdds...) }
        txRecordsWanted = notifier.beginTransaction()
        txZonesNoted.removeAll(keepingCapacity: true)
        return nil
    }

    /// Plans every item against the stored records, then writes the plans.
    func modifyPlanned(_ items: ArraySlice<Item>, policy: SavePolicy, atomically: Bool) throws(ShoalError)
        -> ChunkResult
    {
        // 1. Plan every item against the stored state, without writing.
        var plans = [(id: Record.ID, isDelete: Bool, old: Record?, new: Record, bytes: [UInt8]?)]()
        plans.reserveCapacity(items.count)
        var errors = [Record.ID: ShoalError]()
        for item in items {
            do throws(ShoalError) {
                let z = try writableZone(item.id.zone)
                let stored = try loadStored(z, item.id.name)?.record
                switch item {
                case .save(let client):
                    let (new, bytes) = try planSave(client, stored: stored, policy: policy, zone: z)
                    plans.append((client.id, false, stored, new, bytes))
                case .delete(let id):
                    guard let s = stored, !s.isDeleted else { throw ShoalError.unknownItem(id) }
                    plans.append((id, true, s, tombstone(of: s), nil))
                }
            } catch {
                errors[item.id] = error
            }
        }
        // 2. Atomic zones with a failure write nothing.
        if atomically && !errors.isEmpty {
            var failedZones = [RecordZone.ID: Record.ID]()
            for id in errors.keys.sorted() where failedZones[id.zone] == nil { failedZones[id.zone] = id }
            plans = plans.filter { p in
                guard let failed = failedZones[p.id.zone] else { return true }
                errors[p.id] = .batchRequestFailed(p.id, because: failed)
                return false
            }
        }
        // 3. Write, then cascade deletions.
        var saved = [Record](), deleted = [Record.ID]()
        saved.reserveCapacity(plans.count)
        var cascadeFrom = [Record.ID]()
        var touched = Set<RecordZone.ID>()
        // Each zone's state is taken out of `zones` once per run of items in that zone, not per
        // item, and put back (and its row saved) once per transaction.
        var current: ZoneState? = nil
        var acks: [(peer: NodeID, vector: VersionVector)]? = nil  // the current zone's, once needed
        for p in plans {
            if current?.id != p.id.zone {
                if let c = current { zones[c.id] = c }
                current = zones.removeValue(forKey: p.id.zone)
                touched.insert(p.id.zone)
                acks = nil
            }
            // Moved out while written, so the zone's vector is not copied on every write.
            guard var z = current else { continue }
            current = nil
            var base = BaseUpdate.unchanged
            if !p.isDelete, let old = p.old { base = try baseUpdate(forSaveOver: old, in: z, acks: &acks) }
            try writeVersion(p.new, encoded: p.bytes?[...], over: p.old, in: &z, base: base)
            current = z
            if p.isDelete {
                deleted.append(p.id)
                cascadeFrom.append(p.id)
            } else {
                saved.append(p.new)
            }
        }
        if let c = current { zones[c.id] = c }
        for id in touched { try zones[id]?.save(db) }
        deleted += try cascadeDeletes(from: cascadeFrom)
        return (saved, deleted, errors)
    }

    /// The zone for a local write, or its error.
    func writableZone(_ id: RecordZone.ID) throws(ShoalError) -> ZoneState {
        let z = try liveZone(id)
        guard !z.readOnly else {
            throw .permissionFailure(
                "zone \(id) is read-only on this node (a \(z.scope) zone shared with it read-only); write to it on its owner, or create a zone you own"
            )
        }
        return z
    }

    /// Deletes, in ID order and recursively, live records holding `deleteSelf` references to the
    /// records just deleted. Every node computes the same set, so cascades converge.
    func cascadeDeletes(from roots: [Record.ID]) throws(ShoalError) -> [Record.ID] {
        var queue = roots.sorted()
        var out = [Record.ID]()
        var i = 0
        while i < queue.count {
            let target = queue[i]
            i += 1
            guard var z = zones[target.zone], !z.deleted else { continue }
            for name in try referrers(of: target.name, in: z) {
                guard let s = try loadStored(z, name)?.record, !s.isDeleted else { continue }
                try writeVersion(tombstone(of: s), over: s, in: &z)
                out.append(s.id)
                queue.append(s.id)
            }
            try z.save(db)
            zones[z.id] = z
        }
        return out
    }

    /// The tombstone a local delete of `s` writes: no fields — its vector covers every slot `s`
    /// holds, so a merge removes them (Spec/diff-and-merge.md §5) — and this node's delete as
    /// sole head.
    func tombstone(of s: Record) -> Record {
        let dot = tick()
        var vv = s.versionVector
        vv.advance(dot.node, to: dot.hlc)
        return Record(
            recordType: s.recordType, id: s.id, parent: s.parent, creation: s.creation, versionVector: vv,
            heads: [Record.Head(node: dot.node, isDeletion: true)], fields: [], extensions: s.extensions)
    }

    /// The version a save of `client` over `stored` writes under `policy`, with its canonical
    /// bytes, or the item's error.
    func planSave(_ client: Record, stored: Record?, policy: SavePolicy, zone: ZoneState) throws(ShoalError) -> (
        Record, [UInt8]
    ) {
        let limits = configuration.limits
        let clientSize = try Self.validateClient(client, limits: limits)
        let live = stored.flatMap { $0.isDeleted ? nil : $0 }
        if policy == .ifServerRecordUnchanged {
            if let live {
                guard let tag = client.changeTag, tag == live.changeTag else {
                    let prev = client.changeTag == nil ? nil : try loadPrevious(zone, client.id.name)
                    let ancestor = prev.flatMap { $0.changeTag == client.changeTag ? $0 : nil }
                    guard
                        let (chosen, conflict) = try resolveStaleSave(
                            client, server: live, ancestor: ancestor, zone: zone.id)
                    else {
                        throw ShoalError.serverRecordChanged(ancestor: ancestor, client: client, server: live)
                    }
                    let saved = try planSave(chosen, stored: stored, policy: .allKeys, zone: zone)
                    if let conflict { conflicts.note(ConflictEvent(conflict: conflict, outcome: .resolved(saved.0))) }
                    return saved
                }
            } else if client.changeTag != nil {
                throw ShoalError.make(
                    .unknownItem,
                    "record \(client.id) was saved with change tag \(client.changeTag ?? "") but no longer exists (deleted, or never saved here); save a new Record with this ID to create it again",
                    file: #fileID, line: #line)
            }
        }
        let dot = tick()
        // A record new here, in a zone that has purged tombstones, may be one of them created
        // again: its vector starts from the horizon, so it supersedes every purged deletion of its
        // name still held elsewhere (Spec/replication.md §3.5.3).
        guard let stored else {
            let (r, size) = Self.stampNew(client, size: clientSize, dot: dot, base: zone.horizon)
            return try Self.checkedEncoding(r, size: size, limits: limits)
        }
        let fields: [Record.Field]
        var vv = stored.versionVector
        let creation: Dot
        if let live {
            // Of a field's concurrent slots the save keeps the first, its value; its vector
            // covers the others, so merges drop them everywhere.
            creation = live.creation ?? dot
            let kept = live.withoutConcurrentSlots.fields
            fields =
                policy == .allKeys
                ? Self.replaceAll(kept, with: client.withoutConcurrentSlots.fields, dot: dot)
                : Self.overlayChanged(kept, with: client, dot: dot)
        } else {
            // Re-creation over a tombstone: the new record supersedes the deletion, and, as a
            // record new here would, every deletion of its name purged since (Spec/replication.md
            // §3.5.3 rule 2). Its vector covers every old slot, so it holds only the client's.
            vv.formUnion(zone.horizon)
            creation = dot
            fields = client.withoutConcurrentSlots.fields.compactMap { f in
                f.value.map { Record.Field(name: f.name, value: $0, stamp: dot) }
            }
        }
        vv.advance(dot.node, to: dot.hlc)
        let r = Record(
            recordType: client.recordType, id: client.id, parent: client.parent, creation: creation, versionVector: vv,
            heads: [Record.Head(node: dot.node, isDeletion: false)], fields: fields, extensions: client.extensions)
        return try Self.checkedEncoding(r, limits: limits)
    }

    /// The version a save of `client` (validated; its encoding `size` bytes) writes when the store
    /// holds no record of its ID, with the size of its encoding: its fields stamped with `dot`,
    /// which is also its creation and only head; its vector is `base` (the zone's purge horizon)
    /// advanced to `dot` (``Record/firstVersion(at:vector:heads:size:)``).
    ///
    /// Each version gets a heads array of its own: one array shared by a batch's versions cost
    /// more than it saved, its reference count bouncing between the planning and writing cores.
    nonisolated static func stampNew(_ client: Record, size: Int, dot: Dot, base: VersionVector) -> (Record, Int) {
        var vv = base
        vv.advance(dot.node, to: dot.hlc)
        return client.firstVersion(
            at: dot, vector: vv, heads: [Record.Head(node: dot.node, isDeletion: false)], size: size)
    }

    /// ``planSave(_:stored:policy:zone:)`` for a record the store does not hold, off the actor
    /// (``SavePlanner``): `dot` was issued for it by ``tick()``; `base` is its zone's horizon.
    /// Returns the version and the size of its encoding, for the caller to encode: the client is
    /// validated and sized in one pass over its fields, stamped in a second, and the caller
    /// encodes it in a third.
    nonisolated static func planNewRecord(
        _ client: Record, dot: Dot, base: VersionVector,
        limits: WireLimits
    ) throws(ShoalError) -> (Record, Int) {
        let clientSize = try validateClient(client, limits: limits)
        let (r, size) = stampNew(client, size: clientSize, dot: dot, base: base)
        return (r, try checkedSize(r, size: size, limits: limits))
    }

    /// `client` checked against `limits`, as `invalidArguments` or `limitExceeded` naming it; the
    /// size of its encoding.
    @discardableResult
    nonisolated static func validateClient(_ client: Record, limits: WireLimits) throws(ShoalError) -> Int {
        do throws(WireError) {
            return try client.validatedSize(limits: limits)
        } catch {
            throw error.code == .limitExceeded
                ? .limitExceeded("record \(client.id): \(error.detail)")
                : .invalidArguments("record \(client.id) is not valid: \(error.detail)")
        }
    }

    /// A version a save built, with its canonical bytes, or `limitExceeded`
    /// (``checkedSize(_:size:limits:)``). `size`: the size of its encoding, when known.
    nonisolated static func checkedEncoding(_ r: Record, size: Int? = nil, limits: WireLimits) throws(ShoalError) -> (
        Record, [UInt8]
    ) {
        let size = try checkedSize(r, size: size, limits: limits)
        return (r, WireWriter.encode(size: size) { r.encode(into: &$0) })
    }

    /// The size of the encoding of a version a save built (`size`, when known), or `limitExceeded`.
    ///
    /// `r` is built from a validated client record and the stored version (validated when it was
    /// decoded), with stamps this node just issued and covered by its vector: all it can break
    /// is the field count and the size. Debug builds check everything.
    nonisolated static func checkedSize(_ r: Record, size: Int? = nil, limits: WireLimits) throws(ShoalError) -> Int {
        assert((try? r.validate(limits: limits)) != nil, "a save built an invalid record \(r.id)")
        guard r.fields.count <= limits.maxFieldCount else {
            throw .limitExceeded(
                "record \(r.id): record has \(r.fields.count) fields, over the limit of \(limits.maxFieldCount) (WireLimits.maxFieldCount)"
            )
        }
        let size = size ?? r.encodedSize
        guard size <= limits.maxRecordBytes else {
            throw .limitExceeded(
                "record \(r.id): record \(r.id) encodes to \(size) bytes, over the limit of \(limits.maxRecordBytes) (WireLimits.maxRecordBytes); move large values into assets"
            )
        }
        return size
    }

    /// `stored` with the client's changed fields (unstamped slots) written at `dot`.
    static func overlayChanged(_ stored: [Record.Field], with client: Record, dot: Dot) -> [Record.Field] {
        var out = stored
        for f in client.fields where f.stamp == nil || client.versionVector.isEmpty {
            var lo = 0, hi = out.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if UTF8Order.compare(out[mid].name, f.name) < 0 { lo = mid + 1 } else { hi = mid }
            }
            if lo < out.count && out[lo].name == f.name {
                if out[lo].value == f.value && f.value == nil { continue }
                out[lo] = Record.Field(name: f.name, value: f.value, stamp: dot)
            } else if f.value != nil {
                out.insert(Record.Field(name: f.name, value: f.value, stamp: dot), at: lo)
            }
        }
        return out
    }

    /// Fields equal to `client`'s: unchanged slots keep their stamps, the rest are written at
    /// `dot`, and stored values the client lacks become removal markers.
    static func replaceAll(_ stored: [Record.Field], with client: [Record.Field], dot: Dot) -> [Record.Field] {
        var out = [Record.Field]()
        var i = 0, j = 0
        while i < stored.count || j < client.count {
            let c = i == stored.count ? 1 : j == client.count ? -1 : UTF8Order.compare(stored[i].name, client[j].name)
            if c < 0 {
                let s = stored[i]
                out.append(s.value == nil ? s : Record.Field(name: s.name, value: nil, stamp: dot))
                i += 1
            } else if c > 0 {
                let f = client[j]
                if f.value != nil { out.append(Record.Field(name: f.name, value: f.value, stamp: dot)) }
                j += 1
            } else {
                let s = stored[i], f = client[j]
                if f.stamp != nil && f.stamp == s.stamp && f.value == s.value {
                    out.append(s)  // untouched by the client
                } else if s.value == nil && f.value == nil {
                    out.append(s)
                } else {
                    out.append(Record.Field(name: f.name, value: f.value, stamp: dot))
                }
                i += 1
                j += 1
            }
        }
        return out
    }
}
