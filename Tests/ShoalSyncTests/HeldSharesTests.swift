// HeldSharesTests: what a zone's share lets each device do, and the shares and counts a node keeps, without the actor.

import Foundation
import Testing
@testable import ShoalSync
import ShoalStore
import ShoalTrust
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

    /// `ZoneShares` over a real store: a kept share is durable (another instance over the store
    /// reads it back), a stored share whose signature does not verify counts as none, and the
    /// zones per owner are counted from the shares held.
    @Test func zoneSharesKeepAndReadSharesFromTheStore() async throws {
        let path = FileManager.default.temporaryDirectory.path + "/shoal-zone-shares-\(UInt64.random(in: 0 ... .max))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try Store.open(directory: path)
        let signer = try #require(ShareSigner.seeded([UInt8](repeating: 5, count: 31) + [1]))
        let team = try await store.createZone(Self.zone)
        let other = RecordZone.ID(name: "other")
        let otherInfo = try await store.createZone(other)
        let shares = ZoneShares(store: store, limits: WireLimits())
        #expect(await shares.share(of: Self.zone) == nil, "no share kept yet")
        #expect(await shares.zonesOwned(by: signer.device) == 0)

        let share = signer.sign(
            ZoneShare(
                zone: Self.zone, incarnation: team.incarnation, serial: 1, ownerKey: signer.publicKeyDER, members: []))
        try await shares.keep(share, owner: signer.device)
        #expect(await shares.share(of: Self.zone)?.owner == signer.device)
        let reopened = ZoneShares(store: store, limits: WireLimits())
        #expect(await reopened.share(of: Self.zone)?.share == share, "kept in the store")
        #expect(await reopened.zonesOwned(by: signer.device) == 1)

        var forged = signer.sign(
            ZoneShare(
                zone: other, incarnation: otherInfo.incarnation, serial: 1, ownerKey: signer.publicKeyDER, members: []))
        forged.serial = 2  // changed after signing
        try await store.setSyncValue(.share(zone: other), forged.encoded(), durably: true)
        #expect(
            await ZoneShares(store: store, limits: WireLimits()).share(of: other) == nil, "a share that does not verify"
        )
    }
}
