// DecodeAheadTests: batches the transport decodes, and whose writer-log entries it rebuilds, while
// the engine applies the batch before them — used only when read as the engine would read them.

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct DecodeAheadTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String, _ title: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["title"] = .string(title)
        return r
    }

    /// Two connected nodes caught up on `notes`, which node 0 holds (shared with node 1 when the
    /// nodes have identities); node 0's next batch to node 1 after saving `second`, as a frame,
    /// and node 1's connection to node 0.
    func nextLiveBatch(seed: UInt64, identities: Bool = false, configuration: SyncConfiguration = SyncConfiguration())
        async throws -> (Simulation, Frame, ConnectionID)
    {
        let sim = try await Simulation(seed: seed, nodes: 2, configuration: configuration, identities: identities)
        if identities {
            try await sim.createSharedZone(Self.notes, on: 0)
        } else {
            try await sim.nodes[0].store.createZone(Self.notes)
        }
        _ = try await sim.nodes[0].store.save(note("first", "one"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(
            try await sim.nodes[1].store.storedVersions(of: [Record.ID(name: "first", zone: Self.notes)]).count == 1)
        _ = try await sim.nodes[0].store.save(note("second", "a title long enough to be hashed in its entry"))
        let out = await sim.nodes[0].sync.zoneChanged(Self.notes)
        let to1 = try sim.connection(of: 0, to: 1)
        let frame = try #require(
            out[to1]?.lazy.compactMap { if case .send(let f) = $0, f.type == .liveChanges { f } else { nil } }.first)
        return (sim, frame, try sim.connection(of: 1, to: 0))
    }

    /// Node 1 takes `frame` with `decoded`, then the nodes run until quiet and hold the same zone.
    func deliver(_ frame: Frame, decoded: SyncNode.DecodedChanges?, in sim: Simulation, on conn: ConnectionID)
        async throws
    {
        let out = await sim.nodes[1].sync.receive(frame, on: conn, decoded: decoded)
        #expect(Simulation.closeError(out, conn) == nil, "\(out)")
        try await sim.route(out, from: 1)
        try await settle(sim)
    }

    /// Runs the nodes until quiet; they hold the same zone, `second` included.
    func settle(_ sim: Simulation) async throws {
        #expect(try await sim.runUntilQuiet())
        #expect(
            try await sim.nodes[1].store.storedVersions(of: [Record.ID(name: "second", zone: Self.notes)]).count == 1)
        #expect(sim.log.isEmpty, "\(sim.log)")
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
    }

    /// The read loop decodes a `live-changes` batch against the reference the engine published
    /// for its subscription, and the engine applies that message rather than decoding again.
    @Test func aLiveBatchDecodedAheadIsApplied() async throws {
        let (sim, frame, conn) = try await nextLiveBatch(seed: 0xDA0)
        let before = await sim.nodes[1].sync.statistics.batchesDecodedAhead
        let decoded = try #require(sim.nodes[1].sync.decodeAhead(frame, on: conn))
        let out = await sim.nodes[1].sync.receive(frame, on: conn, decoded: decoded)
        #expect(Simulation.closeError(out, conn) == nil, "\(out)")
        #expect(await sim.nodes[1].sync.statistics.batchesDecodedAhead == before + 1)
        try await sim.route(out, from: 1)
        try await settle(sim)
    }

    /// A batch read against another reference than the one the engine holds when it applies it
    /// (a reference the batch before it moved) is decoded again: the message read ahead, whose
    /// vectors are wrong, is not applied.
    @Test func aBatchDecodedAgainstAnotherReferenceIsDecodedAgain() async throws {
        let (sim, frame, conn) = try await nextLiveBatch(seed: 0xDA1)
        let sub = try #require(await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes])
        let number = try #require(sub.number)
        // The writer's entry moved on: each timestamp written against it reads differently.
        let writer = sim.nodes[0].store.nodeID
        var stale = sub.vectorReference
        #expect(stale[writer] != .zero)
        stale.advance(writer, to: HLC(milliseconds: stale[writer].milliseconds &+ 5, logical: 0))
        sim.nodes[1].sync.liveReferences.publish(number, zone: Self.notes, reference: stale, on: conn)
        let decoded = try #require(sim.nodes[1].sync.decodeAhead(frame, on: conn))
        // What was read ahead differs from what the batch says: applied, it would be wrong.
        let wrong = try #require(decoded.takeLive(subscription: number, zone: Self.notes, reference: stale))
        let right = try LiveChangesMessage.decodeKeepingRecordBytes(
            frame.payload, zone: Self.notes, reference: sub.vectorReference)
        #expect(right.0.knowledge != nil)
        #expect(try wrong.0.get().0.knowledge != right.0.knowledge)
        let again = try #require(sim.nodes[1].sync.decodeAhead(frame, on: conn))
        let before = await sim.nodes[1].sync.statistics.batchesDecodedAhead
        let out = await sim.nodes[1].sync.receive(frame, on: conn, decoded: again)
        #expect(Simulation.closeError(out, conn) == nil, "\(out)")
        #expect(await sim.nodes[1].sync.statistics.batchesDecodedAhead == before)
        // The knowledge the batch states is read against the reference node 1 holds.
        let after = await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes]?.vectorReference
        #expect(
            after == SyncSession.vectorReference(after: sub.vectorReference, reset: false, stated: right.0.knowledge))
        try await sim.route(out, from: 1)
        try await settle(sim)
    }

    /// A frame of a subscription the engine has not published (not numbered, or of another
    /// connection) is not decoded ahead.
    @Test func aSubscriptionNotPublishedIsNotDecodedAhead() async throws {
        let (sim, frame, conn) = try await nextLiveBatch(seed: 0xDA2)
        let other = ConnectionID(rawValue: conn.rawValue + 1000)
        #expect(sim.nodes[1].sync.decodeAhead(frame, on: other) == nil)
        sim.nodes[1].sync.liveReferences.forget(Self.notes, on: conn)
        #expect(sim.nodes[1].sync.decodeAhead(frame, on: conn) == nil)
        try await deliver(frame, decoded: nil, in: sim, on: conn)
        // Applying the batch published the reference again.
        #expect(sim.nodes[1].sync.decodeAhead(frame, on: conn) != nil)
    }

    /// With authenticated writes, the read loop also rebuilds the entries of the batch's
    /// writer-log ranges from its versions; the engine verifies and keeps them as its own.
    /// (With the peer's own writes taken on the connection's word, those are not rebuilt ahead:
    /// ``thePeersOwnRangeIsLeftToTheEngineToTake()``.)
    @Test func entriesRebuiltAheadAreVerifiedAndKept() async throws {
        var eager = SyncConfiguration()
        eager.takesOwnWritesOnWord = false
        let (sim, frame, conn) = try await nextLiveBatch(seed: 0xDA3, identities: true, configuration: eager)
        let before = await sim.nodes[1].sync.statistics
        let decoded = try #require(sim.nodes[1].sync.decodeAhead(frame, on: conn))
        let out = await sim.nodes[1].sync.receive(frame, on: conn, decoded: decoded)
        #expect(Simulation.closeError(out, conn) == nil, "\(out)")
        let st = await sim.nodes[1].sync.statistics
        #expect(st.batchesDecodedAhead == before.batchesDecodedAhead + 1)
        #expect(st.writerEntriesVerified == before.writerEntriesVerified + 1, "\(st)")
        try await sim.route(out, from: 1)
        try await settle(sim)
        let writer = sim.nodes[0].store.nodeID
        #expect(try await sim.nodes[1].store.logHead(of: writer, in: Self.notes).sequence == 2)
    }

    /// The read loop does not rebuild a range of the peer's own writes: the engine takes it on
    /// the connection's word (Spec/authenticated-writes.md §5.1), and keeps it implied.
    @Test func thePeersOwnRangeIsLeftToTheEngineToTake() async throws {
        let (sim, frame, conn) = try await nextLiveBatch(seed: 0xDA6, identities: true)
        let sub = try #require(await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes])
        let live = try LiveChangesMessage(decoding: frame.payload, zone: Self.notes, reference: sub.vectorReference)
        let section = try #require(live.writerLog)
        let writer = sim.nodes[0].store.nodeID
        #expect(section.ranges.map(\.writer) == [writer])
        let ahead = try #require(sim.nodes[1].sync.rebuiltAhead(live.records, section, on: conn))
        #expect(ahead.count == 1 && ahead[0] == nil, "the peer's own range is not rebuilt ahead")
        let before = await sim.nodes[1].sync.statistics
        let decoded = try #require(sim.nodes[1].sync.decodeAhead(frame, on: conn))
        let out = await sim.nodes[1].sync.receive(frame, on: conn, decoded: decoded)
        #expect(Simulation.closeError(out, conn) == nil, "\(out)")
        let st = await sim.nodes[1].sync.statistics
        #expect(st.writerEntriesTaken == before.writerEntriesTaken + 1, "\(st)")
        #expect(st.writerEntriesVerified == before.writerEntriesVerified, "\(st)")
        #expect(await sim.nodes[1].store.holdsImplied(of: writer, in: Self.notes))
        #expect(try await sim.nodes[1].store.logHead(of: writer, in: Self.notes).sequence == 2)
        try await sim.route(out, from: 1)
        try await settle(sim)
    }

    /// A batch whose ranges name more writes than its versions (here one version's write twice
    /// over) is not rebuilt ahead: what waits for the engine stays proportional to what it
    /// carries. The engine still checks it, and refuses it.
    @Test func aRangeNamingManyWritesPerVersionIsLeftToTheEngine() async throws {
        let (sim, frame, conn) = try await nextLiveBatch(seed: 0xDA5, identities: true)
        let sub = try #require(await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes])
        var live = try LiveChangesMessage(decoding: frame.payload, zone: Self.notes, reference: sub.vectorReference)
        var section = try #require(live.writerLog)
        #expect(sim.nodes[1].sync.rebuiltAhead(live.records, section, on: conn) != nil)
        let hlc = try #require(live.records.first?.versionVector[sim.nodes[0].store.nodeID])
        let extra = SyncNode.maxEntriesAheadPerVersion * live.records.count
        section.ranges[0].items = (0...extra).map { k in
            .impliedAt(record: 0, hlc: HLC(rawValue: hlc.rawValue &+ UInt64(k)))
        }
        live.writerLog = section
        #expect(sim.nodes[1].sync.rebuiltAhead(live.records, section, on: conn) == nil)
        let forged = Frame(type: .liveChanges, payload: live.encoded())
        let out = await sim.nodes[1].sync.receive(
            forged, on: conn, decoded: sim.nodes[1].sync.decodeAhead(forged, on: conn))
        #expect(Simulation.closeError(out, conn)?.code == "invalidArguments", "\(out)")
    }

    /// A range whose entries, rebuilt ahead, do not match its versions is refused as the engine
    /// refuses it: rebuilt ahead or not, a forged entry changes nothing.
    @Test func aForgedRangeRebuiltAheadIsRefused() async throws {
        let (sim, frame, conn) = try await nextLiveBatch(seed: 0xDA4, identities: true)
        let sub = try #require(await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes])
        var live = try LiveChangesMessage(decoding: frame.payload, zone: Self.notes, reference: sub.vectorReference)
        var section = try #require(live.writerLog)
        // The entry now claims the record's second write: it does not rebuild from the version.
        section.ranges[0].items = [.impliedAt(record: 0, hlc: HLC(milliseconds: 1, logical: 0))]
        live.writerLog = section
        let forged = Frame(type: .liveChanges, payload: live.encoded())
        let decoded = try #require(sim.nodes[1].sync.decodeAhead(forged, on: conn))
        let out = await sim.nodes[1].sync.receive(forged, on: conn, decoded: decoded)
        #expect(Simulation.closeError(out, conn)?.code == "invalidArguments", "\(out)")
        #expect(try await sim.nodes[1].store.storedVersions(of: [Record.ID(name: "second", zone: Self.notes)]).isEmpty)
    }
}
