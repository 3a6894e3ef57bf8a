// PeerZone: a peer and one of its zones, the key of what the engine keeps per subscription.

import ShoalWire

/// A peer and a zone: names the subscription to (or from) that peer for that zone in the
/// engine's in-memory state. What is stored for it goes under a ``ShoalStore/SyncStateKey``.
struct PeerZone: Hashable, Sendable {
    /// The peer's node ID.
    var peer: NodeID
    /// The zone.
    var zone: RecordZone.ID
}
