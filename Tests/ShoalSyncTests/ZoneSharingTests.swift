// ZoneSharingTests: a zone reaches only its members, read-only members cannot write it, and only
// its owner's signed share changes who may (Spec/security.md §6).

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct ZoneSharingTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String, _ title: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["title"] = .string(title)
        return r
    }

    /// Whether node `n` holds the record named `name` of the zone.
    func holds(_ sim: Simulation, _ n: Int, _ name: String) async -> Bool {
        ((try? await sim.nodes[n].store.storedVersions(of: [Record.ID(name: name, zone: Self.notes)])) ?? [:]).isEmpty
            == false
    }

    /// Three nodes with identities, all connected: node 0 owns the zone with one note, shared
    /// with node 1 as `role1` and node 2 as `role2` (nil: not shared).
    func shared(seed: UInt64, _ role1: ZoneShare.Role?, _ role2: ZoneShare.Role?, chain: Bool = false) async throws
        -> Simulation
    {
        let sim = try await Simulation(seed: seed, nodes: 3, identities: true)
        if chain { sim.topology = [[0, 1], [1, 2]] }
        try await sim.nodes[0].sync.createZone(Self.notes)
        for (n, role) in [(1, role1), (2, role2)] {
            guard let role, let d = sim.nodes[n].device else { continue }
            _ = try await sim.nodes[0].sync.setMember(d, role: role, of: Self.notes)
        }
        _ = try await sim.nodes[0].store.save(note("n0", "the owner's"))
        #expect(try await sim.runUntilQuiet())
        return sim
    }

    @Test func aZoneReachesOnlyItsMembers() async throws {
        let sim = try await shared(seed: 501, .readWrite, nil)
        #expect(await holds(sim, 1, "n0"))
        #expect(
            await sim.nodes[2].store.zoneAnnouncements().isEmpty,
            "a device that is not a member learns nothing of the zone")
        // Not even by asking: a subscribe from node 2 is refused.
        let conn = try sim.connection(of: 0, to: 2)
        let inc = try await sim.nodes[0].store.zone(Self.notes).incarnation
        let subscribe = SubscribeMessage(
            zone: Self.notes, incarnation: inc, token: nil, knowledge: VersionVector(), window: 4)
        let out = await sim.nodes[0].sync.receive(Frame(type: .subscribe, payload: subscribe.encoded()), on: conn)
        let refusal = out[conn, default: []].compactMap {
            if case .send(let f) = $0, f.type == .error { try? ErrorMessage(decoding: f.payload) } else { nil }
        }
        #expect(refusal.map(\.code) == ["zoneNotFound"], "answered as for a zone the node does not hold: \(out)")
        #expect(!out[conn, default: []].contains { if case .send(let f) = $0 { f.type == .changes } else { false } })
        #expect(await sim.nodes[0].sync.statistics.refusedForPermission == 1)
    }

    @Test func aReadOnlyMembersChangesAreRefusedAndTheOwnersStillFlowToIt() async throws {
        let sim = try await shared(seed: 502, .readWrite, .readOnly)
        #expect(await holds(sim, 2, "n0"))
        // Locally, the zone is read-only on node 2.
        await #expect(throws: ShoalError.self) { try await sim.nodes[2].store.save(note("mine", "from a reader")) }
        // A batch it sends anyway (as a modified node would) is refused whole by the owner.
        let conn = try sim.connection(of: 0, to: 2)
        let inc = try await sim.nodes[0].store.zone(Self.notes).incarnation
        // Two of the forgeries a modified node tried: a deletion stamped with the owner's own node
        // ID, and caught-up knowledge claiming everything of the owner's.
        let victim = sim.nodes[0].store.nodeID
        let stored = try await sim.nodes[0].store.record(for: Record.ID(name: "n0", zone: Self.notes))
        var v = stored.versionVector
        v.advance(victim, to: HLC(milliseconds: sim.clock.now() + 1, logical: 0))
        let tombstone = Record(
            recordType: stored.recordType, id: stored.id, parent: nil, creation: stored.creation, versionVector: v,
            heads: [Record.Head(node: victim, isDeletion: true)], fields: stored.fields, extensions: [])
        let m = ChangesMessage(
            zone: Self.notes, incarnation: inc, batch: 1, isCaughtUp: true, token: ChangeToken(bytes: []),
            knowledge: VersionVector([(victim, HLC(rawValue: .max))]), records: [tombstone])
        let out = await sim.nodes[0].sync.receive(Frame(type: .changes, payload: m.encoded()), on: conn)
        #expect(Simulation.closeError(out, conn)?.code == "permissionFailure", "\(out)")
        #expect(await sim.nodes[0].sync.statistics.refusedForPermission == 1)
        #expect(
            try await sim.nodes[0].store.record(for: Record.ID(name: "n0", zone: Self.notes))["title"]
                == .string("the owner's"))
        // The owner's and the read-write member's writes still reach it.
        _ = try await sim.nodes[0].store.save(note("n1", "later"))
        _ = try await sim.nodes[1].store.save(note("n2", "from the writer"))
        try await sim.notifyChanges(node: 0)
        try await sim.notifyChanges(node: 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 2, "n1"))
        #expect(await holds(sim, 2, "n2"))
        #expect(await holds(sim, 0, "n2"))
    }

    @Test func sharesReachMembersThroughOtherMembersAndSoDoesTheOwnersDeletion() async throws {
        // 0 — 1 — 2: node 2 never meets the owner.
        let sim = try await shared(seed: 503, .readWrite, .readOnly, chain: true)
        #expect(await holds(sim, 2, "n0"), "the share and the records are relayed by node 1")
        let held = await sim.nodes[2].sync.share(of: Self.notes)
        #expect(held?.owner == sim.nodes[0].device)
        try await sim.nodes[0].sync.deleteZone(Self.notes)
        try await sim.route(await sim.nodes[0].sync.restartConnections(reason: "zone deleted"), from: 0)
        #expect(try await sim.runUntilQuiet())
        for n in 1...2 {
            #expect(await sim.nodes[n].store.zones().isEmpty, "node \(n) deletes the zone its owner deleted")
        }
    }

    @Test func aMembersDeletionStaysOnIt() async throws {
        let sim = try await shared(seed: 504, .readWrite, .readWrite)
        try await sim.nodes[1].sync.deleteZone(Self.notes)
        try await sim.route(await sim.nodes[1].sync.restartConnections(reason: "zone deleted"), from: 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].store.zones().isEmpty)
        for n in [0, 2] {
            #expect(await sim.nodes[n].store.zones().map(\.id) == [Self.notes], "node \(n) keeps the zone")
            #expect(await sim.nodes[n].sync.statistics.unsignedZoneChangesIgnored > 0)
        }
    }

    /// What a read-write member (node 1) can forge about the zone's share, sent to the owner and
    /// to another member: a deletion without the owner's share, a share of its own naming itself
    /// the owner, the owner's share with a member added — none changes anything.
    @Test func forgedSharesAndUnsignedDeletionsChangeNothing() async throws {
        let sim = try await shared(seed: 505, .readWrite, .readOnly)
        let owner = try #require(await sim.nodes[0].sync.share(of: Self.notes))
        let inc = owner.share.incarnation
        let attacker = try #require(sim.nodes[1].signer)
        let intruder = DeviceID(bytes: [UInt8](repeating: 7, count: 32))!
        var mine = ZoneShare(
            zone: Self.notes, incarnation: inc, serial: owner.share.serial + 10, ownerKey: [],
            members: [ZoneShare.Member(device: intruder, role: .readWrite)])
        mine = attacker.sign(mine)
        var tampered = owner.share
        tampered.serial += 10
        tampered.members.append(ZoneShare.Member(device: intruder, role: .readWrite))
        tampered.members.sort { $0.device < $1.device }
        var deleted = owner.share
        deleted.serial += 10
        deleted.isDeleted = true
        let announcements = [
            ZoneAnnouncement(zone: Self.notes, incarnation: inc, isDeleted: true),
            ZoneAnnouncement(zone: Self.notes, incarnation: NodeID(high: 9, low: 9)),
            ZoneAnnouncement(share: mine),
            ZoneAnnouncement(share: tampered),
            ZoneAnnouncement(share: deleted)
        ]
        for victim in [0, 2] {
            let conn = try sim.connection(of: victim, to: 1)
            for a in announcements {
                _ = await sim.nodes[victim].sync.receive(
                    Frame(type: .zones, payload: ZonesMessage(zones: [a]).encoded()), on: conn)
            }
            let after = await sim.nodes[victim].sync.share(of: Self.notes)
            #expect(after?.share == owner.share, "node \(victim)'s share is the owner's, unchanged")
            #expect(try await sim.nodes[victim].store.zone(Self.notes).incarnation == inc)
            #expect(await holds(sim, victim, "n0"))
            #expect(await sim.nodes[victim].sync.statistics.sharesIgnored == 3)
            #expect(await sim.nodes[victim].sync.statistics.unsignedZoneChangesIgnored == 2)
        }
    }

    @Test func unsharingTakesEffectAtOnce() async throws {
        let sim = try await shared(seed: 506, .readWrite, nil)
        let member = try #require(sim.nodes[1].device)
        let conn = try sim.connection(of: 0, to: 1)
        let out = try await sim.nodes[0].sync.setMember(member, role: nil, of: Self.notes)
        #expect(out[conn]?.contains(.close(nil)) == true, "the member's connection restarts at once")
        try await sim.route(out, from: 0)
        #expect(try await sim.runUntilQuiet())
        _ = try await sim.nodes[0].store.save(note("after", "not for node 1"))
        try await sim.notifyChanges(node: 0)
        #expect(try await sim.runUntilQuiet())
        #expect(!(await holds(sim, 1, "after")), "nothing more reaches a device no longer a member")
        // It was told: it keeps its copy, read-only (Spec/security.md §6.3).
        #expect(await sim.nodes[1].sync.share(of: Self.notes)?.share.role(of: member) == nil)
        await #expect(throws: ShoalError.self) {
            try await sim.nodes[1].store.save(note("from-1", "a removed member's"))
        }
        #expect(await holds(sim, 1, "n0"), "its copy stays")
        // Sharing again brings it back.
        try await sim.route(try await sim.nodes[0].sync.setMember(member, role: .readWrite, of: Self.notes), from: 0)
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 1, "after"))
        _ = try await sim.nodes[1].store.save(note("from-1", "a member's again"))
        try await sim.notifyChanges(node: 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 0, "from-1"))
    }

    /// Only the owner changes a zone's members, and never itself.
    @Test func onlyTheOwnerShares() async throws {
        let sim = try await shared(seed: 507, .readWrite, nil)
        let d2 = try #require(sim.nodes[2].device), d0 = try #require(sim.nodes[0].device)
        await #expect(throws: ShoalError.self) {
            try await sim.nodes[1].sync.setMember(d2, role: .readWrite, of: Self.notes)
        }
        await #expect(throws: ShoalError.self) {
            try await sim.nodes[0].sync.setMember(d0, role: .readOnly, of: Self.notes)
        }
        #expect(await sim.nodes[1].sync.share(of: Self.notes)?.share.role(of: d2) == nil)
    }
}
