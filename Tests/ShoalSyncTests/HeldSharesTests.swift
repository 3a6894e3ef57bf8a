// HeldSharesTests: what a zone's share lets each device do, and the shares and counts a node keeps, without the actor.

import Testing
@testable import ShoalSync
import ShoalWire

@Suite struct HeldSharesTests {
    static let zone = RecordZone.ID(name: "team")
    static func device(_ n: UInt8) -> DeviceID? { DeviceID(bytes: [UInt8](repeating: n, count: 32)) }

    /// The owner may do anything, a read-write member write, a read-only member read, and any
    /// other device nothing (Spec/security.md §6.2).
    @Test func aShareGivesEachDeviceItsRole() throws {
        let owner = try #require(Self.device(1)), writer = try #require(Self.device(2))
        let reader = try #require(Self.device(3)), stranger = try #require(Self.device(4))
        let share = ZoneShare(
            zone: Self.zone, incarnation: NodeID(high: 1, low: 1), serial: 1, ownerKey: [],
            members: [
                ZoneShare.Member(device: writer, role: .readWrite), ZoneShare.Member(device: reader, role: .readOnly)
            ])
        let held = HeldShare(share: share, owner: owner)
        #expect(held.access(of: owner) == .owner)
        #expect(held.access(of: writer) == .write)
        #expect(held.access(of: reader) == .read)
        #expect(held.access(of: stranger) == .none)
        #expect(ZoneAccess.none < .read && ZoneAccess.read < .write && ZoneAccess.write < .owner)
    }

    /// A zone read once is not read again, whether it has a share or not; the per-owner counts
    /// are taken once, kept in step as shares create zones, and taken again after zones go.
    @Test func sharesAreReadOnceAndCountsKeptInStep() throws {
        let owner = try #require(Self.device(1)), other = try #require(Self.device(2))
        var shares = HeldShares()
        #expect(shares.cached(Self.zone) == nil, "not read yet")
        shares.note(nil, for: Self.zone)
        #expect(shares.cached(Self.zone).map { $0 == nil } == true, "read: the zone has no share")
        #expect(shares.zonesRead == 1)

        #expect(shares.zonesOwned(by: owner) == nil, "to be counted")
        shares.noteZoneCreated(ownedBy: owner)
        #expect(shares.zonesOwned(by: owner) == nil, "a zone created before the count is in the count")
        shares.noteCounts([owner: 2])
        shares.noteZoneCreated(ownedBy: owner)
        #expect(shares.zonesOwned(by: owner) == 3 && shares.zonesOwned(by: other) == 0)
        shares.forgetCounts()
        #expect(shares.zonesOwned(by: owner) == nil)
    }
}
