// LiveChangesTests: batches named by their subscription's number (Spec/replication.md §3.5.4) —
// smaller on the wire, checked against what the peer established, closed when forged.

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct LiveChangesTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["title"] = .string(name)
        return r
    }

    /// Two connected nodes, caught up on `notes`, which node 0 holds; node 1's connection to node 0.
    func pair(seed: UInt64) async throws -> (Simulation, ConnectionID) {
        let sim = try await Simulation(seed: seed, nodes: 2)
        try await sim.nodes[0].store.createZone(Self.notes)
        _ = try await sim.nodes[0].store.save(note("first"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        return (sim, try sim.connection(of: 1, to: 0))
    }

    static func closeCode(_ out: [ConnectionID: [SyncOutput]], _ conn: ConnectionID) -> String? {
        Simulation.closeError(out, conn)?.code
    }

    /// After the first batch, a live change travels as `live-changes`: about 70 bytes less than the
    /// `changes` batch it stands for, and the nodes converge.
    @Test func aLiveChangeTravelsCompactAndConverges() async throws {
        let (sim, conn) = try await pair(seed: 0x11C0)
        _ = try await sim.nodes[0].store.save(note("second"))
        let to1 = try sim.connection(of: 0, to: 1)
        let out = await sim.nodes[0].sync.zoneChanged(Self.notes)
        let frame = try #require(
            out[to1]?.lazy.compactMap {
                if case .send(let f) = $0, f.type == .liveChanges || f.type == .changes { f } else { nil }
            }.first)
        #expect(frame.type == .liveChanges)
        // Its vectors are written against the knowledge the subscription stated, which node 1 holds.
        let stated = try #require(await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes]?.vectorReference)
        let live = try LiveChangesMessage(decoding: frame.payload, zone: Self.notes, reference: stated)
        #expect(live.reference == stated)
        let inc = try await sim.nodes[0].store.zone(Self.notes).incarnation
        let sub = try #require(await sim.nodes[0].sync.sessions[to1]?.outbound[Self.notes])
        let full = live.changes(incarnation: inc, token: ChangeToken(bytes: sub.tokenSent))
        #expect(
            full.encoded().count - frame.payload.count >= 60,
            "\(full.encoded().count) bytes as changes, \(frame.payload.count) as live-changes")
        try await sim.route(out, from: 0)
        #expect(try await sim.runUntilQuiet())
        #expect(sim.log.isEmpty, "\(sim.log)")
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
        // The token node 1 keeps is the one node 0 issued, byte for byte.
        let kept = await sim.nodes[1].sync.sessions[try sim.connection(of: 1, to: 0)]?.inbound[Self.notes]?.lastToken
        #expect(kept == sub.tokenSent)
    }

    /// A number the peer never gave a subscription of this connection closes it (`protocolViolation`).
    @Test func aForgedSubscriptionNumberClosesTheConnection() async throws {
        let (sim, conn) = try await pair(seed: 0x11C1)
        let number = try #require(await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes]?.number)
        let forged = LiveChangesMessage(
            subscription: number + 40, zone: Self.notes, batch: 1, isCaughtUp: true, tokenKept: 0, tokenTail: [1],
            records: [])
        let out = await sim.nodes[1].sync.receive(Frame(type: .liveChanges, payload: forged.encoded()), on: conn)
        #expect(Self.closeCode(out, conn) == "protocolViolation", "\(out)")
    }

    /// A token that keeps more bytes than the subscription's last token has closes the connection.
    @Test func aTokenKeepingMoreThanThePreviousClosesTheConnection() async throws {
        let (sim, conn) = try await pair(seed: 0x11C2)
        let sub = try #require(await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes])
        let number = try #require(sub.number)
        let forged = LiveChangesMessage(
            subscription: number, zone: Self.notes, batch: sub.nextBatch, isCaughtUp: true,
            tokenKept: sub.lastToken.count + 5, tokenTail: [], records: [])
        let out = await sim.nodes[1].sync.receive(Frame(type: .liveChanges, payload: forged.encoded()), on: conn)
        #expect(Self.closeCode(out, conn) == "protocolViolation", "\(out)")
    }

    /// A subscriber that numbers its subscription in `subscribe` is served `live-changes` from the
    /// first batch: its token a change to the one presented (none here), its vectors written
    /// against the knowledge the subscribe stated. A number below one the connection used closes it.
    @Test func aSubscriptionNumberedInSubscribeIsServedLiveFromItsFirstBatch() async throws {
        let (sim, _) = try await pair(seed: 0x11C4)
        let lab = RecordZone.ID(name: "lab"), attic = RecordZone.ID(name: "attic")
        for zone in [lab, attic] { try await sim.nodes[0].store.createZone(zone) }
        var r = Record(recordType: "Note", id: Record.ID(name: "bench", zone: lab))
        r["title"] = .string("lab note")
        _ = try await sim.nodes[0].store.save(r)
        let to1 = try sim.connection(of: 0, to: 1)
        let used = try #require(await sim.nodes[0].sync.sessions[to1]?.nextSubscriptionNumber)
        let subscribe = SubscribeMessage(
            zone: lab, incarnation: try await sim.nodes[0].store.zone(lab).incarnation, token: nil,
            knowledge: VersionVector(), window: 4, number: used + 40)
        let out = await sim.nodes[0].sync.receive(Frame(type: .subscribe, payload: subscribe.encoded()), on: to1)
        let frame = try #require(
            out[to1]?.lazy.compactMap {
                if case .send(let f) = $0, f.type == .liveChanges || f.type == .changes { f } else { nil }
            }.first, "\(out)")
        #expect(frame.type == .liveChanges)
        #expect(try LiveChangesMessage.subscription(of: frame.payload) == used + 40)
        let live = try LiveChangesMessage(decoding: frame.payload, zone: lab, reference: VersionVector())
        #expect(live.records.map(\.id.name) == ["bench"] && live.token(after: []) != nil, "\(live)")
        // Numbers only go up on a connection: one already passed names nothing new.
        let stale = SubscribeMessage(
            zone: attic, incarnation: try await sim.nodes[0].store.zone(attic).incarnation, token: nil,
            knowledge: VersionVector(), window: 4, number: used + 39)
        let refused = await sim.nodes[0].sync.receive(Frame(type: .subscribe, payload: stale.encoded()), on: to1)
        #expect(Self.closeCode(refused, to1) == "protocolViolation", "\(refused)")
    }

    /// Between two nodes that both take numbers in `subscribe`, the subscriber numbers its
    /// subscription, and both sides hold the same number and the same stated knowledge.
    @Test func theSubscriberNumbersItsSubscriptions() async throws {
        let (sim, conn) = try await pair(seed: 0x11C5)
        let inbound = try #require(await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes])
        let outbound = try #require(
            await sim.nodes[0].sync.sessions[try sim.connection(of: 0, to: 1)]?.outbound[Self.notes])
        #expect(inbound.number == 1 && outbound.number == 1 && outbound.numberSent)
        #expect(inbound.vectorReference == outbound.vectorReference && !inbound.vectorReference.isEmpty)
    }

    /// A `changes` batch that gives the subscription a second, different number closes the connection.
    @Test func aSecondNumberForASubscriptionClosesTheConnection() async throws {
        let (sim, conn) = try await pair(seed: 0x11C3)
        let sub = try #require(await sim.nodes[1].sync.sessions[conn]?.inbound[Self.notes])
        let number = try #require(sub.number)
        let m = ChangesMessage(
            zone: Self.notes, incarnation: sub.incarnation, batch: sub.nextBatch, isCaughtUp: false,
            token: ChangeToken(bytes: sub.lastToken), records: [], subscription: number + 1)
        let out = await sim.nodes[1].sync.receive(Frame(type: .changes, payload: m.encoded()), on: conn)
        #expect(Self.closeCode(out, conn) == "protocolViolation", "\(out)")
    }
}
