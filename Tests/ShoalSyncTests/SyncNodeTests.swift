// SyncNodeTests: focused replication behaviours — first sync, live push, lines, resumption, echo, conflicts.

import Foundation
import Testing
import Logging
import ShoalTestSupport
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct SyncNodeTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String, _ fields: [String: FieldValue]) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        for (k, v) in fields { r[k] = v }
        return r
    }

    /// Two nodes replicating in batches of `batchRecords`; node 0 holds `count` notes n0, n1, ….
    func twoNodes(
        seed: UInt64, batchRecords: Int, notes count: Int = 450,
        _ configure: (inout SyncConfiguration) -> Void = { _ in }
    ) async throws -> Simulation {
        var configuration = SyncConfiguration()
        configuration.batchRecords = batchRecords
        configure(&configuration)
        let sim = try await Simulation(seed: seed, nodes: 2, configuration: configuration)
        try await sim.nodes[0].store.createZone(Self.notes)
        _ = try await sim.nodes[0].store.modify(
            saving: (0..<count).map { note("n\($0)", ["i": .int64(Int64($0))]) }, policy: .allKeys)
        return sim
    }

    @Test func twoNodesConverge() async throws {
        let sim = try await Simulation(seed: 1, nodes: 2)
        try await sim.nodes[0].store.createZone(Self.notes)
        for i in 0..<10 { _ = try await sim.nodes[0].store.save(note("n\(i)", ["i": .int64(Int64(i))])) }
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(sim.log.isEmpty, "\(sim.log)")
        let s0 = try await sim.state(of: Self.notes, on: 0), s1 = try await sim.state(of: Self.notes, on: 1)
        #expect(s0.count == 10)
        #expect(s0 == s1)
    }

    /// The engine logs through ``SyncConfiguration/logger``: at `trace` level a line for each
    /// batch it applies, naming the zone and the sender; at `info` none of those.
    @Test func theEngineLogsEachBatchAtTraceLevel() async throws {
        for level in [Logger.Level.trace, .info] {
            let lines = LogLines()
            var configuration = SyncConfiguration()
            configuration.logger = lines.logger
            configuration.logger.logLevel = level
            let sim = try await Simulation(seed: 2, nodes: 2, configuration: configuration)
            try await sim.nodes[0].store.createZone(Self.notes)
            for i in 0..<3 { _ = try await sim.nodes[0].store.save(note("n\(i)", ["i": .int64(Int64(i))])) }
            try await sim.connect(0, 1)
            #expect(try await sim.runUntilQuiet())
            let applied = lines.all.filter { $0.1.contains("applied batch") && $0.1.contains("of notes from") }
            if level == .trace {
                #expect(!applied.isEmpty && applied.allSatisfy { $0.0 == .trace }, "\(lines.rendered)")
            } else {
                #expect(lines.all.allSatisfy { $0.0 >= .info }, "\(lines.rendered)")
            }
        }
    }
}

