// MergeServingTests: a save merged with a concurrent delete, or a merge with a head the server's
// purge horizon covers, reaches every subscriber, even one whose knowledge covers it (it may know
// the deletion only through a purge horizon).

import Testing
import ShoalStore
@testable import ShoalWire
@testable import ShoalSync

@Suite struct MergeServingTests {
    static let zone = RecordZone.ID(name: "notes")
    static let saver = NodeID(high: 0x5A, low: 1), deleter = NodeID(high: 0xDE, low: 2),
        relay = NodeID(high: 0x7E, low: 3)

    static func record(_ name: String, vector: [(NodeID, UInt64)], heads: [Record.Head]) -> Record {
        let vv = VersionVector(vector.map { ($0.0, HLC(rawValue: $0.1)) })
        return Record(
            recordType: "Note", id: Record.ID(name: name, zone: zone), parent: nil,
            creation: Dot(node: saver, hlc: HLC(rawValue: 100)), versionVector: vv, heads: heads,
            fields: [
                Record.Field(name: "title", value: .string(name), stamp: Dot(node: saver, hlc: HLC(rawValue: 100)))
            ],
            extensions: [])
    }

    /// `merged` is live with a deletion head; `plain` is a save alone. The subscriber's knowledge
    /// covers both, and its upstreams include the saver.
    static let merged = record(
        "merged", vector: [(saver, 100), (deleter, 150)],
        heads: [Record.Head(node: saver, isDeletion: false), Record.Head(node: deleter, isDeletion: true)])
    static let plain = record("plain", vector: [(saver, 100)], heads: [Record.Head(node: saver, isDeletion: false)])

    @Test func aMergeWithADeletionHeadTravelsDespiteKnowledge() throws {
        let knowledge = VersionVector([(Self.saver, HLC(rawValue: 100)), (Self.deleter, HLC(rawValue: 200))])
        let decoded = SyncNode.select([Self.merged, Self.plain], peerKnowledge: knowledge, sparseBase: knowledge)
        #expect(decoded.whole.map(\.id.name) == ["merged"])
        #expect(decoded.sparse.isEmpty)
        // The same from stored encodings.
        let bytes = [Self.merged, Self.plain].map { $0.encoded() }
        let page = EncodedZoneChanges(
            count: 2, bytes: bytes.flatMap { $0 }, ends: [bytes[0].count, bytes[0].count + bytes[1].count],
            token: ChangeToken(bytes: []), moreComing: false)
        let encoded = try SyncNode.select(page, peerKnowledge: knowledge, sparseBase: knowledge, limits: .default)
        #expect(encoded.wholeCountEncoded == 1)
        #expect(Array(encoded.wholeEncoded) == bytes[0])
    }

    /// A merge of concurrent saves with a head at or below the server's purge horizon travels
    /// despite knowledge: a subscriber may cover that head only through the horizon, holding the
    /// other save alone. Without a horizon, or for a version with one head, knowledge still skips.
    @Test func aMergeWithAHeadBelowTheHorizonTravelsDespiteKnowledge() throws {
        let twoSaves = Self.record(
            "two-saves", vector: [(Self.saver, 100), (Self.relay, 120)],
            heads: [Record.Head(node: Self.saver, isDeletion: false), Record.Head(node: Self.relay, isDeletion: false)])
        let knowledge = VersionVector([(Self.saver, HLC(rawValue: 100)), (Self.relay, HLC(rawValue: 200))])
        let horizon = VersionVector([(Self.relay, HLC(rawValue: 150))])
        let sent = SyncNode.select([twoSaves, Self.plain], peerKnowledge: knowledge, sparseBase: nil, horizon: horizon)
        #expect(sent.whole.map(\.id.name) == ["two-saves"])
        #expect(SyncNode.select([twoSaves, Self.plain], peerKnowledge: knowledge, sparseBase: nil).whole.isEmpty)
        let above = VersionVector([(Self.relay, HLC(rawValue: 110))])
        #expect(SyncNode.select([twoSaves], peerKnowledge: knowledge, sparseBase: nil, horizon: above).whole.isEmpty)
        let bytes = [twoSaves, Self.plain].map { $0.encoded() }
        let page = EncodedZoneChanges(
            count: 2, bytes: bytes.flatMap { $0 }, ends: [bytes[0].count, bytes[0].count + bytes[1].count],
            token: ChangeToken(bytes: []), moreComing: false)
        let encoded = try SyncNode.select(
            page, peerKnowledge: knowledge, sparseBase: nil, horizon: horizon, limits: .default)
        #expect(encoded.wholeCountEncoded == 1)
        #expect(Array(encoded.wholeEncoded) == bytes[0])
    }

    /// The upstreams deliver the saver's write, not its merge with a deletion they may never
    /// see: the merge is not left out for them.
    @Test func aMergeWithADeletionHeadIsNotLeftToUpstreams() throws {
        let knowledge = VersionVector([(Self.deleter, HLC(rawValue: 200))])
        let s = SyncNode.select(
            [Self.merged, Self.plain], peerKnowledge: knowledge, sparseBase: nil, skipping: [Self.saver])
        #expect(s.whole.map(\.id.name) == ["merged"])
        #expect(s.skippedCount == 1)
    }
}
