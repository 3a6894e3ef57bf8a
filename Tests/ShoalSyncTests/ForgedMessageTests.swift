// ForgedMessageTests: what a receiver refuses in what a peer states (Spec/replication.md §3.8).

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

/// Each test sends one forged message, as an attacker's short script did against a running node,
/// on a connection an honest peer opened — an authenticated device, a read-write member of the
/// zone (nodes have device keys; the zone is shared with every node) — and checks that the node
/// changed nothing it should not.
@Suite struct ForgedMessageTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String, _ title: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["title"] = .string(title)
        return r
    }

    /// A batch for node `n`'s subscription to `peer`'s zone, numbered as the next one it expects.
    func forgedBatch(
        _ sim: Simulation, to n: Int, from peer: Int, records: [Record] = [], caughtUp: Bool = true,
        knowledge: VersionVector? = nil
    ) async throws -> (ConnectionID, Frame) {
        let conn = try sim.connection(of: n, to: peer)
        let inbound = try #require(await sim.nodes[n].sync.sessions[conn]?.inbound[Self.notes])
        let token = await sim.nodes[n].sync.position(
            peer: sim.nodes[peer].store.nodeID, zone: Self.notes, incarnation: inbound.incarnation)
        let m = ChangesMessage(
            zone: Self.notes, incarnation: inbound.incarnation, batch: inbound.nextBatch, isCaughtUp: caughtUp,
            token: token ?? ChangeToken(bytes: []), knowledge: knowledge, records: records)
        return (conn, Frame(type: .changes, payload: m.encoded()))
    }

    /// Whether a node answered on `conn` with an acknowledgement.
    func acknowledged(_ out: [ConnectionID: [SyncOutput]], _ conn: ConnectionID) -> Bool {
        out[conn, default: []].contains { if case .send(let f) = $0 { f.type == .acknowledgement } else { false } }
    }

    /// A tombstone of `r` made by `node` at `hlc`: what "delete it, signed by you" looks like.
    func tombstone(of r: Record, by node: NodeID, at hlc: HLC) -> Record {
        var v = r.versionVector
        v.advance(node, to: hlc)
        return Record(
            recordType: r.recordType, id: r.id, parent: r.parent, creation: r.creation, versionVector: v,
            heads: [Record.Head(node: node, isDeletion: true)], fields: r.fields, extensions: r.extensions)
    }

    /// Two nodes; node 0 created the zone and node 1 wrote five notes of its own, replicated.
    func victimWithOwnRecords(seed: UInt64) async throws -> (Simulation, [Record]) {
        let sim = try await Simulation(seed: seed, nodes: 2, identities: true)
        try await sim.createSharedZone(Self.notes, on: 0)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        for i in 0..<5 { _ = try await sim.nodes[1].store.save(note("n\(i)", "mine \(i)")) }
        try await sim.notifyChanges(node: 1)
        #expect(try await sim.runUntilQuiet())
        let ids = (0..<5).map { Record.ID(name: "n\($0)", zone: Self.notes) }
        let stored = try await sim.nodes[1].store.storedVersions(of: ids)
        #expect(stored.count == 5)
        return (sim, ids.compactMap { stored[$0] })
    }

    /// Deletions stamped with the receiver's own node ID, after its newest write, are refused
    /// whole: nothing deleted, no acknowledgement, the connection closed with an error.
    @Test func deletionsStampedWithTheReceiversOwnIDAreRefused() async throws {
        let (sim, mine) = try await victimWithOwnRecords(seed: 301)
        let victim = sim.nodes[1].store.nodeID
        let newest = try await sim.nodes[1].store.zone(Self.notes).versionVector[victim]
        let forged = mine.map { tombstone(of: $0, by: victim, at: HLC.successor(of: newest)) }
        let (conn, frame) = try await forgedBatch(sim, to: 1, from: 0, records: forged)
        let out = await sim.nodes[1].sync.receive(frame, on: conn)
        #expect(Simulation.closeError(out, conn)?.code == "invalidArguments", "\(out)")
        #expect(!acknowledged(out, conn))
        let after = try await sim.nodes[1].store.storedVersions(of: mine.map(\.id))
        #expect(after.values.allSatisfy { !$0.isDeleted }, "the node's own records must not be deleted")
        #expect(await sim.nodes[1].sync.statistics.refusedBatches == 1)
        #expect(await sim.nodes[1].sync.lastErrors()[sim.nodes[0].store.nodeID] != nil)
    }

    /// A batch whose versions would take the zone's writers past `maxZoneWriters` is refused
    /// whole: a zone's vector (and every token of it) stays decodable.
    @Test func writersBeyondTheZoneLimitAreRefused() async throws {
        var c = SyncConfiguration()
        c.maxZoneWriters = 16
        let sim = try await Simulation(seed: 307, nodes: 2, configuration: c, identities: true)
        try await sim.createSharedZone(Self.notes, on: 0)
        _ = try await sim.nodes[0].store.save(note("a", "first"))
        #expect(try await sim.runUntilQuiet())
        let stored = try #require(
            try await sim.nodes[1].store.storedVersions(of: [Record.ID(name: "a", zone: Self.notes)]).values.first)
        let hlc = try #require(stored.versionVector.entries.first).hlc
        // One record written by 20 made-up writers, each within the clock bound.
        let writers = (1...20).map { NodeID(high: 0xF00D, low: UInt64($0)) }
        let flood = Record(
            recordType: "Note", id: Record.ID(name: "flood", zone: Self.notes), parent: nil,
            creation: Dot(node: writers[0], hlc: hlc), versionVector: VersionVector(writers.map { ($0, hlc) }),
            heads: [Record.Head(node: writers[0], isDeletion: false)], fields: [], extensions: [])
        let (conn, frame) = try await forgedBatch(sim, to: 1, from: 0, records: [flood])
        let out = await sim.nodes[1].sync.receive(frame, on: conn)
        let error = Simulation.closeError(out, conn)
        #expect(error?.code == "limitExceeded" && error?.message.contains("maxZoneWriters") == true, "\(out)")
        #expect(!acknowledged(out, conn))
        #expect(try await sim.nodes[1].store.storedVersions(of: [flood.id]).isEmpty)
        #expect(try await sim.nodes[1].store.zone(Self.notes).versionVector.entries.count == 1)
    }

    /// The bound for the receiver's own ID is per record: a deletion reusing the node's newest
    /// dot (a write to another record) on an older record is refused too.
    @Test func aDeletionReusingTheReceiversNewestDotOnAnotherRecordIsRefused() async throws {
        let (sim, mine) = try await victimWithOwnRecords(seed: 302)
        let victim = sim.nodes[1].store.nodeID
        let newest = try await sim.nodes[1].store.zone(Self.notes).versionVector[victim]
        let oldest = try #require(mine.min { $0.versionVector[victim] < $1.versionVector[victim] })
        #expect(oldest.versionVector[victim] < newest)
        let (conn, frame) = try await forgedBatch(
            sim, to: 1, from: 0, records: [tombstone(of: oldest, by: victim, at: newest)])
        let out = await sim.nodes[1].sync.receive(frame, on: conn)
        #expect(Simulation.closeError(out, conn)?.code == "invalidArguments", "\(out)")
        #expect(!acknowledged(out, conn))
        #expect(try await sim.nodes[1].store.storedVersions(of: [oldest.id])[oldest.id]?.isDeleted == false)
    }

    /// An empty caught-up batch whose knowledge claims 0xffffffffffffffff for a writer is refused:
    /// the knowledge is not adopted, and a third node the victim serves still receives that
    /// writer's later changes (through the victim: the writer and the third node never meet).
    @Test func knowledgeBeyondAnyClockIsRefusedAndTheWriterStillFlows() async throws {
        let sim = try await Simulation(seed: 303, nodes: 3, identities: true)
        sim.partitions.insert([0, 2])  // node 1 (the victim) is the only path from writer 2 to node 0
        try await sim.createSharedZone(Self.notes, on: 2)
        _ = try await sim.nodes[2].store.save(note("a", "first"))
        #expect(try await sim.runUntilQuiet())
        #expect(try await sim.state(of: Self.notes, on: 0).count == 1)
        let writer = sim.nodes[2].store.nodeID
        let before = await sim.nodes[1].sync.knowledge(of: Self.notes)
        let (conn, frame) = try await forgedBatch(
            sim, to: 1, from: 0, knowledge: VersionVector([(writer, HLC(rawValue: .max))]))
        let out = await sim.nodes[1].sync.receive(frame, on: conn)
        #expect(Simulation.closeError(out, conn)?.code == "invalidArguments", "\(out)")
        #expect(!acknowledged(out, conn))
        try await sim.route(out, from: 1)
        #expect(await sim.nodes[1].sync.knowledge(of: Self.notes) == before)
        #expect(await sim.nodes[1].sync.statistics.refusedBatches == 1)
        // Every connection restarts (as after a redial), so each subscription states its knowledge anew.
        while !sim.links.isEmpty { await sim.reset(0) }
        _ = try await sim.nodes[2].store.save(note("b", "later"))
        try await sim.notifyChanges(node: 2)
        #expect(try await sim.runUntilQuiet())
        #expect(
            try await sim.state(of: Self.notes, on: 0)["b"] != nil,
            "node 0 must still receive the writer's later change")
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 2)))
    }

    /// Knowledge naming a writer that no version the node holds shows (within the clock bound,
    /// so only the unseen-writer rule applies) is not adopted, and that writer's changes,
    /// written before the claimed timestamp, still arrive when it connects.
    @Test func knowledgeOfAnUnseenWriterIsNotAdopted() async throws {
        let sim = try await Simulation(seed: 304, nodes: 3, identities: true)
        try await sim.createSharedZone(Self.notes, on: 0)
        _ = try await sim.nodes[0].store.save(note("a", "first"))
        #expect(try await sim.runUntilQuiet())
        // Node 2 holds the zone, writes nothing until it is cut off from everyone, then writes.
        while let i = sim.links.firstIndex(where: { $0.a == 2 || $0.b == 2 }) { await sim.reset(i) }
        sim.partitions.insert([0, 2])
        sim.partitions.insert([1, 2])
        _ = try await sim.nodes[2].store.save(note("offline", "written alone"))
        let writer = sim.nodes[2].store.nodeID
        #expect(try await sim.nodes[1].store.zone(Self.notes).versionVector[writer] == .zero)
        let claim = HLC(milliseconds: sim.clock.now() &+ 5_000, logical: 0)
        let (conn, frame) = try await forgedBatch(sim, to: 1, from: 0, knowledge: VersionVector([(writer, claim)]))
        let out = await sim.nodes[1].sync.receive(frame, on: conn)
        try await sim.route(out, from: 1)
        #expect(
            await sim.nodes[1].sync.knowledge(of: Self.notes)[writer] == .zero,
            "a writer no version shows must not enter knowledge")
        #expect(await sim.nodes[1].sync.statistics.unshownKnowledgeDropped == 1)
        sim.partitions.removeAll()
        #expect(try await sim.runUntilQuiet())
        #expect(
            try await sim.state(of: Self.notes, on: 1)["offline"] != nil, "the writer's change must still reach node 1")
        #expect(try await sim.state(of: Self.notes, on: 1) == (try await sim.state(of: Self.notes, on: 2)))
    }

    /// A version stamped ten minutes ahead of the receiver's wall clock is refused whole.
    @Test func aVersionTenMinutesInTheFutureIsRefused() async throws {
        let sim = try await Simulation(seed: 305, nodes: 2, identities: true)
        try await sim.createSharedZone(Self.notes, on: 0)
        _ = try await sim.nodes[0].store.save(note("a", "first"))
        #expect(try await sim.runUntilQuiet())
        let peer = sim.nodes[0].store.nodeID
        let future = HLC(milliseconds: sim.clock.now() &+ 600_000, logical: 0)
        let dot = Dot(node: peer, hlc: future)
        let r = Record(
            recordType: "Note", id: Record.ID(name: "future", zone: Self.notes), parent: nil, creation: dot,
            versionVector: VersionVector([(peer, future)]), heads: [Record.Head(node: peer, isDeletion: false)],
            fields: [Record.Field(name: "title", value: .string("from the future"), stamp: dot)], extensions: [])
        let (conn, frame) = try await forgedBatch(sim, to: 1, from: 0, records: [r], caughtUp: false)
        let out = await sim.nodes[1].sync.receive(frame, on: conn)
        #expect(Simulation.closeError(out, conn)?.code == "invalidArguments", "\(out)")
        #expect(!acknowledged(out, conn))
        #expect(try await sim.nodes[1].store.storedVersions(of: [r.id]).isEmpty, "the version must not be applied")
        #expect(await sim.nodes[1].sync.statistics.refusedBatches == 1)
    }

    /// An acknowledgement whose knowledge is ten minutes ahead is refused before it is used
    /// (for skipping or for tombstone purges).
    @Test func anAcknowledgementWithFutureKnowledgeIsRefused() async throws {
        let sim = try await Simulation(seed: 306, nodes: 2, identities: true)
        try await sim.createSharedZone(Self.notes, on: 0)
        _ = try await sim.nodes[0].store.save(note("a", "first"))
        #expect(try await sim.runUntilQuiet())
        let conn = try sim.connection(of: 0, to: 1)
        let sub = try #require(await sim.nodes[0].sync.sessions[conn]?.outbound[Self.notes])
        let k = VersionVector([(sim.nodes[1].store.nodeID, HLC(milliseconds: sim.clock.now() &+ 600_000, logical: 0))])
        let ack = AcknowledgementMessage(
            zone: Self.notes, incarnation: sub.incarnation, batch: sub.acknowledged, knowledge: k)
        let out = await sim.nodes[0].sync.receive(Frame(type: .acknowledgement, payload: ack.encoded()), on: conn)
        #expect(Simulation.closeError(out, conn)?.code == "invalidArguments", "\(out)")
        #expect(await sim.nodes[0].sync.sessions[conn]?.outbound[Self.notes]?.peerKnowledge != k)
        #expect(await sim.nodes[0].sync.statistics.refusedKnowledge == 1)
    }

    /// A subscription stating knowledge of the server's own writes it never made is refused.
    @Test func aSubscriptionClaimingTheServersUnmadeWritesIsRefused() async throws {
        let sim = try await Simulation(seed: 307, nodes: 2, identities: true)
        try await sim.createSharedZone(Self.notes, on: 0)
        _ = try await sim.nodes[0].store.save(note("a", "first"))
        #expect(try await sim.runUntilQuiet())
        let server = sim.nodes[0].store.nodeID
        let info = try await sim.nodes[0].store.zone(Self.notes)
        let k = VersionVector([(server, HLC.successor(of: info.versionVector[server]))])
        let conn = try sim.connection(of: 0, to: 1)
        let m = SubscribeMessage(zone: Self.notes, incarnation: info.incarnation, token: nil, knowledge: k)
        let out = await sim.nodes[0].sync.receive(Frame(type: .subscribe, payload: m.encoded()), on: conn)
        #expect(Simulation.closeError(out, conn)?.code == "invalidArguments", "\(out)")
        #expect(await sim.nodes[0].sync.statistics.refusedKnowledge == 1)
    }
}
