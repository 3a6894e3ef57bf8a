// FieldEditsTests: diffs of records that share an edit lineage equal diffs computed by the full walk.

import Testing
import ShoalDiff
import ShoalSamples
@testable import ShoalWire

@Suite struct FieldEditsTests {
    static let cases = 10_000

    /// `r` rebuilt from its parts: the same value with a lineage of its own, so diffs against it
    /// take the full walk over both slot arrays.
    static func rebuilt(_ r: Record) -> Record {
        Record(
            recordType: r.recordType, id: r.id, parent: r.parent, creation: r.creation, versionVector: r.versionVector,
            heads: r.heads, fields: r.fields, extensions: r.extensions)
    }

    /// Edits through the public API, as an app makes them: set a value, set it back, remove a
    /// field, add one; sometimes apply a delta; sometimes restructure through `fields`.
    static func edit(_ r: inout Record, _ gen: inout RandomRecords, _ other: Record) {
        let zone = r.id.zone
        for _ in 0..<(1 + Int(gen.rng.next() % 3)) {
            let names = r.fields.map(\.name)
            let roll = gen.rng.next() % 100
            if roll < 45, let name = names.randomElement(using: &gen.rng) {
                r[name] = gen.value(zone: zone)
            } else if roll < 55, let name = names.randomElement(using: &gen.rng) {
                // Set a field to the value it already has (or another record's value of it).
                r[name] = other[name] ?? r[name]
            } else if roll < 65, let name = names.randomElement(using: &gen.rng) {
                r[name] = nil
            } else if roll < 72 {
                r[gen.identifier()] = gen.value(zone: zone)
            } else if roll < 85, let d = Optional(diff(r, other)), let applied = try? apply(d, to: r) {
                // Becomes `other`'s fields through in-place replacements (and inserts, if any).
                r = applied
            } else if roll < 92 {
                r = rebuilt(r)
            }
        }
    }

    /// Many versions derived from one record by edits on copies (so most pairs share a lineage,
    /// some do not); for random pairs, the delta equals the full walk's delta and applies.
    @Test func aSharedLineageDiffEqualsTheFullWalk() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xED17_0001)
        var gen = RandomRecords(seed: seed)
        var shared = 0
        for i in 0..<Self.cases {
            var versions = [gen.record()]
            if versions[0].fields.count < 3 { continue }
            if i % 10 == 0 { versions[0] = gen.saved(versions[0]) }
            for _ in 0..<4 {
                var v = versions.randomElement(using: &gen.rng) ?? versions[0]
                let other = versions.randomElement(using: &gen.rng) ?? versions[0]
                Self.edit(&v, &gen, other)
                versions.append(v)
            }
            for _ in 0..<4 {
                guard let a = versions.randomElement(using: &gen.rng), let b = versions.randomElement(using: &gen.rng)
                else { continue }
                if a.edits.isShared(with: b.edits) { shared += 1 }
                let fast = diff(a, b), walked = diff(Self.rebuilt(a), b)
                guard fast == walked else {
                    Issue.record("seed \(seed) case \(i): lineage diff \(fast) != walk \(walked)\na: \(a)\nb: \(b)")
                    return
                }
                guard try apply(fast, to: a) == b else {
                    Issue.record("seed \(seed) case \(i): apply(diff(a, b), a) != b\na: \(a)\nb: \(b)\ndelta: \(fast)")
                    return
                }
            }
        }
        // Most pairs must take the lineage path, or this test checks nothing new.
        #expect(shared > Self.cases, "only \(shared) pairs of \(Self.cases * 4) shared a lineage (seed \(seed))")
    }

    /// Slots at index 64 and beyond have no bit: editing one starts a new lineage, and the diff
    /// still sees every change.
    @Test func editsBeyondSixtyFourSlotsAreSeen() throws {
        var r = Record(recordType: "Wide", id: Record.ID(name: "w", zone: RecordZone.ID(name: "z")))
        for k in 0..<80 { r["f" + String(100 + k)] = .int64(Int64(k)) }
        var low = r, high = r
        low["f110"] = .int64(-1)
        high["f170"] = .int64(-2)
        #expect(low.edits.isShared(with: r.edits))
        #expect(!high.edits.isShared(with: r.edits))
        var both = low
        both["f170"] = .int64(-2)
        for (a, b) in [(r, low), (r, high), (low, high), (r, both), (low, both), (high, both)] {
            let d = diff(a, b)
            #expect(d == diff(Self.rebuilt(a), b))
            #expect(try apply(d, to: a) == b)
        }
        #expect(diff(r, both).operations.map(\.fieldName) == ["f110", "f170"])
    }

    /// Setting a field back to the value its lineage started with gives an empty delta, and the
    /// lineage is not part of a record's value (equality and hashing ignore it).
    @Test func anEditUndoneIsNoChange() {
        var r = Record(recordType: "Note", id: Record.ID(name: "n", zone: RecordZone.ID(name: "z")))
        r["title"] = .string("a")
        r["body"] = .string("b")
        var e = r
        e["title"] = .string("changed")
        e["title"] = .string("a")
        #expect(e.edits.isShared(with: r.edits) && e.edits.candidates(with: r.edits) != 0)
        #expect(diff(r, e).isEmpty)
        #expect(e == r && e.hashValue == r.hashValue && Self.rebuilt(r) == r)
    }
}
