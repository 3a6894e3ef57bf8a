// SplitMix64: the seeded generator behind every deterministic corpus, property test and simulation.

/// A small, fast, seedable random number generator (SplitMix64).
///
/// Every randomised test and corpus in Shoal draws from one of these so that a failure can be
/// reproduced from the seed it prints.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The current state.
    package private(set) var state: UInt64

    /// Creates a generator from a seed.
    package init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A seed from the environment variable `name` if set (decimal or 0x-hex), else from the clock.
    package static func seed(fromEnvironment name: String, default fallback: UInt64) -> UInt64 {
        guard let raw = Environment.value(name) else { return fallback }
        if raw.hasPrefix("0x"), let v = UInt64(raw.dropFirst(2), radix: 16) { return v }
        return UInt64(raw) ?? fallback
    }
}

/// Reads environment variables without Foundation.
package enum Environment {
    package static func value(_ name: String) -> String? {
        guard let p = getenv(name) else { return nil }
        return String(cString: p)
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
