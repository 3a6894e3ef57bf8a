// SHA256StreamTests: the SHA-instruction stream and the two-stream pass against swift-crypto and
// FIPS 180-4's examples, at every length around the block and padding boundaries.

import Testing
@testable import ShoalAssets
import ShoalSamples
import ShoalWire

@Suite struct SHA256StreamTests {
    /// Hashes `bytes` fed in `pieces` (lengths that sum to its count).
    static func streamed(_ bytes: [UInt8], _ pieces: [Int], instructions: Bool = true) -> ContentHash {
        var h = ContentHasher(instructions: instructions)
        bytes.withUnsafeBytes { raw in
            var offset = 0
            for n in pieces {
                h.update(UnsafeRawBufferPointer(rebasing: raw[offset..<offset + n]))
                offset += n
            }
        }
        return h.finalize()
    }

    @Test(.enabled(if: SHA256Stream.isAvailable, "the processor has no SHA instructions"))
    func hasherUsesTheInstructionsWhereThereAreAny() {
        #expect(ContentHasher().usesInstructions)
        #expect(!ContentHasher(instructions: false).usesInstructions)
    }

    @Test func standardExamples() {
        // FIPS 180-4 / NIST CSRC examples: "", "abc", and the 448-bit two-block message.
        let cases: [(String, String)] = [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            )
        ]
        for (message, digest) in cases {
            let bytes = Array(message.utf8)
            #expect("\(Self.streamed(bytes, [bytes.count]))" == digest, "\"\(message)\"")
            #expect("\(Self.streamed(bytes, [bytes.count], instructions: false))" == digest, "\"\(message)\"")
        }
    }

    @Test func everyLengthAroundThePaddingBoundaries() {
        let bytes = randomBytes(300, seed: 11)
        for n in 0...bytes.count {
            let message = Array(bytes[..<n])
            #expect(Self.streamed(message, [n]) == .sha256(message), "length \(n)")
        }
    }

    @Test func splitUpdatesMatchOneShot() {
        for seed in UInt64(1)...40 {
            var rng = SplitMix64(seed: seed)
            let count = Int(rng.next() % 5000)
            let bytes = randomBytes(count, seed: seed)
            var pieces: [Int] = [], left = count
            while left > 0 {
                let n = min(left, Int(rng.next() % 200))
                pieces.append(n)
                left -= n
            }
            #expect(Self.streamed(bytes, pieces) == .sha256(bytes), "seed \(seed), pieces \(pieces.prefix(8))…")
        }
    }

    /// The two-stream pass: chunks of random lengths fed to a whole-asset hasher that is part
    /// way through a block, each chunk's own hash returned — both as swift-crypto computes them.
    @Test(arguments: [true, false])
    func chunkAndWholeInOnePass(instructions: Bool) {
        for seed in UInt64(1)...12 {
            var rng = SplitMix64(seed: seed)
            let bytes = randomBytes(Int(rng.next() % (600 << 10)), seed: seed &* 31)
            var whole = ContentHasher(instructions: instructions)
            var offset = 0, chunks = 0
            bytes.withUnsafeBytes { raw in
                while offset < raw.count {
                    // Short pieces (under a block, across one) as well as chunk-sized ones.
                    let n = min(
                        raw.count - offset, rng.next() % 3 == 0 ? Int(rng.next() % 130) : Int(rng.next() % (100 << 10)))
                    let chunk = UnsafeRawBufferPointer(rebasing: raw[offset..<offset + n])
                    #expect(
                        whole.updateHashing(chunk) == .sha256(chunk),
                        "seed \(seed), chunk \(chunks) at \(offset), \(n) bytes")
                    offset += n
                    chunks += 1
                }
            }
            #expect(whole.finalize() == .sha256(bytes), "seed \(seed): \(bytes.count) bytes in \(chunks) chunks")
        }
    }
}
