// Store+Conflicts: finding conflicts where versions meet, and writing what a resolver decides.

public import ShoalWire
import ShoalDiff

extension Store {
    /// Sets (or, with nil, removes) the resolver that decides conflicts in `zone` on this node.
    ///
    /// Without a resolver, concurrent edits of a field merge by last-writer-wins and a save with a
    /// stale change tag fails with `serverRecordChanged`. With one:
    /// - a peer's version concurrent with the stored one, sharing changed fields, is decided by the
    ///   resolver of the node that wrote the oldest of the concurrent writes (the merge's oldest
    ///   head); that node writes the result as a new version, which every node then holds
    ///   (Spec/replication.md §6);
    /// - a save under ``SavePolicy/ifServerRecordUnchanged`` whose change tag is stale saves the
    ///   resolver's record instead of failing, or the app's changed fields when they do not
    ///   overlap what changed on the stored record.
    ///
    /// While a zone has a resolver, the store also keeps for each record the last version a peer
    /// is known to hold, so that a conflict still has its ancestor after several local saves
    /// (``RecordConflict/ancestor``, Spec/store.md §7.1). Resolvers are held in memory: set them
    /// after opening, before going online.
    public func setConflictResolver(_ resolver: ConflictResolver?, for zone: RecordZone.ID) {
        conflicts.setResolver(resolver, for: zone)
    }

    /// Sets (or, with nil, removes) the resolver of every zone that has none of its own
    /// (``setConflictResolver(_:for:)``), including zones created or received later: what
    /// `shoal serve --merge-text` sets. A zone's own resolver takes precedence.
    ///
    /// Resolvers are held in memory: set it after opening, before going online.
    public func setDefaultConflictResolver(_ resolver: ConflictResolver?) {
        conflicts.setFallback(resolver)
    }

    /// Every conflict this store meets from now on, with what became of it, once the write that
    /// met it has committed. A listener that falls more than 10,000 events behind loses the oldest.
    public func conflictEvents() -> AsyncStream<ConflictEvent> {
        conflicts.events()
    }

    /// The node whose resolver decides the conflicts of `merged`: the writer of its oldest live
    /// head (Spec/replication.md §6); nil when it has fewer than two.
    nonisolated static func resolvingNode(of merged: Record) -> NodeID? {
        let live = merged.heads.filter { !$0.isDeletion }
        guard live.count >= 2 else { return nil }
        return live.map { Dot(node: $0.node, hlc: merged.versionVector[$0.node]) }.min()?.node
    }

    /// The fields whose value, written by one of `stored`'s heads, `next` replaced with a write
    /// `stored` had not seen, while that head is still a head of `next`: edits `stored` lost to
    /// a concurrent one that reached this node already merged by another.
    nonisolated static func lostFields(_ stored: Record, _ next: Record) -> [String] {
        let kept = stored.heads.compactMap { h -> Dot? in
            let t = stored.versionVector[h.node]
            return !h.isDeletion && next.heads.contains(where: { $0.node == h.node }) && next.versionVector[h.node] == t
                ? Dot(node: h.node, hlc: t) : nil
        }
        guard !kept.isEmpty else { return [] }
        var out = [String]()
        for f in stored.fields {
            guard let stamp = f.stamp, kept.contains(stamp) else { continue }
            let i = next.fields.firstIndex { $0.name == f.name }
            let n = i.map { next.fields[$0] }
            if n?.value != f.value, let ns = n?.stamp, !stored.versionVector.covers(ns) { out.append(f.name) }
        }
        return out
    }

    /// The version to write when a peer's `incoming` version meets the `stored` one and `next` is
    /// what would be written (their merge, or `incoming` when it dominates): `next`, or what this
    /// node's resolver makes of it when both are live, `next` still has concurrent heads, fields
    /// changed on both sides differ, and this node decides (``resolvingNode(of:)``). Every
    /// conflict found is noted for ``conflictEvents()``.
    /// `concurrent`: whether the two vectors are concurrent (else `incoming` dominates), as the
    /// caller found when it compared them.
    func decideConflicts(_ stored: Record, _ incoming: Record, next: Record, concurrent: Bool, in z: ZoneState)
        throws(ShoalError) -> Record
    {
        guard !stored.isDeleted, !next.isDeleted, next.heads.count >= 2, conflicts.wanted(in: z.id) else { return next }
        let names = concurrent ? conflictingFields(stored, incoming) : Self.lostFields(stored, next)
        guard !names.isEmpty, let decider = Self.resolvingNode(of: next) else { return next }
        let ancestor = try commonAncestor(z, of: stored, incoming)
        let conflict = RecordConflict(
            origin: .replication, fieldNames: names, ancestor: ancestor,
            local: stored, remote: incoming, merged: next)
        guard decider == nodeID else {
            conflicts.note(ConflictEvent(conflict: conflict, outcome: .decidedBy(decider)))
            return next
        }
        guard !z.readOnly, let resolve = conflicts.resolver(for: z.id) else {
            conflicts.note(ConflictEvent(conflict: conflict, outcome: .merged))
            return next
        }
        switch resolution(of: conflict, by: resolve, over: next) {
        case .success(let r):
            conflicts.note(ConflictEvent(conflict: conflict, outcome: .resolved(r)))
            return r
        case .failure(let reason):
            conflicts.note(ConflictEvent(conflict: conflict, outcome: .rejected(reason: reason.message)))
            return next
        }
    }