extension SyncNodeTests {
    /// A sparse record the receiver cannot rebuild (it holds no version of the record) is not
    /// applied: the connection closes with `resyncNeeded`, the next subscription states empty
    /// knowledge, whole versions arrive, and both nodes converge (Spec/replication.md §3.5.1).
    /// (A peer that reads delta slots asks for the record whole instead: the test after this.)
    @Test func unrebuildableSparseRecordFallsBackToWholeVersions() async throws {
        var configuration = SyncConfiguration()
        configuration.fieldDeltas = false
        let sim = try await Simulation(seed: 7, nodes: 2, configuration: configuration)
        try await sim.nodes[0].store.createZone(Self.notes)
        _ = try await sim.nodes[0].store.save(note("kept", ["title": .string("first")]))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        // An edit on node 0 that node 1 would receive sparse — but node 1 is told about a record
        // it never held, under node 0's real base, as a faulty or confused peer might.
        let saved = try await sim.nodes[0].store.save(
            try await sim.nodes[0].store.record(for: Record.ID(name: "kept", zone: Self.notes)), policy: .allKeys)
        let link = sim.links[0]
        let conn1 = link.a == 1 ? link.connA : link.connB
        let inbound = try #require(await sim.nodes[1].sync.sessions[conn1]?.inbound[Self.notes])
        let base = await sim.nodes[1].sync.knowledge(of: Self.notes)
        var ghost = try #require(SparseRecord(saved, base: base))
        ghost.id = Record.ID(name: "ghost", zone: Self.notes)
        let m = ChangesMessage(
            zone: Self.notes, incarnation: inbound.incarnation, batch: inbound.nextBatch, isCaughtUp: false,
            token: ChangeToken(bytes: [1]), records: [], sparseRecords: [ghost], base: base)
        let out = await sim.nodes[1].sync.receive(Frame(type: .changes, payload: m.encoded()), on: conn1)
        let closes = out[conn1, default: []].compactMap { if case .close(let e) = $0 { e } else { nil } }
        #expect(closes.first?.code == "resyncNeeded", "\(out)")
        #expect(await sim.nodes[1].sync.statistics.wholeVersionRequests == 1)
        #expect(try await sim.nodes[1].store.storedVersions(of: [ghost.id]).isEmpty, "the batch must not be applied")
        #expect(await !sim.nodes[1].sync.wholeVersionsNeeded.isEmpty)
        // Reconnect: the flag is spent on the new subscription, and the nodes converge.
        await sim.reset(0)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].sync.wholeVersionsNeeded.isEmpty)
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
    }

    /// Between peers that read delta slots, the same sparse record is asked for whole on the
    /// connection (`want-whole`): the rest of the batch is applied, the position and knowledge
    /// wait for the record, and a server that does not hold it says `resyncNeeded`
    /// (Spec/replication.md §3.10).
    @Test func unrebuildableSparseRecordIsAskedForWhole() async throws {
        let sim = try await Simulation(seed: 7, nodes: 2)
        try await sim.nodes[0].store.createZone(Self.notes)
        _ = try await sim.nodes[0].store.save(note("kept", ["title": .string("first")]))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let saved = try await sim.nodes[0].store.save(
            try await sim.nodes[0].store.record(for: Record.ID(name: "kept", zone: Self.notes)), policy: .allKeys)
        let conn1 = try sim.connection(of: 1, to: 0), conn0 = try sim.connection(of: 0, to: 1)
        let inbound = try #require(await sim.nodes[1].sync.sessions[conn1]?.inbound[Self.notes])
        let base = await sim.nodes[1].sync.knowledge(of: Self.notes)
        var ghost = try #require(SparseRecord(saved, base: base))
        ghost.id = Record.ID(name: "ghost", zone: Self.notes)
        let m = ChangesMessage(
            zone: Self.notes, incarnation: inbound.incarnation, batch: inbound.nextBatch, isCaughtUp: false,
            token: ChangeToken(bytes: [1]), records: [], sparseRecords: [ghost], base: base)
        let out = await sim.nodes[1].sync.receive(Frame(type: .changes, payload: m.encoded()), on: conn1)
        let frames = out[conn1, default: []].compactMap { if case .send(let f) = $0 { f } else { nil } }
        #expect(frames.map(\.type) == [.wantWhole, .acknowledgement], "\(out)")
        #expect(await sim.nodes[1].sync.statistics.recordsWantedWhole == 1)
        #expect(await sim.nodes[1].sync.sessions[conn1]?.inbound[Self.notes]?.wanted == ["ghost"])
        // Node 0 never held `ghost`: it cannot send it, and says so.
        let answer = await sim.nodes[0].sync.receive(frames[0], on: conn0)
        let closes = answer[conn0, default: []].compactMap { if case .close(let e) = $0 { e } else { nil } }
        #expect(closes.first?.code == "resyncNeeded", "\(answer)")
        await sim.reset(0)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
    }
}

