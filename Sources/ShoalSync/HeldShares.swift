// HeldShares: the zones' shares a node holds, as read from its store, what each lets a device do
// with its zone, and how many zones each owner's shares hold here (Spec/security.md §6). It holds
// no store: ``ZoneShares`` reads and writes the shares and tells it.

import ShoalTrust
import ShoalWire

/// What a connection's device may do with a zone, from the zone's share (Spec/security.md §6.2).
enum ZoneAccess: Int, Comparable {
    /// Not a member: it learns nothing of the zone.
    case none
    /// A read-only member: it is served the zone; its changes are refused.
    case read
    /// A read-write member, or any trusted device for a zone without a share.
    case write
    /// The owner, or a connection that is not authenticated (an in-memory transport).
    case owner

    static func < (a: ZoneAccess, b: ZoneAccess) -> Bool { a.rawValue < b.rawValue }
}

/// A zone's share as this node holds it, with its owner.
struct HeldShare {
    var share: ZoneShare
    var owner: DeviceID

    /// What `device` may do with the zone.
    func access(of device: DeviceID) -> ZoneAccess {
        if device == owner { return .owner }
        switch share.role(of: device) {
        case .readWrite?: return .write
        case .readOnly?: return .read
        case nil: return .none
        }
    }
}

/// The shares a node holds, read from its store on first use, and the count of zones per owner.
struct HeldShares {
    /// Per zone read so far, its share (nil inside: the zone has none).
    private var byZone: [RecordZone.ID: HeldShare?] = [:]
    /// How many zones held here each device owns, by their shares; nil until counted, and after
    /// zones went away (zone tombstones purged, a zone's owner replaced).
    private var zonesPerOwner: [DeviceID: Int]? = nil

    /// How many zones' shares were read (those with none included).
    var zonesRead: Int { byZone.count }

    /// The share of `zone` when it was read already: `.some(nil)` when the zone has none; nil
    /// when the store is to be read.
    func cached(_ zone: RecordZone.ID) -> HeldShare?? {
        byZone[zone]
    }

    /// `held` is the share of `zone` now (nil: it has none).
    mutating func note(_ held: HeldShare?, for zone: RecordZone.ID) {
        byZone[zone] = .some(held)
    }

    /// A share created a zone owned by `owner` here.
    mutating func noteZoneCreated(ownedBy owner: DeviceID) {
        zonesPerOwner?[owner, default: 0] &+= 1
    }

    /// Zones went away or changed owner: the counts are taken again on next use.
    mutating func forgetCounts() {
        zonesPerOwner = nil
    }

    /// How many zones held here `owner` owns; nil when they are to be counted (``noteCounts(_:)``).
    func zonesOwned(by owner: DeviceID) -> Int? {
        zonesPerOwner.map { $0[owner, default: 0] }
    }

    /// The zones held here per owner, counted from the store.
    mutating func noteCounts(_ counts: [DeviceID: Int]) {
        zonesPerOwner = counts
    }
}
