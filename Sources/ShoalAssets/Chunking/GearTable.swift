// GearTable: FastCDC's 256 random 64-bit words, generated from a fixed seed (Spec/assets.md §2).

/// The gear table of Shoal's content-defined chunking: 256 words from SplitMix64.
///
/// Entry `i` is the `i + 1`-th output of SplitMix64 started from ``seed`` (state += 0x9E3779B97F4A7C15,
/// then the two multiply-xorshift rounds). Every node must use the same table, or the same content
/// cuts differently and stops deduplicating; `Spec/assets.md` lists all 256 words and a test checks
/// them against this generator.
package enum GearTable {
    /// The seed: the ASCII bytes "shoalcdc" read as a big-endian integer.
    package static let seed: UInt64 = 0x7368_6F61_6C63_6463

    /// The 256 words.
    package static let words: [UInt64] = {
        var state = seed
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }()
}