extension SyncNodeTests {
    /// Both nodes edit one record apart, on different fields. Each one's sparse version omits the
    /// field the other edited, and the other's own write replaced that field's slot, so its stored
    /// version does not match the digest; the version before its write does, and the sparse
    /// record is rebuilt on it — no reconnect — and both end with both edits.
    @Test func aSparseRecordIsRebuiltOnTheVersionBeforeThisNodesOwnWrite() async throws {
        let sim = try await Simulation(seed: 8, nodes: 2)
        let id = Record.ID(name: "shared", zone: Self.notes)
        try await sim.nodes[0].store.createZone(Self.notes)
        _ = try await sim.nodes[0].store.save(note("shared", ["title": .string("first"), "body": .string("text")]))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        await sim.reset(0)
        var a = try await sim.nodes[0].store.record(for: id), b = try await sim.nodes[1].store.record(for: id)
        a["title"] = .string("from 0")
        b["body"] = .string("from 1")
        _ = try await sim.nodes[0].store.save(a)
        _ = try await sim.nodes[1].store.save(b)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        for n in 0..<2 {
            let st = await sim.nodes[n].sync.statistics
            #expect(
                st.sparseRecordsReceived >= 1 && st.sparseRecordsRebuiltOnPrevious >= 1 && st.wholeVersionRequests == 0,
                "node \(n): \(st)")
        }
        let merged = try await sim.nodes[1].store.record(for: id)
        #expect(merged["title"] == .string("from 0") && merged["body"] == .string("from 1"))
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
    }

    /// A catch-up cut after its first batch resumes from the position that batch stored: every
    /// version arrives exactly once (no duplicate), and the replicas end equal (no gap).
    @Test func resumptionAfterDisconnectHasNoDuplicatesOrGaps() async throws {
        let sim = try await twoNodes(seed: 11, batchRecords: 100)
        try await sim.connect(0, 1)
        // Deliver frames until node 1 has applied exactly one batch, then cut the connection.
        var steps = 0
        while await sim.nodes[1].sync.statistics.batchesReceived < 1, steps < 1_000 {
            steps += 1
            guard try await sim.step(link: 0) else { break }
        }
        let first = await sim.nodes[1].sync.statistics.recordsReceived
        #expect(first == 100, "the first batch holds 100 versions")
        // The first batch said how much was left: progress displays know the total.
        let progress = await sim.nodes[1].sync.replication().first
        #expect(progress?.recordsExpected == 450 && progress?.recordsReceived == 100, "\(String(describing: progress))")
        await sim.reset(0)
        #expect(try await sim.nodes[1].store.allRecordIDs(in: Self.notes).count == 100)
        // Reconnect: resume from the stored position.
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].sync.statistics.recordsReceived == 450, "every version exactly once")
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
    }
}

extension SyncNodeTests {
    /// A peer away while a deletion's tombstone was purged gets `changeTokenExpired` on resuming:
    /// the server restarts the stream (reset flag), and at caught-up the subscriber deletes what
    /// the peer no longer holds but has seen, keeping what the peer has not seen (§3.5.2).
    @Test func expiredTokenResyncFindsEveryDeletionAndKeepsUnseenWrites() async throws {
        let sim = try await Simulation(seed: 13, nodes: 2)
        try await sim.nodes[0].store.createZone(Self.notes)
        for name in ["r1", "r2", "r3"] { _ = try await sim.nodes[0].store.save(note(name, ["title": .string(name)])) }
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(try await sim.nodes[1].store.allRecordIDs(in: Self.notes).count == 3)
        await sim.reset(0)
        // Apart: node 0 deletes r1, retires node 1 and purges; node 1 writes r4.
        try await sim.nodes[0].store.delete(Record.ID(name: "r1", zone: Self.notes))
        try await sim.nodes[0].store.removePeer(sim.nodes[1].store.nodeID, from: Self.notes)
        #expect(try await sim.nodes[0].store.purgeTombstones() == 1)
        _ = try await sim.nodes[1].store.save(note("r4", ["title": .string("offline")]))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let names1 = try await sim.nodes[1].store.allRecordIDs(in: Self.notes).map(\.name)
        #expect(names1 == ["r2", "r3", "r4"], "\(names1)")
        #expect(try await sim.nodes[0].store.allRecordIDs(in: Self.notes).map(\.name) == ["r2", "r3", "r4"])
        let stats = await sim.nodes[1].sync.statistics
        #expect(stats.resyncsCompleted == 1 && stats.resyncDeletions == 1, "\(stats)")
        #expect(
            try await sim.nodes[1].store.syncValue(.resync(peer: sim.nodes[0].store.nodeID, zone: Self.notes)) == nil)
        #expect(
            try await sim.nodes[0].store.digest(of: Self.notes) == (try await sim.nodes[1].store.digest(of: Self.notes))
        )
    }
}

