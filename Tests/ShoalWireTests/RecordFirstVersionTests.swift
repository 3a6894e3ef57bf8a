// RecordFirstVersionTests: a record's first saved version, and the sizes worked out without encoding.

import Testing
import ShoalSamples
import ShoalWire

@Suite struct RecordFirstVersionTests {
    /// For arbitrary records — unsaved or saved, with removal markers, parents and extensions —
    /// `validatedSize` is the encoding's size, and the first version's size, worked out from it,
    /// is its encoding's too; the version keeps the fields that have values, each stamped with
    /// the dot, and validates.
    @Test func firstVersionSizesAreTheEncodingsSizes() throws {
        var gen = RandomRecords(seed: 0x5EED_F125)
        var rng = SplitMix64(seed: 0xF125_7EED)
        let node = NodeID(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
        for i in 0..<2_000 {
            var client = gen.record()
            if client.versionVector.isEmpty && rng.next() % 4 == 0 {
                // Removal markers in an unsaved record, as a client may build one.
                client = Record(
                    recordType: client.recordType, id: client.id, parent: client.parent, creation: nil,
                    versionVector: VersionVector(), heads: [],
                    fields: client.fields.map { rng.next() % 3 == 0 ? Record.Field(name: $0.name, value: nil) : $0 },
                    extensions: client.extensions)
            }
            let size = try client.validatedSize(limits: .default)
            #expect(size == client.encodedSize, "record \(i) (seed 0x5EEDF125)")
            var vector = VersionVector()
            if rng.next() % 2 == 0 {
                vector.advance(NodeID(high: rng.next(), low: rng.next()), to: HLC(rawValue: 1 + rng.next() % (1 << 50)))
            }
            let dot = Dot(node: node, hlc: HLC(rawValue: 1 + rng.next() % (1 << 60)))
            vector.advance(dot.node, to: dot.hlc)
            let (version, versionSize) = client.firstVersion(
                at: dot, vector: vector, heads: [Record.Head(node: node, isDeletion: false)],
                size: size)
            #expect(versionSize == version.encodedSize, "record \(i) (seed 0x5EEDF125)")
            #expect(versionSize == version.encoded().count)
            #expect(version.fields.map(\.name) == client.fields.filter { $0.value != nil }.map(\.name))
            #expect(version.fields.allSatisfy { $0.stamp == dot })
            #expect(version.creation == dot)
            try version.validate()
        }
    }
}
