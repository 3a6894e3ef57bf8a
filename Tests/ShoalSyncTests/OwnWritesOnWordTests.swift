// OwnWritesOnWordTests: a peer's own writes are taken on its connection's word and kept implied;
// their chain is checked when they are first relayed (Spec/authenticated-writes.md §5.1).

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct OwnWritesOnWordTests {
    static let team = RecordZone.ID(name: "team")

    func note(_ name: String, _ title: String = "a title long enough to be hashed in its entry") -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.team))
        r["title"] = .string(title)
        return r
    }

    func holdsAll(_ sim: Simulation, _ n: Int, _ names: [String]) async throws -> Bool {
        let ids = names.map { Record.ID(name: $0, zone: Self.team) }
        return try await sim.nodes[n].store.storedVersions(of: ids).count == ids.count
    }

    /// A member's bulk writes reach its neighbour, which takes them on the connection's word
    /// without rebuilding or chaining a single entry; when that neighbour relays them to the
    /// owner it proves them first, and the owner verifies every entry against the writer's
    /// checkpoint as for any relayed range.
    @Test func takenWritesAreProvenWhenRelayed() async throws {
        let sim = try await Simulation(seed: 5101, nodes: 3, identities: true)
        sim.topology = [[0, 1], [1, 2]]
        try await sim.createSharedZone(Self.team, on: 0)
        #expect(try await sim.runUntilQuiet())
        let names = (0..<150).map { "n\($0)" }
        _ = try await sim.nodes[2].store.modify(saving: names.map { note($0) }, deleting: [])
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        let writer = sim.nodes[2].store.nodeID
        let relay = await sim.nodes[1].sync.statistics
        #expect(relay.writerEntriesTaken >= 150, "\(relay)")
        #expect(relay.writerEntriesVerified == 0, "the relay rebuilt none of the writer's entries on arrival")
        #expect(await !sim.nodes[1].store.holdsImplied(of: writer, in: Self.team), "relaying proved them")
        #expect(await sim.nodes[1].store.impliedCheckpointsDropped == 0)
        #expect(try await holdsAll(sim, 0, names))
        #expect(try await sim.nodes[0].store.logHead(of: writer, in: Self.team).sequence == 150)
        #expect(await sim.nodes[0].sync.statistics.writerEntriesVerified >= 150)
        #expect(await sim.nodes[0].sync.statistics.refusedBatches == 0)
        let vector = try await sim.nodes[0].store.zone(Self.team).versionVector
        #expect(await sim.nodes[0].sync.knowledge(of: Self.team)[writer] == vector[writer])
        // Both logs hash to what the writer signed: the owner's, which it verified, and the relay's.
        let relayHead = try await sim.nodes[1].store.logHead(of: writer, in: Self.team)
        #expect(relayHead == (try await sim.nodes[0].store.logHead(of: writer, in: Self.team)))
    }

    /// A member's records taken implied, then edited by their holder and by the writer, keep
    /// the entries they implied: the holder relays the writer's whole log afterwards.
    @Test func editedRecordsKeepTheEntriesTheyImplied() async throws {
        let sim = try await Simulation(seed: 5102, nodes: 3, identities: true)
        sim.topology = [[0, 1], [1, 2]]
        try await sim.createSharedZone(Self.team, on: 0)
        #expect(try await sim.runUntilQuiet())
        await sim.separate(0, 1)
        let names = (0..<100).map { "m\($0)" }
        _ = try await sim.nodes[2].store.modify(saving: names.map { note($0) }, deleting: [])
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        let writer = sim.nodes[2].store.nodeID
        #expect(await sim.nodes[1].store.holdsImplied(of: writer, in: Self.team))
        _ = try await sim.nodes[1].store.save(note("m3", "edited by the relay"), policy: .allKeys)
        _ = try await sim.nodes[2].store.save(note("m4", "edited by the writer"), policy: .allKeys)
        try await sim.nodes[1].store.delete(Record.ID(name: "m5", zone: Self.team))
        try await sim.notifyChanges(node: 1)
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        sim.partitions.remove(sim.pairKey(0, 1))
        #expect(try await sim.runUntilQuiet())
        #expect(try await sim.nodes[0].store.logHead(of: writer, in: Self.team).sequence == 101)
        #expect(await sim.nodes[0].sync.statistics.refusedBatches == 0)
        let digests = try await (0..<3).asyncMap { try await sim.nodes[$0].store.digest(of: Self.team) }
        #expect(digests.allSatisfy { $0 == digests[0] }, "all three hold the same zone")
    }

    /// A member whose checkpoint does not match the writes it sent is believed for those writes
    /// (they are its own), but its neighbour drops that checkpoint when it proves them and does
    /// not relay them; the other members get them from their writer, and everyone converges.
    @Test func aPeerWhoseCheckpointLiesLosesOnlyTheRelayingOfItsWrites() async throws {
        let sim = try await Simulation(seed: 5103, nodes: 3, identities: true)
        try await sim.createSharedZone(Self.team, on: 0)
        #expect(try await sim.runUntilQuiet())
        let names = (0..<80).map { "l\($0)" }
        _ = try await sim.nodes[1].store.modify(saving: names.map { note($0) }, deleting: [])
        let liar = sim.nodes[1].store.nodeID
        let entries = try await sim.nodes[1].store.entries(of: liar, in: Self.team, after: 0, limit: 1000)
        #expect(entries.count == 80)
        let stored = try await sim.nodes[1].store.storedVersions(of: names.map { Record.ID(name: $0, zone: Self.team) })
        let versions = names.compactMap { stored[Record.ID(name: $0, zone: Self.team)] }
        let info = try await sim.nodes[1].store.zone(Self.team)
        let signer = try #require(sim.nodes[1].signer)
        // Signed by the member's own device, over a chain its writes do not hash to.
        let lie = signer.sign(
            WriterCheckpoint(
                zone: Self.team, incarnation: info.incarnation, writer: liar, sequence: 80,
                chain: WriterLog.chain(WriterLog.chainStart(zone: Self.team, writer: liar), entries[0])))
        let section = WriterLogSection(ranges: [
            .init(
                writer: liar, publicKey: signer.publicKeyDER, firstSequence: 1,
                items: (0..<80).map { .implied(record: $0) },
                seal: .init(chain: lie.chain, signature: lie.signature))
        ])
        let conn = try sim.connection(of: 0, to: 1)
        let inbound = try #require(await sim.nodes[0].sync.sessions[conn]?.inbound[Self.team])
        let m = ChangesMessage(
            zone: Self.team, incarnation: inbound.incarnation, batch: inbound.nextBatch, isCaughtUp: true,
            token: ChangeToken(bytes: [7]), knowledge: nil, records: versions, writerLog: section)
        let out = await sim.nodes[0].sync.receive(Frame(type: .changes, payload: m.encoded()), on: conn)
        #expect(Simulation.closeError(out, conn) == nil, "\(out)")
        #expect(try await holdsAll(sim, 0, names), "the member's own writes are taken on its word")
        #expect(await sim.nodes[0].store.holdsImplied(of: liar, in: Self.team))
        try await sim.route(out, from: 0)
        try await sim.notifyChanges(node: 0)
        try await sim.notifyChanges(node: 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[0].store.impliedCheckpointsDropped == 1, "the owner dropped the lie when relaying")
        #expect(try await sim.nodes[0].store.checkpoint(of: liar, in: Self.team, atLeast: 1) == nil)
        #expect(
            try await sim.nodes[0].store.entries(of: liar, in: Self.team, after: 0, limit: 1000) == entries,
            "the writes stay as their writer sent them")
        #expect(try await holdsAll(sim, 2, names), "the other member got them from their writer")
        let digests = try await (0..<3).asyncMap { try await sim.nodes[$0].store.digest(of: Self.team) }
        #expect(digests.allSatisfy { $0 == digests[0] }, "all three hold the same zone")
    }
}

extension Range where Bound == Int {
    fileprivate func asyncMap<T>(_ body: (Int) async throws -> T) async rethrows -> [T] {
        var out = [T]()
        for i in self { out.append(try await body(i)) }
        return out
    }
}
