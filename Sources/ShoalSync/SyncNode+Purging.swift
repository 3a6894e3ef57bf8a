// SyncNode+Purging: purging record tombstones by knowledge, acknowledgements and retention
// (Spec/replication.md §3.5.3), and zone tombstones by announcements and retention (§4.1).

import ShoalWire
public import ShoalStore

extension SyncNode {
    /// How many times the retention a purged zone's incarnation is remembered, so a peer that
    /// comes back with the zone live is told it was deleted (Spec/replication.md §4.1).
    package static let purgedZoneMemory = 12

    /// Purges the tombstones every known peer of their zone has acknowledged, or whose deletion
    /// is older than `retention` (nil: acknowledgements only), among those this node's knowledge
    /// of the zone covers (Spec/replication.md §3.5.3); then, in the same pass, the zone
    /// tombstones every peer replicating the zone has announced deleted, or older than
    /// `retention` (§4.1), counted in ``Statistics/zoneTombstonesPurged``.
    ///
    /// A peer that had not seen a purged deletion resyncs in full when it next subscribes here,
    /// and receives the purge horizon with it; until then this node does not adopt its knowledge.
    /// A peer that comes back with a purged zone live is told it was deleted.
    /// Purging is not yet safe in every case: §3.5.3 lists what can still make replicas differ.
    /// - Returns: the number of record tombstones purged.
    /// - Throws: the store's error (`internalError` for a damaged acknowledgement row).
    @discardableResult
    public func purgeTombstones(retention: Duration?) async throws(ShoalError) -> Int {
        // Read afresh: a local write not yet announced through zoneChanged(_:) is in no cache.
        knowledgeCache.removeAll()
        var knowledge = [RecordZone.ID: VersionVector]()
        for z in await store.zones() { knowledge[z.id] = await self.knowledge(of: z.id) }
        let peersExpected = await peersExpected()
        let n = try await store.purgeTombstones(
            retention: retention, knowledge: knowledge, peersExpected: peersExpected)
        if n > 0 {
            // The horizon is part of what a zone shows (§3.8): knowledge is read again.
            knowledgeCache.removeAll()
            statistics.tombstonesPurged &+= n
            logger.trace("\(nodeID.short) purged \(n) tombstones")
        }
        let zones = try await store.purgeZoneTombstones(
            retention: retention, peersExpected: peersExpected,
            forgetPurgedAfter: retention.map { $0 * Self.purgedZoneMemory })
        if zones > 0 {
            shares.forgetCounts()
            statistics.zoneTombstonesPurged &+= zones
            logger.trace("\(nodeID.short) purged \(zones) zone tombstones")
        }
        return n
    }

    /// The deleted zones this node still announces, and the peers each waits for
    /// (Spec/replication.md §4.1).
    /// - Throws: the store's error (`internalError` for a damaged row).
    public func zoneTombstones() async throws(ShoalError) -> [ZoneTombstone] {
        try await store.zoneTombstones(peersExpected: await peersExpected())
    }

    /// Per zone with a share, live or deleted, how many of its devices other than this one
    /// (owner and members) must speak for it before acknowledgements or announcements alone
    /// purge there: one that has not yet is no known peer, and would otherwise hold nothing back.
    func peersExpected() async -> [RecordZone.ID: Int] {
        var out = [RecordZone.ID: Int]()
        let me = signer?.device
        for z in await store.zoneAnnouncements() {
            if let (owner, share) = await share(of: z.zone) {
                out[z.zone] = Set(share.members.map(\.device) + [owner]).subtracting(me.map { [$0] } ?? []).count
            }
        }
        return out
    }
}
