// AssetChunkPayloadTests: an answer's payload written from borrowed chunk bytes has the layout of
// Spec/replication.md §3.7 and decodes back to the chunk.

import Testing
import ShoalSamples
@testable import ShoalWire

@Suite struct AssetChunkPayloadTests {
    /// LEB128, written out here rather than through the codec under test.
    static func varint(_ value: UInt64) -> [UInt8] {
        var v = value, out = [UInt8]()
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        return out + [UInt8(v)]
    }

    /// Lengths and indexes on both sides of every varint width the payload uses; seeded bytes.
    @Test(arguments: [0, 1, 127, 128, 16_383, 16_384, 262_144])
    func borrowedChunkPayloadHasTheSpecLayout(length: Int) throws {
        var rng = SplitMix64(seed: UInt64(length) &+ 11)
        let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let hash = (0..<32).map { UInt8($0) }
        let asset = Asset(hash: try #require(ContentHash(bytes: hash)), size: 1 << 40)
        for index: UInt64 in [0, 127, 128, 1 << 40] {
            let payload = bytes.withUnsafeBytes {
                AssetChunkMessage.chunkPayload(asset: asset, index: index, bytes: $0)
            }
            // asset hash | asset size | part 2 (chunk) | chunk index | length-prefixed bytes
            let expected = hash + Self.varint(1 << 40) + [2] + Self.varint(index) + Self.varint(UInt64(length)) + bytes
            #expect(payload == expected, "length \(length) index \(index)")
            #expect(
                AssetChunkMessage(asset: asset, part: .chunk(index: index, bytes: bytes)).encoded() == expected,
                "length \(length) index \(index)")
            let decoded = try AssetChunkMessage(decoding: payload)
            #expect(
                decoded == AssetChunkMessage(asset: asset, part: .chunk(index: index, bytes: bytes)),
                "length \(length) index \(index)")
        }
    }
}
