// TrustedDeviceBoundsTests: what a trusted device can make a node hold, create or reveal through
// its zone announcements and requests — each attack first, then the bound (Spec/security.md §6).

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct TrustedDeviceBoundsTests {
    static let team = RecordZone.ID(name: "team")

    func note(_ name: String, in zone: RecordZone.ID = Self.team) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: zone))
        r["title"] = .string(name)
        return r
    }

    func holds(_ sim: Simulation, _ n: Int, _ name: String, in zone: RecordZone.ID = Self.team) async -> Bool {
        ((try? await sim.nodes[n].store.storedVersions(of: [Record.ID(name: name, zone: zone)])) ?? [:]).isEmpty
            == false
    }

    func errors(_ out: [ConnectionID: [SyncOutput]], _ conn: ConnectionID) -> [ErrorMessage] {
        out[conn, default: []].compactMap {
            switch $0 {
            case .send(let f) where f.type == .error: try? ErrorMessage(decoding: f.payload)
            case .close(let e?): e
            default: nil
            }
        }
    }

    /// Node 1, a trusted device that is no member, holds a zone without a share (an "open" one)
    /// with a record: the node with a device key does not take it, and when node 2, the real
    /// owner of a zone of that name, shares it, node 1's record never reaches the owner's zone.
    @Test func anUnsharedZoneFromATrustedDeviceIsNotPlanted() async throws {
        let sim = try await Simulation(seed: 4901, nodes: 3, identities: true)
        sim.topology = [[0, 1], [0, 2]]
        try await sim.nodes[1].store.createZone(Self.team)
        _ = try await sim.nodes[1].store.save(note("planted"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[0].store.zoneAnnouncements().isEmpty, "an unsigned announcement creates no zone")
        // The real owner shares its zone of that name with node 0.
        _ = try await sim.nodes[2].sync.createZone(Self.team)
        try await sim.route(
            try await sim.nodes[2].sync.setMember(try #require(sim.nodes[0].device), role: .readWrite, of: Self.team),
            from: 2)
        _ = try await sim.nodes[2].store.save(note("owners"))
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 0, "owners"))
        #expect(!(await holds(sim, 0, "planted")))
        #expect(!(await holds(sim, 2, "planted")), "the planted record never reaches the owner")
    }

    /// A zone held here without a share in another incarnation is another zone under the same
    /// name: the owner's share of its zone does not pull the copy's records in.
    @Test func aCopyWithoutAShareIsNotMergedIntoTheOwnersZone() async throws {
        let sim = try await Simulation(seed: 4902, nodes: 2, identities: true)
        try await sim.nodes[0].store.createZone(Self.team)
        _ = try await sim.nodes[0].store.save(note("local"))
        _ = try await sim.nodes[1].sync.createZone(Self.team)
        _ = try await sim.nodes[1].sync.setMember(try #require(sim.nodes[0].device), role: .readWrite, of: Self.team)
        _ = try await sim.nodes[1].store.save(note("owners"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(!(await holds(sim, 1, "local")), "the copy's record stays out of the owner's zone")
        #expect(await sim.nodes[0].sync.statistics.sharesIgnored > 0)
        // Deleting the copy lets the owner's share in.
        try await sim.nodes[0].sync.deleteZone(Self.team)
        try await sim.route(await sim.nodes[0].sync.restartConnections(reason: "zone deleted"), from: 0)
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 0, "owners"))
        #expect(!(await holds(sim, 1, "local")))
    }

    /// Another trusted device took the name first (its own zone, shared with node 0): the real
    /// owner's share is ignored while node 0 holds that zone, and taken once node 0 deletes its
    /// copy; the first zone's records never reach the second.
    @Test func aNameTakenByAnotherOwnerIsFreedByDeletingTheCopy() async throws {
        let sim = try await Simulation(seed: 4909, nodes: 3, identities: true)
        sim.topology = [[0, 1], [0, 2]]
        let node0 = try #require(sim.nodes[0].device)
        _ = try await sim.nodes[1].sync.createZone(Self.team)
        _ = try await sim.nodes[1].sync.setMember(node0, role: .readWrite, of: Self.team)
        _ = try await sim.nodes[1].store.save(note("squatter"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet(reconnect: false))
        #expect(await holds(sim, 0, "squatter"))
        _ = try await sim.nodes[2].sync.createZone(Self.team)
        _ = try await sim.nodes[2].sync.setMember(node0, role: .readWrite, of: Self.team)
        _ = try await sim.nodes[2].store.save(note("owners"))
        try await sim.connect(0, 2)
        #expect(try await sim.runUntilQuiet(reconnect: false))
        #expect(
            await sim.nodes[0].sync.share(of: Self.team)?.owner == sim.nodes[1].device,
            "the first owner keeps the name while its zone is here")
        #expect(!(await holds(sim, 0, "owners")))
        try await sim.nodes[0].sync.deleteZone(Self.team)
        try await sim.route(await sim.nodes[0].sync.restartConnections(reason: "zone deleted"), from: 0)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[0].sync.share(of: Self.team)?.owner == sim.nodes[2].device)
        #expect(await holds(sim, 0, "owners"))
        #expect(!(await holds(sim, 0, "squatter")))
        #expect(!(await holds(sim, 2, "squatter")), "nothing of the first zone reaches the owner's")
    }

    /// A device that owns many zones and shares them all with node 0 fills only its own quota:
    /// another owner's share still creates its zone.
    @Test func oneOwnersZonesDoNotCrowdOutAnothers() async throws {
        var c = SyncConfiguration()
        c.maxZones = 6
        c.maxZonesPerOwner = 4
        let sim = try await Simulation(seed: 4903, nodes: 3, configuration: c, identities: true)
        sim.topology = [[0, 1], [0, 2]]
        let victim = try #require(sim.nodes[0].device)
        for i in 0..<6 {
            let zone = RecordZone.ID(name: "junk-\(i)")
            _ = try await sim.nodes[1].sync.createZone(zone)
            _ = try await sim.nodes[1].sync.setMember(victim, role: .readWrite, of: zone)
        }
        try await sim.connect(0, 1)
        let conn = try sim.connection(of: 0, to: 1)
        _ = try await sim.runUntilQuiet(reconnect: false)
        #expect(
            await sim.nodes[0].store.zoneAnnouncements().isEmpty,
            "past its owner's limit, the announcement creates none")
        let junk = await sim.nodes[0].sync.sessions[conn] == nil
        #expect(junk, "the owner's own connection closed")
        _ = try await sim.nodes[2].sync.createZone(Self.team)
        _ = try await sim.nodes[2].sync.setMember(victim, role: .readWrite, of: Self.team)
        _ = try await sim.nodes[2].store.save(note("owners"))
        try await sim.connect(0, 2)
        _ = try await sim.runUntilQuiet(reconnect: false)
        #expect(await holds(sim, 0, "owners"), "another owner's share is taken")
    }

    /// A read-write member (node 1) sends the owner one record naming made-up writers: no write
    /// of theirs is proven by a device (Spec/authenticated-writes.md §5), so the batch is refused
    /// whole and the zone names none of them. Another member (node 2) still writes as itself,
    /// directly, and relayed by a member.
    @Test(arguments: [false, true]) func madeUpWritersDoNotStopAMemberFromWriting(relayed: Bool) async throws {
        var c = SyncConfiguration()
        c.maxZoneWriters = 8
        let sim = try await Simulation(seed: relayed ? 4911 : 4910, nodes: 3, configuration: c, identities: true)
        if relayed { sim.topology = [[0, 1], [1, 2]] }
        try await sim.createSharedZone(Self.team, on: 0)
        _ = try await sim.nodes[0].store.save(note("first"))
        #expect(try await sim.runUntilQuiet())
        let conn = try sim.connection(of: 0, to: 1)
        let inbound = try #require(await sim.nodes[0].sync.sessions[conn]?.inbound[Self.team])
        let token = await sim.nodes[0].sync.position(
            peer: sim.nodes[1].store.nodeID, zone: Self.team, incarnation: inbound.incarnation)
        let hlc = HLC(milliseconds: sim.clock.now(), logical: 0)
        let writers = (1...7).map { NodeID(high: 0xF00D, low: UInt64($0)) }
        let flood = Record(
            recordType: "Note", id: Record.ID(name: "flood", zone: Self.team), parent: nil,
            creation: Dot(node: writers[0], hlc: hlc), versionVector: VersionVector(writers.map { ($0, hlc) }),
            heads: [Record.Head(node: writers[0], isDeletion: false)], fields: [], extensions: [])
        let m = ChangesMessage(
            zone: Self.team, incarnation: inbound.incarnation, batch: inbound.nextBatch, isCaughtUp: true,
            token: token ?? ChangeToken(bytes: []), knowledge: nil, records: [flood])
        let out = await sim.nodes[0].sync.receive(Frame(type: .changes, payload: m.encoded()), on: conn)
        let error = Simulation.closeError(out, conn)
        #expect(
            error?.code == "invalidArguments" && error?.message.contains("past the newest entry of its log") == true,
            "\(out)")
        let vector = try await sim.nodes[0].store.zone(Self.team).versionVector
        #expect(!vector.entries.contains { writers.contains($0.node) }, "no made-up writer reaches the zone")
        try await sim.route(out, from: 0)
        #expect(try await sim.runUntilQuiet())
        _ = try await sim.nodes[2].store.save(note("from-2"))
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 0, "from-2"), "a member writes as itself")
        #expect(!(await holds(sim, 0, "flood")))
        #expect(await sim.nodes[0].sync.statistics.refusedBatches == 1)
    }

    /// The refusal names the limit, not how many zones the node holds.
    @Test func theZoneLimitDoesNotSayHowManyZonesTheNodeHolds() async throws {
        var c = SyncConfiguration()
        c.maxZonesPerOwner = 2
        let sim = try await Simulation(seed: 4904, nodes: 2, configuration: c, identities: true)
        let victim = try #require(sim.nodes[0].device)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let conn = try sim.connection(of: 0, to: 1)
        for i in 0..<3 {
            let zone = RecordZone.ID(name: "z\(i)")
            _ = try await sim.nodes[1].sync.createZone(zone)
            _ = try await sim.nodes[1].sync.setMember(victim, role: .readWrite, of: zone)
        }
        let zones = await sim.nodes[1].sync.announcedZones(for: try sim.connection(of: 1, to: 0))
        let out = await sim.nodes[0].sync.receive(
            Frame(type: .zones, payload: ZonesMessage(zones: zones).encoded()), on: conn)
        let e = try #require(errors(out, conn).first)
        #expect(e.code == "limitExceeded")
        #expect(e.message.contains("maxZonesPerOwner"))
        #expect(!e.message.contains("holds"), "\(e.message)")
    }

    /// A device that is no member asks for a zone that exists and one that does not, and sends
    /// batches for both: the answers are the same, word for word, but for the zone's name.
    @Test func aNonMemberCannotTellAZoneThatExistsFromOneThatDoesNot() async throws {
        let sim = try await Simulation(seed: 4905, nodes: 2, identities: true)
        _ = try await sim.nodes[0].sync.createZone(Self.team)
        let absent = RecordZone.ID(name: "tean")
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let conn = try sim.connection(of: 0, to: 1)
        let inc = try await sim.nodes[0].store.zone(Self.team).incarnation
        func answer(_ frame: Frame) async -> [String] {
            let out = await sim.nodes[0].sync.receive(frame, on: conn)
            return errors(out, conn).map { "\($0.code): \($0.message)" }
        }
        for zone in [Self.team, absent] {
            let sub = SubscribeMessage(zone: zone, incarnation: inc, token: nil, knowledge: VersionVector(), window: 4)
            let said = await answer(Frame(type: .subscribe, payload: sub.encoded()))
            #expect(
                said == ["zoneNotFound: zone \(zone) is not replicated by node \(sim.nodes[0].store.nodeID.short)"],
                "\(said)")
        }
        var batches = [String]()
        for zone in [Self.team, absent] {
            try await sim.connect(0, 1, duplicate: true)
            let c = try #require(sim.links.last).connA
            let m = ChangesMessage(
                zone: zone, incarnation: inc, batch: 1, isCaughtUp: true, token: ChangeToken(bytes: []), knowledge: nil,
                records: [])
            let out = await sim.nodes[0].sync.receive(Frame(type: .changes, payload: m.encoded()), on: c)
            batches += errors(out, c).map {
                "\($0.code): \($0.message.replacingOccurrences(of: zone.description, with: "Z"))"
            }
        }
        #expect(batches.count == 2 && batches[0] == batches[1], "\(batches)")
    }

    /// A peer announces thousands of deleted zones with long names, again and again: the node
    /// keeps nothing of them.
    @Test func announcementsOfZonesNotHeldAreNotKept() async throws {
        let sim = try await Simulation(seed: 4906, nodes: 2, identities: true)
        _ = try await sim.nodes[0].sync.createZone(Self.team)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let conn = try sim.connection(of: 0, to: 1)
        let long = String(repeating: "x", count: 240)
        for round in 0..<4 {
            let zones = (0..<2_000).map {
                ZoneAnnouncement(
                    zone: RecordZone.ID(name: "\(long)-\(round)-\(1_000_000 + $0)"),
                    incarnation: NodeID(high: 1, low: 1), isDeleted: true)
            }
            let out = await sim.nodes[0].sync.receive(
                Frame(type: .zones, payload: ZonesMessage(zones: zones).encoded()), on: conn)
            #expect(errors(out, conn).isEmpty)
        }
        // Shares of zones node 0 neither holds nor is a member of: not even looked up.
        let stranger = DeviceID(bytes: [UInt8](repeating: 9, count: 32))!
        let shares = (0..<2_000).map { i in
            var share = ZoneShare(
                zone: RecordZone.ID(name: "\(long)-shared-\(1_000_000 + i)"), incarnation: NodeID(high: 3, low: 3),
                serial: 1,
                ownerKey: [UInt8](repeating: 4, count: 91),
                members: [ZoneShare.Member(device: stranger, role: .readWrite)])
            share.signature = [UInt8](repeating: 1, count: ZoneShare.signatureBytes)
            return ZoneAnnouncement(share: share)
        }
        let out = await sim.nodes[0].sync.receive(
            Frame(type: .zones, payload: ZonesMessage(zones: shares).encoded()), on: conn)
        #expect(errors(out, conn).isEmpty)
        #expect(await sim.nodes[0].sync.sharesRead <= 1, "no share looked up for a zone not held")
        // Deletions of zones node 0 never held, naming it a member: neither verified nor kept,
        // however many (these do not verify; one that does is not kept either).
        let me = try #require(sim.nodes[0].device)
        var deletions = (0..<2_000).map { i in
            var share = ZoneShare(
                zone: RecordZone.ID(name: "\(long)-gone-\(1_000_000 + i)"), incarnation: NodeID(high: 5, low: 5),
                serial: 2, isDeleted: true,
                ownerKey: [UInt8](repeating: 4, count: 91), members: [ZoneShare.Member(device: me, role: .readWrite)])
            share.signature = [UInt8](repeating: 1, count: ZoneShare.signatureBytes)
            return ZoneAnnouncement(share: share)
        }
        let signed = try #require(sim.nodes[1].signer).sign(
            ZoneShare(
                zone: RecordZone.ID(name: "\(long)-gone-2000000"), incarnation: NodeID(high: 5, low: 5),
                serial: 2, isDeleted: true, ownerKey: [], members: [ZoneShare.Member(device: me, role: .readWrite)]))
        deletions.append(ZoneAnnouncement(share: signed))
        let gone = await sim.nodes[0].sync.receive(
            Frame(type: .zones, payload: ZonesMessage(zones: deletions).encoded()), on: conn)
        #expect(errors(gone, conn).isEmpty, "not one was verified")
        #expect(try await sim.nodes[0].store.syncValue(.share(zone: signed.zone)) == nil)
        #expect(await sim.nodes[0].sync.sharesRead <= 1)
        let session = try #require(await sim.nodes[0].sync.sessions[conn])
        #expect(session.peerZones.isEmpty, "only zones held here are kept")
        #expect(session.peer?.zones.isEmpty == true, "the hello's zones are not kept either")
        #expect(await sim.nodes[0].store.zoneAnnouncements().count == 1)
    }

    /// Shares with signatures that do not verify are counted per connection, which closes past
    /// a few: each costs the node a verification.
    @Test func sharesThatDoNotVerifyCloseTheConnection() async throws {
        let sim = try await Simulation(seed: 4907, nodes: 2, identities: true)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let conn = try sim.connection(of: 0, to: 1)
        let forger = try #require(sim.nodes[1].signer)
        var closed = false
        for i in 0...SyncNode.maxBadShares {
            var share = forger.sign(
                ZoneShare(
                    zone: RecordZone.ID(name: "forged-\(i)"), incarnation: NodeID(high: 2, low: UInt64(i)), serial: 1,
                    ownerKey: [],
                    members: [ZoneShare.Member(device: try #require(sim.nodes[0].device), role: .readWrite)]))
            share.signature[0] ^= 0xFF
            let out = await sim.nodes[0].sync.receive(
                Frame(type: .zones, payload: ZonesMessage(zones: [ZoneAnnouncement(share: share)]).encoded()), on: conn)
            closed = Simulation.closeError(out, conn) != nil
        }
        #expect(closed, "closed after \(SyncNode.maxBadShares) shares that do not verify")
        #expect(await sim.nodes[0].store.zoneAnnouncements().isEmpty)
    }

    /// The owner removes node 2 while node 1, a member, is away. Once node 1 meets the owner it
    /// stops serving node 2 at once, and node 2 is told: it keeps its copy, read-only.
    @Test func aRemovedMemberIsToldAndNoLongerServed() async throws {
        let sim = try await Simulation(seed: 4908, nodes: 3, identities: true)
        sim.topology = [[0, 1], [1, 2]]
        _ = try await sim.nodes[0].sync.createZone(Self.team)
        for n in [1, 2] {
            _ = try await sim.nodes[0].sync.setMember(
                try #require(sim.nodes[n].device), role: .readWrite, of: Self.team)
        }
        _ = try await sim.nodes[0].store.save(note("before"))
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 2, "before"))
        let removed = try #require(sim.nodes[2].device)
        // Node 1 is away when the owner removes node 2.
        sim.partitions.insert([0, 1])
        for i in sim.links.indices.reversed() where sim.pairKey(sim.links[i].a, sim.links[i].b) == [0, 1] {
            await sim.reset(i)
        }
        try await sim.route(try await sim.nodes[0].sync.setMember(removed, role: nil, of: Self.team), from: 0)
        _ = try await sim.nodes[0].store.save(note("after"))
        sim.partitions.remove([0, 1])
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 1, "after"))
        #expect(!(await holds(sim, 2, "after")), "a member that met the newer share no longer serves the removed one")
        #expect(
            await sim.nodes[2].sync.share(of: Self.team)?.share.role(of: removed) == nil, "the removed member was told")
        await #expect(throws: ShoalError.self) { try await sim.nodes[2].store.save(note("late")) }
        #expect(await holds(sim, 2, "before"), "it keeps its copy")
    }
}
