// RecordCodecTests: round trips and canonical bytes of records on seeded random inputs.

import Testing
import ShoalSamples
@testable import ShoalWire

@Suite struct RecordCodecTests {
    @Test func randomRecordsRoundTripCanonically() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5EED_0001)
        var gen = RandomRecords(seed: seed)
        for i in 0..<10_000 {
            let record = gen.record()
            let bytes = record.encoded()
            #expect(bytes.count == record.encodedSize)
            let decoded: Record
            do {
                decoded = try Record(decoding: bytes)
            } catch {
                Issue.record("seed \(seed) case \(i): decode failed: \(error)\n\(record)")
                return
            }
            guard decoded == record, decoded.encoded() == bytes else {
                Issue.record("seed \(seed) case \(i): round trip differs\n\(record)\n\(decoded)")
                return
            }
            // The vector read from the bytes alone, and every truncation fails cleanly or agrees.
            let peeked = try bytes.withUnsafeBytes { try Record.versionVector(ofEncoded: $0) }
            #expect(peeked == record.versionVector, "seed \(seed) case \(i)")
            let cut = Array(bytes.prefix(Int(gen.rng.next() % UInt64(bytes.count + 1))))
            if let v = cut.withUnsafeBytes({ try? Record.versionVector(ofEncoded: $0) }) {
                #expect(v == record.versionVector, "seed \(seed) case \(i): a truncation read another vector")
            }
        }
    }

    @Test func notesCorpusRoundTrips() throws {
        for r in NotesCorpus.records(count: 500) {
            let bytes = r.encoded()
            let back = try Record(decoding: bytes)
            #expect(back == r)
            try r.validate()
        }
    }

    @Test func subscriptTracksChangedKeys() {
        var r = Record(recordType: "Note", id: Record.ID(name: "a", zone: RecordZone.ID(name: "z")))
        r["b"] = .int64(1)
        r["a"] = .string("x")
        #expect(r.allKeys == ["a", "b"])
        r["a"] = nil
        #expect(r.allKeys == ["b"])
        let saved = Stamping.saved(r, by: NodeID(high: 1, low: 2), at: HLC(rawValue: 1 << 20))
        #expect(saved.changedKeys.isEmpty)
        var edited = saved
        edited["b"] = nil
        edited["c"] = .bool(true)
        #expect(edited.changedKeys == ["b", "c"])
        #expect(edited.allKeys == ["c"])
    }
}
