// VersionVectorUnionTests: formUnion against a per-node maximum, on seeded random vectors.

import Testing
import ShoalSamples
import ShoalWire

@Suite struct VersionVectorUnionTests {
    /// For 20,000 seeded pairs drawn from a pool of 6 nodes (so one side often holds every node
    /// of the other — the in-place path — and often not — the merging path), `formUnion` gives
    /// each node the larger of its two entries and keeps nodes of either side, and `union` agrees.
    @Test func unionIsThePerNodeMaximum() {
        let seed: UInt64 = 0x5EED_0001
        var rng = SplitMix64(seed: seed)
        let nodes = (0..<6).map { NodeID(high: 0, low: UInt64($0) &* 7919 &+ 1) }
        func vector() -> [NodeID: UInt64] {
            var v = [NodeID: UInt64]()
            for n in nodes where rng.next() % 3 != 0 { v[n] = 1 + rng.next() % 50 }
            return v
        }
        for i in 0..<20_000 {
            let a = vector(), b = vector()
            var va = VersionVector(a.map { ($0.key, HLC(milliseconds: $0.value, logical: 0)) })
            let vb = VersionVector(b.map { ($0.key, HLC(milliseconds: $0.value, logical: 0)) })
            let expected = VersionVector(
                a.merging(b, uniquingKeysWith: max).map { ($0.key, HLC(milliseconds: $0.value, logical: 0)) })
            let viaUnion = va.union(vb)
            va.formUnion(vb)
            #expect(va == expected, "seed \(seed), case \(i): \(a) ∪ \(b)")
            #expect(viaUnion == expected, "seed \(seed), case \(i)")
            if va != expected { return }
        }
    }
}
