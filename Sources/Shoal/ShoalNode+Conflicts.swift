// ShoalNode+Conflicts: deciding concurrent edits in app code, and seeing every conflict met.

public import ShoalStore
public import ShoalWire

extension ShoalNode {
    /// Sets (or, with nil, removes) the function that decides conflicts in `zone` on this node:
    /// Couchbase Lite's custom conflict resolver, and CloudKit's `serverRecordChanged` handling
    /// done for the app.
    ///
    /// The resolver gets the ancestor (when known), this node's version, the other version, and
    /// their merge, and returns the record to keep:
    /// - **Replication.** When a peer's version and this node's both changed a field to
    ///   different values, exactly one node decides: the one that wrote the oldest of the
    ///   concurrent writes. Its resolver's result becomes a new version that dominates both
    ///   sides, so every node ends up holding it — even nodes whose resolvers differ, or that
    ///   have none. Until it arrives, nodes hold the deterministic field-by-field merge.
    /// - **Local saves.** A save under `SavePolicy.ifServerRecordUnchanged` whose change tag is
    ///   stale does not fail with `serverRecordChanged`: fields only the app changed are saved
    ///   over the stored record, and when the stored record changed them too the resolver
    ///   decides.
    ///
    /// The resolver runs synchronously inside the write, so it must be quick and must not call
    /// the node. Set it after opening the node, before going online.
    public func setConflictResolver(for zone: RecordZone.ID, _ resolver: ConflictResolver?) async {
        await store.setConflictResolver(resolver, for: zone)
    }

    /// Merges the string fields `merge` names three-way in `zone`'s conflicts, so both sides'
    /// edits of different lines survive: `node.setConflictResolver(for: notes,
    /// .mergingText(fields: ["Note.body"]))`. See <doc:MergingText> for what it keeps and what
    /// it does not.
    ///
    /// The same as setting `merge.resolve` as the zone's resolver.
    public func setConflictResolver(for zone: RecordZone.ID, _ merge: TextMerge) async {
        await store.setConflictResolver(merge.resolve, for: zone)
    }

    /// Sets (or, with nil, removes) the resolver of every zone without one of its own, including
    /// zones created or shared with this node later. A zone's own resolver
    /// (``setConflictResolver(for:_:)-(_,ConflictResolver?)``) takes precedence.
    public func setDefaultConflictResolver(_ resolver: ConflictResolver?) async {
        await store.setDefaultConflictResolver(resolver)
    }

    /// Merges the string fields `merge` names three-way in the conflicts of every zone without a
    /// resolver of its own, including zones created or shared with this node later: what
    /// `shoal serve --merge-text TYPE.FIELD` sets. See <doc:MergingText>.
    public func setDefaultConflictResolver(_ merge: TextMerge) async {
        await store.setDefaultConflictResolver(merge.resolve)
    }

    /// Every conflict this node meets from now on, with its outcome (resolved here, decided by
    /// another node, merged, or the resolver's record refused), delivered after the write that
    /// met it has committed. A listener more than 10,000 events behind loses the oldest.
    public func conflicts() async -> AsyncStream<ConflictEvent> {
        await store.conflictEvents()
    }
}
