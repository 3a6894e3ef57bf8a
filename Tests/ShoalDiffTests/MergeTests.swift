// MergeTests: the ancestor-free and three-way merges — symmetric, deterministic, union of disjoint edits, LWW and resolvers.

import Testing
import ShoalDiff
import ShoalSamples
@testable import ShoalWire

@Suite struct MergeTests {
    static let cases = 10_000
    static let nodeA = NodeID(high: 0xA, low: 1)
    static let nodeB = NodeID(high: 0xB, low: 2)

    /// A saved base and two concurrent edits of it by nodes A and B, optionally on disjoint fields.
    static func concurrentEdits(_ editor: inout RecordEditor, disjoint: Bool) -> (Record, Record, Record) {
        var base = editor.gen.record()
        if base.versionVector.isEmpty { base = editor.gen.saved(base) }
        if base.fields.contains(where: { $0.stamp == nil }) {
            // Replicated records carry a stamp on every slot.
            let d = editor.freshDot(after: base)
            base = Stamping.saved(base, by: d.node, at: d.hlc)
        }
        var namesA: Set<String>? = nil, namesB: Set<String>? = nil
        if disjoint {
            var a = Set<String>(), b = Set<String>()
            for f in base.fields { if editor.chance(50) { a.insert(f.name) } else { b.insert(f.name) } }
            a.insert("onlyA\(editor.int(3))")
            b.insert("onlyB\(editor.int(3))")
            namesA = a
            namesB = b
        }
        let dotA = editor.freshDot(after: base, node: nodeA)
        let dotB = disjoint || editor.chance(80) ? editor.freshDot(after: base, node: nodeB) : Dot(node: nodeB, hlc: dotA.hlc)
        let a = editor.edited(base, stamp: dotA, names: namesA, systemChanges: !disjoint)
        let b = editor.edited(base, stamp: dotB, names: namesB, systemChanges: !disjoint)
        return (base, a, b)
    }

