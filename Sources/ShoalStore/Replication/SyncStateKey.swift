// SyncStateKey: the keys of the replication state a store keeps beside its records, one
// constructor per key space.

public import ShoalWire

/// A key of the replication state a store keeps beside its records (``Store/syncValue(_:)``).
///
/// Each key space has one constructor here, and only here is a key's text spelled: stores
/// written by earlier versions of Shoal hold their state under these same texts, so the texts
/// never change (Spec/store.md §2.3 says how each is committed).
public struct SyncStateKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The key's text in the store's `sync_state` table.
    public let rawValue: String

    /// The separator between a key's parts.
    private static let separator: Character = "\u{1}"

    /// The key spelled as its key space, then its parts, each after a ``separator``.
    private init(_ parts: String...) {
        rawValue = parts.joined(separator: String(Self.separator))
    }

    /// Where this node's subscription to `peer`'s changes of `zone` stands: the change token of
    /// the last batch committed.
    public static func position(peer: NodeID, zone: RecordZone.ID) -> SyncStateKey {
        SyncStateKey("position", peer.hex, zone.name, zone.owner)
    }

    /// The marker of a full resync of `zone` from `peer` in progress: present from the reset
    /// pass's first batch until the deletions it found are reconciled.
    public static func resync(peer: NodeID, zone: RecordZone.ID) -> SyncStateKey {
        SyncStateKey("resync", peer.hex, zone.name, zone.owner)
    }

    /// Every write this node has seen of `zone`, as a version vector.
    public static func knowledge(zone: RecordZone.ID) -> SyncStateKey {
        SyncStateKey("knowledge", zone.name, zone.owner)
    }

    /// The zone share this node follows for `zone`, in its canonical encoding.
    public static func share(zone: RecordZone.ID) -> SyncStateKey {
        SyncStateKey("share", zone.name, zone.owner)
    }

    /// The node ID bound to `device` (its hex, as UTF-8 text).
    public static func boundNode(of device: DeviceID) -> SyncStateKey {
        SyncStateKey("device", device.hex)
    }

    /// The device bound to node ID `node` (the device ID's bytes).
    public static func boundDevice(of node: NodeID) -> SyncStateKey {
        SyncStateKey("node-device", node.hex)
    }

    /// The devices this node trusts, as a JSON array.
    public static let trustedDevices = SyncStateKey("trusted-devices")

    public static func < (a: SyncStateKey, b: SyncStateKey) -> Bool { a.rawValue < b.rawValue }

    /// The key's text, its separators shown as `/`.
    public var description: String {
        rawValue.split(separator: Self.separator, omittingEmptySubsequences: false).joined(separator: "/")
    }
}