    /// The version a resolver's record makes of `merged`: `merged` itself when the resolver kept
    /// every field's value, else a new version by this node whose changed fields are stamped with
    /// its dot and whose other slots are `merged`'s.
    func resolution(of conflict: RecordConflict, by resolve: ConflictResolver, over merged: Record) -> Result<
        Record, ShoalError
    > {
        let chosen = resolve(conflict)
        guard chosen.id == merged.id else {
            return .failure(
                .invalidArguments(
                    "the conflict resolver of zone \(merged.id.zone) returned record \(chosen.id) for a conflict of \(merged.id); return a record with the conflict's ID"
                ))
        }
        // The new version keeps one slot per field: a field's value is the first of its slots.
        guard
            let fields = Self.resolvedFields(merged.withoutConcurrentSlots.fields, chosen.withoutConcurrentSlots.fields)
        else {
            return .success(merged)
        }
        let dot = tick()
        var vv = merged.versionVector
        vv.advance(dot.node, to: dot.hlc)
        let r = Record(
            recordType: merged.recordType, id: merged.id, parent: merged.parent, creation: merged.creation,
            versionVector: vv, heads: [Record.Head(node: dot.node, isDeletion: false)],
            fields: fields.map { $0.stamp == nil ? Record.Field(name: $0.name, value: $0.value, stamp: dot) : $0 },
            extensions: merged.extensions)
        do throws(ShoalError) {
            return .success(try Self.checkedEncoding(r, limits: configuration.limits).0)
        } catch {
            return .failure(error)
        }
    }

    /// `base`'s slots where `chosen` holds the same value (absent counts as removed), and new,
    /// unstamped slots for the rest (removals as markers); nil when every value is the same.
    /// Both hold one slot per field.
    nonisolated static func resolvedFields(_ base: [Record.Field], _ chosen: [Record.Field]) -> [Record.Field]? {
        var out = [Record.Field]()
        out.reserveCapacity(max(base.count, chosen.count))
        var changed = false
        var i = 0, j = 0
        while i < base.count || j < chosen.count {
            let c = i == base.count ? 1 : j == chosen.count ? -1 : UTF8Order.compare(base[i].name, chosen[j].name)
            if c < 0 {
                let s = base[i]
                if s.value == nil {
                    out.append(s)
                } else {
                    changed = true
                    out.append(Record.Field(name: s.name, value: nil))
                }
                i += 1
            } else if c > 0 {
                let f = chosen[j]
                if f.value != nil {
                    changed = true
                    out.append(Record.Field(name: f.name, value: f.value))
                }
                j += 1
            } else {
                let s = base[i], f = chosen[j]
                if s.value == f.value {
                    out.append(s)
                } else {
                    changed = true
                    out.append(Record.Field(name: f.name, value: f.value))
                }
                i += 1
                j += 1
            }
        }
        return changed ? out : nil
    }

    /// What a save of `client` with a stale change tag saves (as ``SavePolicy/allKeys``) when
    /// `zone` has a resolver, with the conflict when there was one: the client's changed fields
    /// over `server` when none of them also changed there since `ancestor` (without an ancestor:
    /// none differs from the server's value), else the resolver's record, its fields resolved
    /// against the server's. Nil when the zone has no resolver.
    /// - Throws: `invalidArguments` when the resolver returns a record with another ID.
    func resolveStaleSave(
        _ client: Record, server: Record, ancestor: Record?,
        zone: RecordZone.ID
    ) throws(ShoalError) -> (Record, RecordConflict?)? {
        guard let resolve = conflicts.resolver(for: zone) else { return nil }
        var merged = server
        var names = [String]()
        for key in client.changedKeys {
            let mine = client[key], theirs = server[key]
            guard mine != theirs else { continue }
            merged[key] = mine
            if let ancestor, ancestor[key] == theirs { continue }  // only the client changed it
            names.append(key)
        }
        guard !names.isEmpty else { return (merged, nil) }
        let conflict = RecordConflict(
            origin: .localSave, fieldNames: names, ancestor: ancestor,
            local: client, remote: server, merged: merged)
        let chosen = resolve(conflict)
        guard chosen.id == client.id else {
            throw .invalidArguments(
                "the conflict resolver of zone \(zone) returned record \(chosen.id) for a conflict of \(client.id); return a record with the conflict's ID"
            )
        }
        var out = server
        out.fields =
            Self.resolvedFields(server.withoutConcurrentSlots.fields, chosen.withoutConcurrentSlots.fields)
            ?? server.fields
        return (out, conflict)
    }
}
