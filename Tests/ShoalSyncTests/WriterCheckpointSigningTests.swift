// WriterCheckpointSigningTests: a node signs the head of its own log with its device key, and a checkpoint verifies only under that key and only as signed.

import Foundation
import Testing
@testable import ShoalSync
import ShoalStore
import ShoalTrust
@testable import ShoalWire

@Suite struct WriterCheckpointSigningTests {
    static func signer(_ n: UInt8) -> ShareSigner? { ShareSigner.seeded([UInt8](repeating: n, count: 31) + [1]) }

    @Test func aSignedCheckpointVerifiesOnlyUnderItsKeyAndOnlyAsSigned() throws {
        let a = try #require(Self.signer(7)), b = try #require(Self.signer(8))
        let zone = RecordZone.ID(name: "notes")
        let checkpoint = a.sign(
            WriterCheckpoint(
                zone: zone, incarnation: NodeID(high: 1, low: 2), writer: NodeID(high: 3, low: 4),
                sequence: 12, chain: [UInt8](repeating: 0xC4, count: 32)))
        #expect(checkpoint.signature.count == WriterCheckpoint.signatureBytes)
        #expect(checkpoint.signer(key: a.publicKeyDER) == a.device)
        #expect(checkpoint.signer(key: b.publicKeyDER) == nil, "another device's key")
        for change in [
            { (c: inout WriterCheckpoint) in c.sequence = 13 }, { $0.chain[0] ^= 1 },
            { $0.writer = NodeID(high: 3, low: 5) },
            { $0.incarnation = NodeID(high: 1, low: 3) }, { $0.zone = RecordZone.ID(name: "other") }
        ] {
            var altered = checkpoint
            change(&altered)
            #expect(altered.signer(key: a.publicKeyDER) == nil, "every field is signed: \(altered)")
        }
        #expect(checkpoint.signer(key: [1, 2, 3]) == nil, "a key that does not parse")
    }

    /// A node's checkpoint covers its log's head; it is signed again only when the log grew.
    @Test func aNodeSignsItsOwnHeadOnceItGrows() async throws {
        let path = FileManager.default.temporaryDirectory.path + "/shoal-checkpoints-\(UInt64.random(in: 0 ... .max))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try Store.open(directory: path)
        let zone = RecordZone.ID(name: "notes")
        try await store.createZone(zone)
        let signer = try #require(Self.signer(9))
        let node = SyncNode(store: store, signer: signer)
        #expect(await node.ownCheckpoint(of: zone) == nil, "an empty log")
        var r = Record(recordType: "Note", id: Record.ID(name: "a", zone: zone))
        r["title"] = .string("1")
        try await store.save(r)
        let first = try #require(await node.ownCheckpoint(of: zone))
        #expect(
            first.sequence == 1 && first.writer == store.nodeID
                && first.signer(key: signer.publicKeyDER) == signer.device)
        #expect(first.chain == (try await store.ownLogHead(of: zone)).chain)
        #expect(await node.ownCheckpoint(of: zone) == first, "the head did not move: the same checkpoint")
        try await store.save(Record(recordType: "Note", id: Record.ID(name: "b", zone: zone)))
        let second = try #require(await node.ownCheckpoint(of: zone))
        #expect(second.sequence == 2 && second != first)
        #expect(try await store.checkpoint(of: store.nodeID, in: zone, atMost: 1) == first, "both are kept")
        let unsigned = SyncNode(store: store)
        #expect(await unsigned.ownCheckpoint(of: zone) == nil, "a node without a device key signs nothing")
    }
}
