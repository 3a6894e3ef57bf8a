// InboundBudgetTests: what a connection's frames make the node hold before its engine handles them
// is bounded — a member that floods batches is slowed by TCP, and nothing it sent is lost.

import Foundation
import Synchronization
import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
import ShoalSync
import ShoalTrust
@testable import ShoalNet

@Suite(.timeLimit(.minutes(5))) struct InboundBudgetTests {
    static let notes = RecordZone.ID(name: "notes")

    /// A read-write member sends 48 `changes` batches of about 1 MiB at once, without waiting for
    /// a single acknowledgement: the node reads them only as fast as it applies them, holding at
    /// most its bound, and applies every one. Each batch proves its writes with a range of the
    /// member's log and a checkpoint its device signed (Spec/authenticated-writes.md §4).
    @Test func aMemberFloodingBatchesIsHeldToTheBoundAndLosesNothing() async throws {
        var network = NetworkConfiguration()
        network.inboundBytes = 2 << 20
        let a = try await LoopbackNode.start("owner", network: network)
        defer { Task { await a.stop() } }
        try await a.createSharedZone(Self.notes, with: [])
        let writer = try DeviceIdentity.generate()
        await a.net.trust(writer.deviceID)
        await a.net.deliver(try await a.net.sync.setMember(writer.deviceID, role: .readWrite, of: Self.notes))
        let incarnation = try await a.store.zone(Self.notes).incarnation

        let me = NodeID.random()
        let batches = 48, perBatch = 10, recordBytes = 100_000
        var rng = SplitMix64(seed: 34)
        var data = [UInt8](repeating: 0, count: recordBytes)
        for i in data.indices { data[i] = UInt8(truncatingIfNeeded: rng.next()) }
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        let signer = ShareSigner(privateKey: writer.privateKey)
        var chain = WriterLog.chainStart(zone: Self.notes, writer: me)
        var frames = [
            Frame(
                type: .hello,
                payload: HelloMessage(
                    node: me, name: "flood", capabilities: 256,
                    zones: [ZoneAnnouncement(zone: Self.notes, incarnation: incarnation)]
                ).encoded())
        ]
        for b in 1...batches {
            let records = (0..<perBatch).map { i -> Record in
                let n = (b - 1) * perBatch + i
                let dot = Dot(node: me, hlc: HLC(milliseconds: now, logical: UInt16(n)))
                // Each record's bytes differ, so the store keeps them all.
                var bytes = data
                bytes[0] = UInt8(truncatingIfNeeded: n)
                bytes[1] = UInt8(truncatingIfNeeded: n >> 8)
                return Record(
                    recordType: "Blob", id: Record.ID(name: "r\(n)", zone: Self.notes), parent: nil, creation: dot,
                    versionVector: VersionVector([(me, dot.hlc)]), heads: [Record.Head(node: me, isDeletion: false)],
                    fields: [Record.Field(name: "data", value: .bytes(bytes), stamp: dot)], extensions: [])
            }
            let first = UInt64((b - 1) * perBatch + 1)
            for (i, r) in records.enumerated() {
                chain = WriterLog.chain(
                    chain,
                    WriterLog.entry(of: r, dot: Dot(node: me, hlc: r.versionVector[me]), sequence: first + UInt64(i)))
            }
            let checkpoint = signer.sign(
                WriterCheckpoint(
                    zone: Self.notes, incarnation: incarnation, writer: me,
                    sequence: first + UInt64(perBatch) - 1, chain: chain))
            let section = WriterLogSection(ranges: [
                .init(
                    writer: me, publicKey: b == 1 ? signer.publicKeyDER : nil, firstSequence: first,
                    items: (0..<perBatch).map { .implied(record: $0) },
                    seal: .init(chain: checkpoint.chain, signature: checkpoint.signature))
            ])
            frames.append(
                Frame(
                    type: .changes,
                    payload: ChangesMessage(
                        zone: Self.notes, incarnation: incarnation, batch: UInt64(b), isCaughtUp: b == batches,
                        token: ChangeToken(bytes: [UInt8(b)]), knowledge: nil, records: records,
                        writerLog: section
                    ).encoded()))
        }
        let bytes = ZoneSharingTLSTests.encode(frames)
        #expect(bytes.count > 40 * network.inboundBytes / 2, "the flood is many times the bound")

        // All of it written at once; the client reads little of what comes back (acknowledgements).
        let client = try await NonReadingClient.connect(port: a.port, identity: writer, send: bytes)
        defer { client.close() }
        let all = batches * perBatch
        let applied = await eventually {
            (try? await a.store.allRecordIDs(in: Self.notes).count) == all
        }
        let peak = await a.net.inboundPeakBytes(of: writer.deviceID)
        let stored = (try? await a.store.allRecordIDs(in: Self.notes).count) ?? -1
        let errors = await a.net.sync.lastErrors()
        #expect(applied, "every record of the flood was applied: \(stored) of \(all); errors \(errors)")
        let bound = network.inboundBytes
        #expect(peak != nil, "the flooding connection is still open")
        #expect(
            (peak ?? .max) <= bound,
            "the node held \(peak ?? -1) bytes of one connection's frames for its engine (bound \(bound), flood \(bytes.count))"
        )
        // Two batches held at once: the engine fell behind the reader, so the bound is what held it back.
        let batchCost = frames[1].heldCost
        #expect((peak ?? 0) > batchCost * 3 / 2, "peak \(peak ?? -1), one batch \(batchCost)")
    }

    /// The reader's wait ends when the engine gives room back, and at close, never otherwise.
    @Test func theReaderWaitsForRoomAndCloseEndsTheWait() async throws {
        let budget = InboundBudget(limit: 100)
        await budget.take(60)
        // Nothing held is over: one frame always passes alone, however large.
        let large = InboundBudget(limit: 100)
        await large.take(1_000)
        #expect(large.heldBytes == 1_000)

        let passed = Mutex(false)
        let reader = Task {
            await budget.take(60)
            passed.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!passed.withLock { $0 }, "60 + 60 is over the limit of 100: the reader waits")
        budget.give(60)
        await reader.value
        #expect(passed.withLock { $0 } && budget.heldBytes == 60 && budget.peakBytes == 60)

        let blocked = Task { await budget.take(90) }
        try await Task.sleep(for: .milliseconds(50))
        budget.close()
        await blocked.value
        await budget.take(500)
        #expect(budget.heldBytes == 650, "closed: nothing waits any more")
    }
}
