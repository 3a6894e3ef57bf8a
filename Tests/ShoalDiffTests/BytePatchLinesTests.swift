// BytePatchLinesTests: edits far apart in a long value become separate patches, and applying the
// patches always gives the new value.

import Testing
import ShoalSamples
@testable import ShoalDiff
@testable import ShoalWire

@Suite struct BytePatchLinesTests {
    static let text: String = (0..<1_900).map { "line \($0): the quick brown fox jumps over the lazy dog.\n" }.joined()

    /// A word changed near the start and another near the end of 100 KiB: two short patches,
    /// not one spanning the text between.
    @Test func editsFarApartAreSeparatePatches() throws {
        var u = Array(Self.text.utf8)
        u.replaceSubrange(1_000..<1_005, with: Array("QUICK".utf8))
        u.replaceSubrange(100_000..<100_003, with: Array("FOX!".utf8))
        let new = String(decoding: u, as: UTF8.self)
        let patches = BytePatcher.patches(from: Self.text, to: new)
        #expect(patches.count == 2, "\(patches.map { ($0.offset, $0.deleteCount, $0.insert.count) })")
        #expect(patches.reduce(0) { $0 + $1.insert.count } <= 16)
        #expect(try BytePatcher.apply(patches, to: .string(Self.text), field: "body") == .string(new))
    }

    /// Seeded random texts and random edits (changed, inserted and removed runs, some lines
    /// moved): the patches apply to exactly the new value, in order and never touching.
    @Test func patchesAlwaysApplyToTheNewValue() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xB7E5_0001)
        var rng = SplitMix64(seed: seed)
        func int(_ n: Int) -> Int { n <= 0 ? 0 : Int(rng.next() % UInt64(n)) }
        for i in 0..<300 {
            let lineCount = 1 + int(400)
            var lines = (0..<lineCount).map { k in
                String(repeating: "w\(int(50)) ", count: 1 + int(12)) + (k % 7 == 0 ? "" : "\n")
            }
            let old = lines.joined()
            for _ in 0..<(1 + int(6)) {
                let at = int(lines.count)
                switch int(4) {
                case 0: lines[at] = "changed \(int(1000))\n"
                case 1: lines.insert("inserted \(int(1000))\n", at: at)
                case 2: if lines.count > 1 { lines.remove(at: at) }
                default: lines.append(lines[at])
                }
            }
            let new = lines.joined()
            let patches = BytePatcher.patches(from: old, to: new)
            #expect(patches.isEmpty == (old == new), "seed \(seed) case \(i)")
            guard !patches.isEmpty else { continue }
            let single = try #require(BytePatcher.patch(from: old, to: new))
            #expect(
                patches.reduce(0) { $0 + BytePatcher.encodedSize($1) } <= BytePatcher.encodedSize(single),
                "seed \(seed) case \(i): larger than one patch")
            let applied = try BytePatcher.apply(patches, to: .string(old), field: "body")
            guard applied == .string(new) else {
                Issue.record(
                    "seed \(seed) case \(i): patches \(patches.map { ($0.offset, $0.deleteCount, $0.insert.count) }) do not give the new value"
                )
                return
            }
        }
    }
}
