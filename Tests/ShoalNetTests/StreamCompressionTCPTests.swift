// StreamCompressionTCPTests: two nodes on loopback TLS negotiate the zstd stream (compression 3)
// and replicate through it; a node that does not announce it still syncs with compression 0–2.

import Foundation
import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalNet

@Suite(.serialized) struct StreamCompressionTCPTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String, _ text: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["text"] = .string(text)
        return r
    }

    /// A initial-syncs 30 notes to B, then 10 live saves, and back one from B; returns (A, B).
    func replicate(streamOnB: Bool) async throws -> (LoopbackNode, LoopbackNode) {
        var off = NetworkConfiguration()
        off.streamCompression = streamOnB
        let a = try await LoopbackNode.start("stream-a"), b = try await LoopbackNode.start("stream-b", network: off)
        await LoopbackNode.trustEachOther(a, b)
        try await a.createSharedZone(Self.notes, with: [b])
        for i in 0..<30 { _ = try await a.store.save(note("n\(i)", "a note about groceries for sunday, number \(i)")) }
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(try await eventually { (try? await b.store.allRecordIDs(in: Self.notes).count) == 30 })
        for i in 0..<10 {
            _ = try await a.store.save(note("live\(i)", "a live note about the sunday groceries, \(i)"))
            #expect(
                try await eventually {
                    (try? await b.store.record(for: Record.ID(name: "live\(i)", zone: Self.notes))) != nil
                })
        }
        _ = try await b.store.save(note("from-b", "written on b"))
        #expect(
            try await eventually {
                let da = try await a.store.digest(of: Self.notes), db = try await b.store.digest(of: Self.notes)
                return da == db && da.recordCount == 41
            })
        return (a, b)
    }

    @Test func twoNodesNegotiateTheStreamAndReplicate() async throws {
        let (a, b) = try await replicate(streamOnB: true)
        // Every compressible frame after the hellos went through the stream, both ways.
        #expect(b.net.traffic.streamFramesReceived >= 10, "\(b.net.traffic.streamFramesReceived)")
        #expect(a.net.traffic.streamFramesReceived >= 10, "\(a.net.traffic.streamFramesReceived)")
        await a.stop(); await b.stop()
    }

    @Test func aPeerWithoutTheStreamStillSyncs() async throws {
        let (a, b) = try await replicate(streamOnB: false)
        #expect(b.net.traffic.streamFramesReceived == 0)
        #expect(a.net.traffic.streamFramesReceived == 0)
        await a.stop(); await b.stop()
    }
}
