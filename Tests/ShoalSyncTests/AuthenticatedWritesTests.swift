// AuthenticatedWritesTests: a node believes a write only when its writer's device proves it,
// whoever relays it (Spec/authenticated-writes.md §4–§6).

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

/// Nodes with device keys replicating a shared zone. Node 1 plays the member that misbehaves: the
/// tests forge its batches to node 0 on the connection the two opened, as a modified build would.
@Suite struct AuthenticatedWritesTests {
    static let team = RecordZone.ID(name: "team")

    func note(_ name: String, _ title: String = "t") -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.team))
        r["title"] = .string(title)
        return r
    }

    func holds(_ sim: Simulation, _ n: Int, _ name: String) async -> Bool {
        let v = try? await sim.nodes[n].store.storedVersions(of: [Record.ID(name: name, zone: Self.team)])
        return v?.isEmpty == false
    }

    /// Node 0 shares the team zone with nodes 1 and 2, and node 2 writes `c0`, which reaches
    /// everyone. Returns node 2's node ID and a time 50 s ahead of the clock (inside the drift
    /// bound), where the tests forge node 2's writes.
    func memberWrote(_ sim: Simulation) async throws -> (victim: NodeID, ahead: HLC) {
        try await sim.createSharedZone(Self.team, on: 0)
        #expect(try await sim.runUntilQuiet())
        _ = try await sim.nodes[2].store.save(note("c0"))
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        return (sim.nodes[2].store.nodeID, HLC(milliseconds: sim.clock.now() &+ 50_000, logical: 0))
    }

    /// Node 1's next batch to node 0 for the zone, as node 0 expects it.
    func batch(_ sim: Simulation, records: [Record], knowledge: VersionVector?, section: WriterLogSection?) async throws
        -> (ConnectionID, Frame)
    {
        let conn = try sim.connection(of: 0, to: 1)
        let inbound = try #require(await sim.nodes[0].sync.sessions[conn]?.inbound[Self.team])
        let token = await sim.nodes[0].sync.position(
            peer: sim.nodes[1].store.nodeID, zone: Self.team, incarnation: inbound.incarnation)
        let m = ChangesMessage(
            zone: Self.team, incarnation: inbound.incarnation, batch: inbound.nextBatch, isCaughtUp: true,
            token: token ?? ChangeToken(bytes: []), knowledge: knowledge, records: records, writerLog: section)
        return (conn, Frame(type: .changes, payload: m.encoded()))
    }

    /// A member's writes reach the owner through another member, each proven by the writer's
    /// device: the owner keeps the writer's log and binds its node ID to that device.
    @Test func relayedWritesAreProvenByTheirWriter() async throws {
        let sim = try await Simulation(seed: 4920, nodes: 3, identities: true)
        sim.topology = [[0, 1], [1, 2]]
        try await sim.createSharedZone(Self.team, on: 0)
        #expect(try await sim.runUntilQuiet())
        for i in 0..<5 { _ = try await sim.nodes[2].store.save(note("n\(i)", "first")) }
        _ = try await sim.nodes[2].store.save(note("n0", "edited"), policy: .allKeys)
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        for i in 0..<5 { #expect(await holds(sim, 0, "n\(i)")) }
        let writer = sim.nodes[2].store.nodeID
        #expect(try await sim.nodes[0].store.logHead(of: writer, in: Self.team).sequence == 6)
        #expect(try await sim.nodes[0].store.boundDevice(of: writer) == sim.nodes[2].device)
        #expect(await sim.nodes[0].sync.statistics.writerEntriesVerified >= 6)
        #expect(await sim.nodes[0].sync.statistics.refusedBatches == 0)
        let vector = try await sim.nodes[0].store.zone(Self.team).versionVector
        #expect(
            await sim.nodes[0].sync.knowledge(of: Self.team)[writer] == vector[writer],
            "knowledge of the writer covers what was relayed")
    }

    /// A member stamps a record with another member's node ID, 50 s ahead, and claims knowledge of
    /// that member up to then — unsigned, or with a range it signed itself. The batch is refused
    /// whole, and the other member's genuine writes of those 50 s still reach the owner.
    @Test(arguments: [false, true]) func aMemberCannotWriteAsAnother(signedByItself: Bool) async throws {
        let sim = try await Simulation(seed: signedByItself ? 4922 : 4921, nodes: 3, identities: true)
        let (victim, ahead) = try await memberWrote(sim)
        var forged = note("forged", "as C")
        forged = Record(
            recordType: forged.recordType, id: forged.id, parent: nil, creation: Dot(node: victim, hlc: ahead),
            versionVector: VersionVector([(victim, ahead)]), heads: [Record.Head(node: victim, isDeletion: false)],
            fields: forged.fields.map {
                var f = $0; f.stamp = Dot(node: victim, hlc: ahead); return f
            }, extensions: [])
        var section: WriterLogSection? = nil
        if signedByItself {
            let signer = try #require(sim.nodes[1].signer)
            let head = try await sim.nodes[0].store.logHead(of: victim, in: Self.team)
            let entry = WriterLog.entry(of: forged, dot: Dot(node: victim, hlc: ahead), sequence: head.sequence + 1)
            let info = try await sim.nodes[0].store.zone(Self.team)
            let checkpoint = signer.sign(
                WriterCheckpoint(
                    zone: Self.team, incarnation: info.incarnation, writer: victim,
                    sequence: entry.sequence, chain: WriterLog.chain(head.chain, entry)))
            section = WriterLogSection(ranges: [
                .init(
                    writer: victim, publicKey: signer.publicKeyDER, firstSequence: entry.sequence,
                    items: [.implied(record: 0)], seal: .init(chain: checkpoint.chain, signature: checkpoint.signature))
            ])
        }
        let (conn, frame) = try await batch(
            sim, records: [forged], knowledge: VersionVector([(victim, ahead)]), section: section)
        let out = await sim.nodes[0].sync.receive(frame, on: conn)
        let error = Simulation.closeError(out, conn)
        #expect(error?.code == (signedByItself ? "permissionFailure" : "invalidArguments"), "\(out)")
        #expect(!(await holds(sim, 0, "forged")))
        #expect(await sim.nodes[0].sync.knowledge(of: Self.team)[victim] < ahead)
        try await sim.route(out, from: 0)
        for i in 0..<5 { _ = try await sim.nodes[2].store.save(note("genuine\(i)")) }
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        for i in 0..<5 { #expect(await holds(sim, 0, "genuine\(i)"), "the member's genuine writes reach the owner") }
        #expect(!(await holds(sim, 0, "forged")))
    }

    /// A member ends a reset pass with a purge horizon naming another member's write 50 s ahead,
    /// as though that member had made a deletion since purged. Taking the horizon would make the
    /// owner count every write of that member up to then as seen; the batch is refused instead,
    /// nothing of it is applied, and the member's genuine writes of those 50 s reach the owner.
    @Test func aMemberCannotHandOverAHorizonItsWritersDidNotProve() async throws {
        let sim = try await Simulation(seed: 4926, nodes: 3, identities: true)
        let (victim, ahead) = try await memberWrote(sim)
        let claimed = VersionVector([(victim, ahead)])
        let conn = try sim.connection(of: 0, to: 1)
        let inbound = try #require(await sim.nodes[0].sync.sessions[conn]?.inbound[Self.team])
        let m = ChangesMessage(
            zone: Self.team, incarnation: inbound.incarnation, batch: inbound.nextBatch, isCaughtUp: true,
            isReset: true,
            token: ChangeToken(bytes: [1]), knowledge: claimed, horizon: claimed, records: [])
        let out = await sim.nodes[0].sync.receive(Frame(type: .changes, payload: m.encoded()), on: conn)
        let error = Simulation.closeError(out, conn)
        #expect(error?.code == "invalidArguments", "\(out)")
        #expect(error?.message.contains("purge horizon") == true, "\(String(describing: error))")
        #expect(try await sim.nodes[0].store.purgeHorizon(of: Self.team)[victim] == .zero)
        #expect(await sim.nodes[0].sync.knowledge(of: Self.team)[victim] < ahead)
        #expect(await holds(sim, 0, "c0"), "a refused reset pass deletes nothing")
        try await sim.route(out, from: 0)
        for i in 0..<5 { _ = try await sim.nodes[2].store.save(note("genuine\(i)")) }
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        for i in 0..<5 { #expect(await holds(sim, 0, "genuine\(i)"), "the member's genuine writes reach the owner") }
    }

    /// A relay delivers a writer's second write, with the first one's entry but not its record,
    /// and states knowledge of the writer up to the second. The owner applies what it got but
    /// adopts knowledge only below the withheld write, so it gets that write from the writer.
    @Test func aWithheldWriteIsNotSkipped() async throws {
        let sim = try await Simulation(seed: 4923, nodes: 3, identities: true)
        try await sim.createSharedZone(Self.team, on: 0)
        #expect(try await sim.runUntilQuiet())
        await sim.separate(0, 2)
        await sim.separate(1, 2)
        _ = try await sim.nodes[2].store.save(note("a"))
        _ = try await sim.nodes[2].store.save(note("b"))
        let writer = sim.nodes[2].store.nodeID
        let store2 = sim.nodes[2].store
        let entries = try await store2.entries(of: writer, in: Self.team, after: 0, limit: 10)
        #expect(entries.map(\.record) == ["a", "b"])
        let b = try #require(try await store2.storedVersions(of: [Record.ID(name: "b", zone: Self.team)]).values.first)
        let info = try await store2.zone(Self.team)
        let chain = try #require(try await store2.chainValue(of: writer, in: Self.team, at: 2))
        let checkpoint = try #require(sim.nodes[2].signer).sign(
            WriterCheckpoint(
                zone: Self.team, incarnation: info.incarnation, writer: writer,
                sequence: 2, chain: chain))
        let section = WriterLogSection(ranges: [
            .init(
                writer: writer, publicKey: try #require(sim.nodes[2].signer).publicKeyDER, firstSequence: 1,
                items: [.whole(entries[0]), .implied(record: 0)],
                seal: .init(chain: checkpoint.chain, signature: checkpoint.signature))
        ])
        let (conn, frame) = try await batch(
            sim, records: [b], knowledge: VersionVector([(writer, b.versionVector[writer])]), section: section)
        let out = await sim.nodes[0].sync.receive(frame, on: conn)
        #expect(Simulation.closeError(out, conn) == nil, "\(out)")
        #expect(await holds(sim, 0, "b"))
        #expect(!(await holds(sim, 0, "a")))
        #expect(
            await sim.nodes[0].sync.knowledge(of: Self.team)[writer] < entries[0].hlc,
            "no knowledge past the withheld write")
        try await sim.route(out, from: 0)
        sim.partitions.remove(sim.pairKey(0, 2))
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 0, "a"), "the withheld write arrives from its writer")
    }

    /// The owner removes a member while another member, which relays for it, is away. The
    /// removed member writes; the relay, which still held the old share, takes the write. When
    /// the relay and the owner meet, that write is left out, the rest still flows, and the
    /// connection stays up.
    @Test func aRemovedMembersNewWritesDoNotReachTheOwner() async throws {
        let sim = try await Simulation(seed: 4924, nodes: 3, identities: true)
        sim.topology = [[0, 1], [1, 2]]
        try await sim.createSharedZone(Self.team, on: 0)
        #expect(try await sim.runUntilQuiet())
        _ = try await sim.nodes[2].store.save(note("before"))
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 0, "before"))
        await sim.separate(0, 1)
        _ = try await sim.nodes[0].sync.setMember(try #require(sim.nodes[2].device), role: nil, of: Self.team)
        _ = try await sim.nodes[2].store.save(note("after"))
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 1, "after"), "the relay held the share from before the removal")
        _ = try await sim.nodes[1].store.save(note("relays-own"))
        sim.partitions.remove(sim.pairKey(0, 1))
        #expect(try await sim.runUntilQuiet())
        #expect(await holds(sim, 0, "relays-own"))
        #expect(!(await holds(sim, 0, "after")), "the removed member's new write does not reach the owner")
        #expect(await sim.nodes[0].sync.statistics.refusedBatches == 0)
    }

    /// A member sends its own large record with a range naming that record's write 4,096 times.
    /// A log's timestamps strictly increase, so the range is refused before any entry is rebuilt:
    /// without that check the owner hashed the 64 KiB value once per item (256 MiB for one
    /// 64 KiB frame) before the chain refused it.
    @Test func aRangeRepeatingAWriteIsRefusedBeforeItIsRebuilt() async throws {
        let sim = try await Simulation(seed: 4927, nodes: 3, identities: true)
        try await sim.createSharedZone(Self.team, on: 0)
        #expect(try await sim.runUntilQuiet())
        let id = Record.ID(name: "big", zone: Self.team)
        _ = try await sim.nodes[1].store.save(note("big", String(repeating: "x", count: 64 << 10)))
        let big = try #require(try await sim.nodes[1].store.storedVersions(of: [id]).values.first)
        let writer = sim.nodes[1].store.nodeID
        let head = try await sim.nodes[0].store.logHead(of: writer, in: Self.team)
        let section = WriterLogSection(ranges: [
            .init(
                writer: writer, firstSequence: head.sequence + 1,
                items: Array(repeating: .implied(record: 0), count: 4096))
        ])
        let (conn, frame) = try await batch(sim, records: [big], knowledge: nil, section: section)
        let out = await sim.nodes[0].sync.receive(frame, on: conn)
        let error = Simulation.closeError(out, conn)
        #expect(error?.code == "invalidArguments", "\(out)")
        #expect(
            error?.message.contains("entry #\(head.sequence + 2) of \(writer) is not later than the entry before it")
                == true,
            "\(String(describing: error))")
        #expect(!(await holds(sim, 0, "big")))
    }
}
