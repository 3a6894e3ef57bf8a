// AcknowledgementThrottleTests: a peer's acknowledgements reach the store at most once a second
// per zone, the last of a burst is never lost, and the engine does it on its configured clock.

import Testing
import ShoalStore
import ShoalTestSupport
import ShoalWire
@testable import ShoalSync

@Suite struct AcknowledgementThrottleTests {
    let peer = NodeID(high: 0xACC, low: 1), other = NodeID(high: 0xACC, low: 2)
    let zone = RecordZone.ID(name: "notes")
    let start = ContinuousClock.now

    func knowledge(_ hlc: UInt64, of node: NodeID? = nil) -> VersionVector {
        VersionVector([(node ?? peer, HLC(rawValue: hlc))])
    }

    @Test func theFirstIsWrittenAndOthersWithinTheSecondWaitMerged() {
        var t = AcknowledgementThrottle()
        let key = PeerZone(peer: peer, zone: zone)
        #expect(t.note(knowledge(1), for: key, at: start) == knowledge(1))
        #expect(t.deadline == nil)
        #expect(t.note(knowledge(2), for: key, at: start + .milliseconds(300)) == nil)
        #expect(t.note(knowledge(5, of: other), for: key, at: start + .milliseconds(600)) == nil)
        #expect(t.deadline == start + .seconds(1))
        // Not due before the second is up.
        #expect(t.due(at: start + .milliseconds(999)).isEmpty)
        let due = t.due(at: start + .seconds(1))
        #expect(due.map(\.key) == [key])
        #expect(due.first?.knowledge == knowledge(2).union(knowledge(5, of: other)))
        #expect(t.deadline == nil && t.heldCount == 0)
        // The write just made starts the next second.
        #expect(t.note(knowledge(3), for: key, at: start + .milliseconds(1500)) == nil)
        #expect(t.deadline == start + .seconds(2))
    }

    @Test func oneHeldIsWrittenWithTheNextOnceItsSecondIsUp() {
        var t = AcknowledgementThrottle()
        let key = PeerZone(peer: peer, zone: zone)
        _ = t.note(knowledge(1), for: key, at: start)
        #expect(t.note(knowledge(2), for: key, at: start + .milliseconds(100)) == nil)
        // The timer came late: the next acknowledgement carries what was held.
        let write = t.note(knowledge(3, of: other), for: key, at: start + .seconds(2))
        #expect(write == knowledge(2).union(knowledge(3, of: other)))
        #expect(t.heldCount == 0)
    }

    /// Stopping takes every held acknowledgement, due or not, and leaves none held.
    @Test func allTakesWhatIsHeldDueOrNot() {
        var t = AcknowledgementThrottle()
        let key = PeerZone(peer: peer, zone: zone)
        #expect(t.note(knowledge(1), for: key, at: start) == knowledge(1))
        #expect(t.note(knowledge(2), for: key, at: start + .milliseconds(10)) == nil)
        #expect(t.due(at: start + .milliseconds(20)).isEmpty, "not due for another 980 ms")
        let all = t.all(at: start + .milliseconds(20))
        #expect(all.map(\.key) == [key] && all.map(\.knowledge) == [knowledge(2)])
        #expect(t.heldCount == 0 && t.deadline == nil)
        #expect(t.all(at: start + .milliseconds(30)).isEmpty)
    }

    @Test func eachPeerAndZoneHasItsOwnSecond() {
        var t = AcknowledgementThrottle()
        let a = PeerZone(peer: peer, zone: zone), b = PeerZone(peer: other, zone: zone)
        let c = PeerZone(peer: peer, zone: RecordZone.ID(name: "photos"))
        for k in [a, b, c] { #expect(t.note(knowledge(1), for: k, at: start) != nil) }
        _ = t.note(knowledge(2), for: a, at: start + .milliseconds(10))
        _ = t.note(knowledge(2), for: b, at: start + .milliseconds(500))
        #expect(t.deadline == start + .seconds(1))
        #expect(t.heldCount == 2)
        // Both were last written at the start: both are due at its second, in a fixed order.
        let due = t.due(at: start + .seconds(1))
        #expect(due.map(\.key) == [a, b].sorted { ($0.peer, $0.zone) < ($1.peer, $1.zone) })
    }

    /// Node 0 of a simulation of two creates `zone` and saves three records one after the other,
    /// node 1 receiving and acknowledging each: the first acknowledgement is written, the later
    /// ones are held. Returns the simulation and node 1's ID.
    func burst(seed: UInt64) async throws -> (Simulation, NodeID) {
        let sim = try await Simulation(seed: seed, nodes: 2)
        try await sim.nodes[0].sync.createZone(zone)
        try await sim.connect(0, 1)
        _ = try await sim.runUntilQuiet()
        for i in 0..<3 {
            var r = Record(recordType: "Note", id: Record.ID(name: "n\(i)", zone: zone))
            r["title"] = .string("\(i)")
            _ = try await sim.nodes[0].store.save(r)
            try await sim.notifyChanges(node: 0)
            while try await sim.step(link: 0) {}
        }
        return (sim, sim.nodes[1].store.nodeID)
    }

    /// The engine: acknowledgements inside a second are held on the configured clock, none is
    /// written before its deadline, and the last one reaches the store once it is due.
    @Test func theEngineWritesTheLastOfABurstOnItsClock() async throws {
        let (sim, b) = try await burst(seed: 5201)
        let a = sim.nodes[0]
        let held = await a.sync.heldAcknowledgementsDeadline
        let acknowledged = try await a.store.acknowledgement(of: b, in: zone)
        let zoneVector = try await a.store.zone(zone).versionVector
        #expect(held != nil, "the burst's later acknowledgements are held")
        #expect(acknowledged != zoneVector, "the last acknowledgement is not written before its second")
        await sim.writeHeldAcknowledgements()
        #expect(try await a.store.acknowledgement(of: b, in: zone) == acknowledged, "written early")
        await sim.writeHeldAcknowledgements(waiting: true)
        #expect(await a.sync.heldAcknowledgementsDeadline == nil)
        #expect(try await a.store.acknowledgement(of: b, in: zone) == zoneVector)
    }

    /// A node that stops writes the acknowledgements it holds at once, before their second is up.
    @Test func stoppingWritesWhatIsHeld() async throws {
        let (sim, b) = try await burst(seed: 5202)
        let a = sim.nodes[0]
        let zoneVector = try await a.store.zone(zone).versionVector
        #expect(await a.sync.heldAcknowledgementsDeadline != nil, "the burst's later acknowledgements are held")
        #expect(try await a.store.acknowledgement(of: b, in: zone) != zoneVector)
        await a.sync.writeAllHeldAcknowledgements()
        #expect(await a.sync.heldAcknowledgementsDeadline == nil)
        #expect(try await a.store.acknowledgement(of: b, in: zone) == zoneVector)
    }
}