    @Test func mergesAreSymmetricAndDeterministic() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x3E26_0001)
        var editor = RecordEditor(seed: seed)
        for i in 0..<Self.cases {
            let (x, y): (Record, Record)
            var ancestor: Record? = nil
            if i % 4 == 0 {
                // Unrelated records forced to one ID: the merge must still be symmetric.
                let p = editor.gen.record(), q = editor.gen.record()
                x = p
                y = Record(recordType: q.recordType, id: p.id, parent: q.parent, creation: q.creation,
                           versionVector: q.versionVector, heads: q.heads, fields: q.fields, extensions: q.extensions)
                let o = editor.gen.record()
                ancestor = Record(recordType: o.recordType, id: p.id, parent: o.parent, creation: o.creation,
                                  versionVector: o.versionVector, heads: o.heads, fields: o.fields, extensions: o.extensions)
            } else {
                let (base, a, b) = Self.concurrentEdits(&editor, disjoint: false)
                (x, y) = (a, b)
                ancestor = base
            }
            let xy = try merge(x, y), yx = try merge(y, x), again = try merge(x, y)
            guard xy.encoded() == yx.encoded(), xy == again else {
                Issue.record("seed \(seed) case \(i): merge is not symmetric\nx: \(x)\ny: \(y)\nxy: \(xy)\nyx: \(yx)")
                return
            }
            guard xy.versionVector == x.versionVector.union(y.versionVector) else {
                Issue.record("seed \(seed) case \(i): merged vector is not the union")
                return
            }
            if let ancestor {
                let ab = try merge(ancestor: ancestor, local: x, remote: y)
                let ba = try merge(ancestor: ancestor, local: y, remote: x)
                guard ab.encoded() == ba.encoded(), ab == (try merge(ancestor: ancestor, local: x, remote: y)) else {
                    Issue.record("seed \(seed) case \(i): three-way LWW merge is not symmetric\nbase: \(ancestor)\na: \(x)\nb: \(y)")
                    return
                }
            }
        }
    }

    @Test func disjointEditsMergeToTheirUnion() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x3E26_0003)
        var editor = RecordEditor(seed: seed)
        for i in 0..<Self.cases {
            let (base, a, b) = Self.concurrentEdits(&editor, disjoint: true)
            // The union: apply both edits to the base (they touch different fields).
            var expected = try apply(diff(base, a), to: base)
            var fromB = diff(base, b)
            fromB.baseTag = expected.versionFingerprint
            fromB.system = nil
            expected = try apply(fromB, to: expected)
            let dots = try merge(a, b), threeWay = try merge(ancestor: base, local: a, remote: b)
            guard dots.fields == expected.fields, threeWay.fields == expected.fields,
                  dots.versionVector == a.versionVector.union(b.versionVector), dots == threeWay else {
                Issue.record("seed \(seed) case \(i): disjoint edits do not merge to their union\nbase: \(base)\na: \(a)\nb: \(b)\ndots: \(dots)\nthree-way: \(threeWay)")
                return
            }
            // Both writers' saves are concurrent heads of the merge.
            guard dots.heads.map(\.node) == [Self.nodeA, Self.nodeB] else {
                Issue.record("seed \(seed) case \(i): heads \(dots.heads)")
                return
            }
        }
    }

    static let zone = RecordZone.ID(name: "z")

    static func record(_ fields: [Record.Field], vv: [(NodeID, UInt64)]) -> Record {
        let v = VersionVector(vv.map { ($0.0, HLC(rawValue: $0.1)) })
        return Record(recordType: "Note", id: Record.ID(name: "n", zone: zone), parent: nil,
                      creation: Dot(node: nodeA, hlc: HLC(rawValue: 1)), versionVector: v,
                      heads: v.entries.map { Record.Head(node: $0.node, isDeletion: false) }, fields: fields, extensions: [])
    }

    static func dot(_ n: NodeID, _ t: UInt64) -> Dot { Dot(node: n, hlc: HLC(rawValue: t)) }

    @Test func lastWriterWinsByHLCThenNode() throws {
        let base = Self.record([Record.Field(name: "title", value: .string("old"), stamp: Self.dot(Self.nodeA, 1))], vv: [(Self.nodeA, 1)])
        let a = Self.record([Record.Field(name: "title", value: .string("A"), stamp: Self.dot(Self.nodeA, 5))], vv: [(Self.nodeA, 5)])
        let b = Self.record([Record.Field(name: "title", value: .string("B"), stamp: Self.dot(Self.nodeB, 7))], vv: [(Self.nodeA, 1), (Self.nodeB, 7)])
        #expect(try merge(a, b)["title"] == .string("B"))
        #expect(try merge(ancestor: base, local: a, remote: b)["title"] == .string("B"))
        #expect(try merge(ancestor: base, local: b, remote: a)["title"] == .string("B"))
        // Same HLC: the larger node ID wins.
        let b5 = Self.record([Record.Field(name: "title", value: .string("B"), stamp: Self.dot(Self.nodeB, 5))], vv: [(Self.nodeA, 1), (Self.nodeB, 5)])
        #expect(try merge(a, b5)["title"] == .string("B"))
        // A write the other side has seen is superseded, even with a later clock.
        let late = Self.record([Record.Field(name: "title", value: .string("late"), stamp: Self.dot(Self.nodeB, 9))], vv: [(Self.nodeB, 9)])
        let after = Self.record([Record.Field(name: "title", value: .string("after"), stamp: Self.dot(Self.nodeA, 3))], vv: [(Self.nodeA, 3), (Self.nodeB, 9)])
        #expect(try merge(late, after)["title"] == .string("after"))
        // A removal marker takes part like a value.
        let removed = Self.record([Record.Field(name: "title", value: nil, stamp: Self.dot(Self.nodeB, 8))], vv: [(Self.nodeA, 1), (Self.nodeB, 8)])
        let m = try merge(a, removed)
        #expect(m["title"] == nil && m.fields.count == 1)
        #expect(m.heads.count == 2)
    }

    @Test func resolverSeesTheThreeRecords() throws {
        let base = Self.record([Record.Field(name: "n", value: .int64(10), stamp: Self.dot(Self.nodeA, 1)),
                                Record.Field(name: "x", value: .int64(0), stamp: Self.dot(Self.nodeA, 1))], vv: [(Self.nodeA, 1)])
        let local = Self.record([Record.Field(name: "n", value: .int64(13), stamp: Self.dot(Self.nodeA, 2)),
                                 Record.Field(name: "x", value: .int64(0), stamp: Self.dot(Self.nodeA, 1))], vv: [(Self.nodeA, 2)])
        let remote = Self.record([Record.Field(name: "n", value: .int64(15), stamp: Self.dot(Self.nodeB, 3)),
                                  Record.Field(name: "x", value: .int64(1), stamp: Self.dot(Self.nodeB, 3))], vv: [(Self.nodeA, 1), (Self.nodeB, 3)])
        // A counter: apply both increments to the ancestor.
        let policy = MergePolicy.resolve { c in
            guard case .int64(let a)? = c.ancestorValue, case .int64(let l)? = c.localValue, case .int64(let r)? = c.remoteValue else { return .remote }
            return .value(.int64(l + r - a))
        }
        let m = try merge(ancestor: base, local: local, remote: remote, policy: policy)
        #expect(m["n"] == .int64(18))
        #expect(m.changedKeys == ["n"])
        #expect(m["x"] == .int64(1))  // changed on one side only: no conflict
        #expect(try merge(ancestor: base, local: local, remote: remote, policy: .resolve { _ in .local })["n"] == .int64(13))
        #expect(try merge(ancestor: base, local: local, remote: remote)["n"] == .int64(15))
    }
}
