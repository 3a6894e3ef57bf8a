// SyncNode+Purging: purging tombstones by knowledge, acknowledgements and retention
// (Spec/replication.md §3.5.3).

public import ShoalWire
public import ShoalStore

extension SyncNode {
    /// Purges the tombstones every known peer of their zone has acknowledged, or whose deletion
    /// is older than `retention` (nil: acknowledgements only), among those this node's knowledge
    /// of the zone covers (Spec/replication.md §3.5.3).
    ///
    /// A peer that had not seen a purged deletion resyncs in full when it next subscribes here,
    /// and receives the purge horizon with it; until then this node does not adopt its knowledge.
    /// Purging is not yet safe in every case: §3.5.3 lists what can still make replicas differ.
    /// - Returns: the number of tombstones purged.
    /// - Throws: the store's error (`internalError` for a damaged acknowledgement row).
    @discardableResult
    public func purgeTombstones(retention: Duration?) async throws(ShoalError) -> Int {
        // Read afresh: a local write not yet announced through zoneChanged(_:) is in no cache.
        knowledgeCache.removeAll()
        var knowledge = [RecordZone.ID: VersionVector]()
        // A shared zone's other devices (owner and members) must each have acknowledged before
        // acknowledgements alone purge: one that has not yet is no known peer, and would
        // otherwise hold nothing back.
        var peersExpected = [RecordZone.ID: Int]()
        let me = signer?.device
        for z in await store.zones() {
            knowledge[z.id] = await self.knowledge(of: z.id)
            if let (owner, share) = await share(of: z.id) {
                peersExpected[z.id] = Set(share.members.map(\.device) + [owner]).subtracting(me.map { [$0] } ?? []).count
            }
        }
        let n = try await store.purgeTombstones(retention: retention, knowledge: knowledge, peersExpected: peersExpected)
        if n > 0 {
            // The horizon is part of what a zone shows (§3.8): knowledge is read again.
            knowledgeCache.removeAll()
            statistics.tombstonesPurged &+= n
            trace?("\(nodeID.short) purged \(n) tombstones")
        }
        return n
    }
}
