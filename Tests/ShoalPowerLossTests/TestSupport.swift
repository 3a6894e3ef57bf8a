// TestSupport: seeded randomness, scratch directories and a stepping clock for the power-loss tests.

import ShoalWire
import Synchronization
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A small seeded generator (SplitMix64), so a seed replays the same run.
struct SeededRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}

/// A directory under the system temporary directory, removed when dropped.
final class ScratchDirectory {
    let path: String
    init(_ name: String) {
        path = FileManager.default.temporaryDirectory.path + "/\(name)-\(UInt64.random(in: 0...UInt64.max))"
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A wall clock that advances 1 ms per read, so a seed's timestamps do not depend on the machine.
final class SteppingClock: Sendable {
    private let now = Mutex<UInt64>(1_795_000_000_000)
    func read() -> UInt64 {
        now.withLock {
            $0 += 1; return $0
        }
    }
}

/// Node IDs and zone incarnations from a seed, so a seed's identities, and with them the order
/// of vector entries and merges, are the same on every run.
final class SeededIdentifiers: Sendable {
    private let rng: Mutex<SeededRandom>
    init(seed: UInt64) { rng = Mutex(SeededRandom(state: seed)) }
    func next() -> NodeID { rng.withLock { NodeID(high: $0.next(), low: $0.next()) } }
}