extension SyncNodeTests {
    /// A node catching up does not echo what it applied back to the sender: its feed, whose
    /// vector the sender's knowledge covers, is not read, and no empty batch goes back per batch
    /// applied. Its own later writes still travel, and so do the sender's.
    @Test func aCatchUpIsNotEchoedBackAndLaterWritesStillTravel() async throws {
        let sim = try await twoNodes(seed: 13, batchRecords: 100)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].sync.statistics.recordsReceived == 450)
        #expect(await sim.nodes[0].sync.statistics.recordsReceived == 0, "nothing comes back")
        // Node 1's zone was empty when it subscribed back: one caught-up batch, then silence
        // (before, one empty batch followed every batch it applied: 6 in all).
        #expect(await sim.nodes[1].sync.statistics.batchesSent == 1)
        // A write on node 1 is not covered by node 0's knowledge: it is read and sent.
        _ = try await sim.nodes[1].store.save(note("from-1", ["i": .int64(1)]))
        try await sim.notifyChanges(node: 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[0].sync.statistics.recordsReceived == 1)
        // And one on node 0 reaches node 1, which again sends nothing back.
        _ = try await sim.nodes[0].store.save(note("from-0", ["i": .int64(0)]))
        try await sim.notifyChanges(node: 0)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].sync.statistics.recordsReceived == 451)
        #expect(await sim.nodes[0].sync.statistics.recordsReceived == 1)
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
        #expect(sim.log.isEmpty, "\(sim.log)")
    }
}

extension SyncNodeTests {
    /// A catch-up whose remaining changes would take long to count does not hold its first batch
    /// back: the count runs on the store's background reader, and the first batch after it
    /// finishes carries what is left — the receiver's progress then knows the exact total.
    @Test func aLongCountTravelsWithALaterBatch() async throws {
        let sim = try await twoNodes(seed: 17, batchRecords: 20) { $0.remainingCountInlineLimit = 10 }
        try await sim.connect(0, 1)
        let link = sim.links[0]
        let conn0 = link.a == 0 ? link.connA : link.connB
        var steps = 0
        while await sim.nodes[1].sync.statistics.batchesReceived < 1, steps < 1_000 {
            steps += 1
            guard try await sim.step(link: 0) else { break }
        }
        #expect(
            await sim.nodes[1].sync.replication().first?.recordsExpected == nil,
            "the first batch did not wait for the count")
        // The count finishes on its own thread (bounded wait), then the rest is delivered.
        var waited = 0
        while await sim.nodes[0].sync.sessions[conn0]?.outbound[Self.notes]?.pendingCount?.outcome.done == false,
            waited < 500
        {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        var expected: Int? = nil
        while expected == nil, steps < 2_000, await sim.nodes[1].sync.statistics.recordsReceived < 450 {
            steps += 1
            guard try await sim.step(link: 0) else { break }
            expected = await sim.nodes[1].sync.replication().first?.recordsExpected
        }
        let received = await sim.nodes[1].sync.statistics.recordsReceived
        #expect(expected == 450, "received \(received), expected \(String(describing: expected))")
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].sync.statistics.recordsReceived == 450)
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
    }
}
