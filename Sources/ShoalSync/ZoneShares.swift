// ZoneShares: the zones' shares a node holds — read from its store on first use, kept there
// durably, and counted per owner (Spec/security.md §6). Its methods run on the caller's actor
// (the record engine's), which decides what a share changes.

import ShoalStore
import ShoalTrust
import ShoalWire

/// The shares of the zones held here, over the store that keeps them; what each lets a device do
/// is ``HeldShare/access(of:)``, the cache and counts are ``HeldShares``.
final class ZoneShares {
    private let store: Store
    private let limits: WireLimits
    private var held = HeldShares()

    init(store: Store, limits: WireLimits) {
        self.store = store
        self.limits = limits
    }

    /// How many zones' shares were read (those with none included).
    var zonesRead: Int { held.zonesRead }

    /// The share held for `zone`, if any: read from the store once, then from memory. A stored
    /// share that does not decode or verify counts as none.
    nonisolated(nonsending) func share(of zone: RecordZone.ID) async -> HeldShare? {
        if let cached = held.cached(zone) { return cached }
        var share: HeldShare? = nil
        if let bytes = try? await store.syncValue(.share(zone: zone)),
            let decoded = try? ZoneShare(decoding: bytes, limits: limits),
            let owner = decoded.verifiedOwner
        {
            share = HeldShare(share: decoded, owner: owner)
        }
        held.note(share, for: zone)
        return share
    }

    /// Keeps `share` as the zone's share, committed as the node's own writes are: durable once
    /// the call returns (Spec/store.md §2.3). A share this device signed may be on no peer yet, so
    /// a power cut that undid it would take the zone's members away for good; a share adopted
    /// from a peer comes with the zone's state it brought (created, deleted, read-only), which
    /// commits so too, and without its share the zone would be open to every trusted device.
    nonisolated(nonsending) func keep(_ share: ZoneShare, owner: DeviceID) async throws(ShoalError) {
        try await store.setSyncValue(.share(zone: share.zone), share.encoded(), durably: true)
        held.note(HeldShare(share: share, owner: owner), for: share.zone)
    }

    /// `share`, signed by `owner`, was stored with its zone in one commit
    /// (``Store/followShare(zone:scope:readOnly:incarnation:key:share:)``).
    func stored(_ share: ZoneShare, owner: DeviceID) {
        held.note(HeldShare(share: share, owner: owner), for: share.zone)
    }

    /// A share created a zone owned by `owner` here.
    func noteZoneCreated(ownedBy owner: DeviceID) {
        held.noteZoneCreated(ownedBy: owner)
    }

    /// Zones went away or changed owner: the counts per owner are taken again on next use.
    func forgetCounts() {
        held.forgetCounts()
    }

    /// How many zones held here (live or deleted) `owner` owns, by their shares.
    nonisolated(nonsending) func zonesOwned(by owner: DeviceID) async -> Int {
        if let n = held.zonesOwned(by: owner) { return n }
        var counts = [DeviceID: Int]()
        for z in await store.zoneAnnouncements() {
            if let share = await share(of: z.zone) { counts[share.owner, default: 0] &+= 1 }
        }
        held.noteCounts(counts)
        return counts[owner, default: 0]
    }
}
