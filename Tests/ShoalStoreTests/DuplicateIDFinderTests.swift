// DuplicateIDFinderTests: the first ID a modify request names twice, as a set of IDs would find it.

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire

@Suite struct DuplicateIDFinderTests {
    /// Seeded requests of saves and deletions over a few zones, whose names repeat across zones
    /// (not duplicates) and sometimes within one (duplicates): the finder names the same ID as
    /// walking the request with a `Set<Record.ID>`, for requests small and large.
    @Test func findsTheFirstRepeatedIDAsASetWould() {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_DUPLICATE_SEED", default: 0xD0_91D5)
        var rng = SplitMix64(seed: seed)
        let zones = [RecordZone.ID(name: "a"), RecordZone.ID(name: "b"), RecordZone.ID(name: "a", owner: "other")]
        for round in 0..<400 {
            let count = Int(rng.next() % (round % 10 == 0 ? 3_000 : 40))
            let names = max(1, Int(rng.next() % UInt64(2 * count + 1)))
            func id() -> Record.ID {
                Record.ID(name: "n\(rng.next() % UInt64(names))", zone: zones[Int(rng.next() % UInt64(zones.count))])
            }
            let saveCount = Int(rng.next() % UInt64(count + 1))
            let saving = (0..<saveCount).map { _ in Record(recordType: "Note", id: id()) }
            let deleting = (saveCount..<count).map { _ in id() }
            var seen = Set<Record.ID>()
            let expected = (saving.map(\.id) + deleting).first { !seen.insert($0).inserted }
            #expect(
                DuplicateIDFinder.firstDuplicate(saving: saving, deleting: deleting) == expected,
                "round \(round), seed \(seed) (SHOAL_DUPLICATE_SEED)")
        }
    }
}
