// VectorChangeTests: vectors written against the stated knowledge (Spec/replication.md §3.5.4)
// come back exactly, and cost less than plain vectors when they share nodes with it.

import Testing
import ShoalSamples
@testable import ShoalWire
import ShoalWireJSON

@Suite struct VectorChangeTests {
    /// A random vector over a pool of 12 nodes: each present with probability ½, near `around`'s
    /// entry when it has one (so both directions of difference occur) or anywhere.
    static func vector(_ rng: inout SplitMix64, around: VersionVector = VersionVector()) -> VersionVector {
        VersionVector(
            (0..<12).compactMap { i -> (NodeID, HLC)? in
                guard rng.next() % 2 == 0 else { return nil }
                let node = NodeID(high: 0x5EED_0000_0000_0000 | UInt64(i), low: UInt64(i) &* 0x1111)
                let near = around[node].rawValue
                let value = near != 0 && rng.next() % 3 != 0 ? near &+ (rng.next() % 4096) &- 2048 : rng.next()
                return value == 0 ? nil : (node, HLC(rawValue: value))
            })
    }

    /// Changes from R to V rebuild V, for 2,000 seeded pairs; an unchanged vector is no change.
    @Test func changesRebuildTheVector() {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5EC7_0001)
        var rng = SplitMix64(seed: seed)
        for i in 0..<2_000 {
            let r = Self.vector(&rng), v = Self.vector(&rng, around: r)
            let changes = VectorChange.changes(from: r, to: v)
            #expect(VectorChange.applying(changes, to: r) == v, "seed \(seed), pair \(i): \(r) → \(v) via \(changes)")
            #expect(
                changes.allSatisfy { $0.value != r[$0.node].rawValue },
                "seed \(seed), pair \(i): a change restates an entry")
        }
        #expect(VectorChange.changes(from: VectorJSON.liveReference, to: VectorJSON.liveReference).isEmpty)
    }

    /// Live batches with knowledge and a sparse base written against R decode, against R, to the
    /// same message and re-encode to the same bytes, for 500 seeded (R, knowledge, base) triples.
    @Test func liveBatchesRoundTripAgainstTheStatedKnowledge() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5EC7_0002)
        var rng = SplitMix64(seed: seed)
        let zone = RecordZone.ID(name: "notes")
        let writer = NodeID(high: 0x5EED_0000_0000_0003, low: 3 &* 0x1111)
        var smaller = 0
        for i in 0..<500 {
            let r = Self.vector(&rng), base = Self.vector(&rng, around: r), knowledge = Self.vector(&rng, around: r)
            let stamp = HLC(rawValue: base[writer].rawValue &+ 1 + rng.next() % 1000)
            let item = SparseRecord(
                id: Record.ID(name: "n\(i)", zone: zone), recordType: "Note", parent: nil,
                entries: VersionVector([(writer, stamp)]), heads: [Record.Head(node: writer, isDeletion: false)],
                fields: [Record.Field(name: "title", value: .string("t\(i)"), stamp: Dot(node: writer, hlc: stamp))],
                extensions: [])
            let m = LiveChangesMessage(
                subscription: 1, zone: zone, batch: UInt64(i + 1), isCaughtUp: true, tokenKept: 3, tokenTail: [1],
                knowledge: knowledge.isEmpty ? nil : knowledge, records: [], sparseRecords: [item], base: base,
                reference: r)
            let bytes = m.encoded()
            let back = try LiveChangesMessage(decoding: bytes, zone: zone, reference: r)
            #expect(back == m, "seed \(seed), batch \(i)")
            #expect(back.encoded() == bytes, "seed \(seed), batch \(i)")
            var plain = m
            plain.reference = nil
            if bytes.count < plain.encoded().count { smaller &+= 1 }
        }
        // Random vectors share most nodes with R: written against it they are nearly always smaller.
        #expect(smaller > 400, "seed \(seed): \(smaller) of 500 batches were smaller written against R")
    }

    /// A batch written against one stated knowledge, read against another, is refused or reads
    /// other vectors: the receiver must hold the server's R exactly (the sync engine keeps it per
    /// subscription, from the batches in order).
    @Test func theStatedKnowledgeIsPartOfTheEncoding() throws {
        let r = VectorJSON.liveReference
        let k = VersionVector([(r.entries[0].node, HLC(rawValue: r.entries[0].hlc.rawValue + 5))])
        let m = LiveChangesMessage(
            subscription: 1, zone: VectorJSON.liveZone, batch: 1, isCaughtUp: true, tokenKept: 0, tokenTail: [1],
            knowledge: k, records: [], reference: r)
        let other = VersionVector([(r.entries[1].node, r.entries[1].hlc)])
        let read = try? LiveChangesMessage(decoding: m.encoded(), zone: VectorJSON.liveZone, reference: other)
        #expect(read?.knowledge != k)
    }
}
