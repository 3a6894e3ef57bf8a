// ChunkingTests: FastCDC's cut rules, size distribution, determinism (Spec vector) and the gear table.

import Testing
@testable import ShoalAssets
import ShoalSamples
import ShoalWire
import Foundation

@Suite struct ChunkingTests {
    /// Lengths of the chunks of `bytes`, cutting as an import does.
    static func chunkLengths(_ bytes: [UInt8], _ p: ChunkingParameters = .standard) -> [Int] {
        var lengths: [Int] = []
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = p.cutPoint(in: UnsafeRawBufferPointer(rebasing: raw[offset...]))
                lengths.append(n)
                offset += n
            }
        }
        return lengths
    }

    @Test func cutsRespectMinimumAndMaximum() {
        for seed in UInt64(1)...4 {
            let lengths = Self.chunkLengths(randomBytes(4 << 20, seed: seed))
            #expect(lengths.reduce(0, +) == 4 << 20)
            for (i, n) in lengths.enumerated() {
                #expect(n <= 256 << 10)
                if i < lengths.count - 1 { #expect(n >= 16 << 10, "seed \(seed) chunk \(i)") }
            }
        }
        // Zeros have no content-defined cut points: every chunk is the maximum.
        let zeros = Self.chunkLengths([UInt8](repeating: 0, count: 1 << 20))
        #expect(zeros == [Int](repeating: 256 << 10, count: 4))
    }

    @Test func averageChunkIsNearTheTarget() {
        let lengths = Self.chunkLengths(randomBytes(16 << 20, seed: 7))
        let mean = Double(16 << 20) / Double(lengths.count)
        // Normalized chunking with a 16 KiB minimum lands a little above 64 KiB on random data.
        #expect(mean > 56 * 1024 && mean < 88 * 1024, "mean chunk \(mean) bytes over \(lengths.count) chunks")
    }

    @Test func everyCutChunkIsCanonical() {
        let bytes = randomBytes(2 << 20, seed: 3)
        let lengths = Self.chunkLengths(bytes)
        bytes.withUnsafeBytes { raw in
            var offset = 0
            for (i, n) in lengths.enumerated() {
                let chunk = UnsafeRawBufferPointer(rebasing: raw[offset..<offset + n])
                #expect(ChunkingParameters.standard.isCanonical(chunk, last: i == lengths.count - 1))
                offset += n
            }
            // A chunk cut short of its cut point, or extended past it, is not canonical.
            let first = lengths[0]
            #expect(
                !ChunkingParameters.standard.isCanonical(
                    UnsafeRawBufferPointer(rebasing: raw[0..<first - 1]), last: false))
            #expect(
                !ChunkingParameters.standard.isCanonical(
                    UnsafeRawBufferPointer(rebasing: raw[0..<first + 1]), last: false))
        }
    }

    /// `isCanonical` hashes four stretches of a chunk at once; it must answer exactly as the
    /// one-byte-at-a-time search for the first cut point does, for windows of random data that
    /// end at a cut point, just before or after one, or anywhere, with `last` either way.
    @Test(arguments: [UInt64(1), 2, 3])
    func theInterleavedCheckAgreesWithTheFirstCutSearch(seed: UInt64) throws {
        let small = try ChunkingParameters(minimum: 64, average: 2048, maximum: 8192)
        var rng = SplitMix64(seed: 700 + seed)
        for (p, windows) in [(small, 1500), (ChunkingParameters.standard, 60)] {
            // Random bytes, and bytes from a four-letter alphabet (long stretches of few values).
            for alphabet in [256, 4] {
                let bytes = randomBytes(4 * p.maximumBytes, seed: rng.next()).map { UInt8(Int($0) % alphabet) }
                bytes.withUnsafeBytes { raw in
                    for w in 0..<windows {
                        let start = Int(rng.next() % UInt64(2 * p.maximumBytes))
                        let rest = UnsafeRawBufferPointer(rebasing: raw[start...])
                        var length = Int(rng.next() % UInt64(p.maximumBytes)) + 1
                        if w % 3 == 0, let cut = p.scan(rest) { length = max(1, cut + Int(rng.next() % 3) - 1) }
                        let chunk = UnsafeRawBufferPointer(rebasing: rest[..<(rest.startIndex + length)])
                        for last in [false, true] {
                            let reference = p.scan(chunk).map { $0 == length } ?? (last || length == p.maximumBytes)
                            #expect(
                                p.isCanonical(chunk, last: last) == reference,
                                "seed \(seed), chunking \(p), alphabet \(alphabet), start \(start), length \(length), last \(last)"
                            )
                        }
                    }
                }
            }
        }
    }

    @Test func unusableSizesAreRefused() {
        for (lo, avg, hi) in [(0, 1024, 4096), (1024, 1000, 4096), (2048, 1024, 4096), (256, 1024, 512), (16, 128, 512)]
        {
            #expect(throws: AssetError.self) { try ChunkingParameters(minimum: lo, average: avg, maximum: hi) }
        }
        #expect((try? ChunkingParameters(minimum: 16 << 10, average: 64 << 10, maximum: 256 << 10)) == .standard)
    }

    /// Spec/assets.md §2.4: the chunk lengths of 1 MiB of SplitMix64(seed 1) bytes.
    @Test func specVectorChunkBoundaries() {
        let bytes = randomBytes(1 << 20, seed: 1)
        let lengths = Self.chunkLengths(bytes)
        #expect(lengths == SpecVector.lengths, "got \(lengths)")
        #expect(ContentHash.sha256(bytes).hex == SpecVector.assetHash)
    }

    /// The gear table in Spec/assets.md §2.2 is the one the generator produces.
    @Test func gearTableMatchesSpec() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("Spec/assets.md"), encoding: .utf8)
        let start = try #require(text.range(of: "<!-- gear-table -->"))
        let block = text[start.upperBound...].split(separator: "```", maxSplits: 2)[1]
        let tokens: [Substring] = block.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
        let words: [UInt64?] = tokens.filter { $0.hasPrefix("0x") }.map { UInt64($0.dropFirst(2), radix: 16) }
        #expect(words.count == 256)
        #expect(words == GearTable.words.map { Optional($0) })
        #expect(GearTable.seed == 0x7368_6F61_6C63_6463)
    }
}

/// The chunking test vector of Spec/assets.md §2.4.
enum SpecVector {
    static let lengths = [
        92891, 78082, 94879, 97153, 73456, 67563, 69496, 71086, 71815, 70301, 72749, 66027, 85968, 37110
    ]
    static let assetHash = "85b66b3a5816d686deb42f2d2473d9a7121ceb75c822b838f958c76ca86ed8ea"
}
