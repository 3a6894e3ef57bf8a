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
        let dotB =
            disjoint || editor.chance(80) ? editor.freshDot(after: base, node: nodeB) : Dot(node: nodeB, hlc: dotA.hlc)
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
                y = Record(
                    recordType: q.recordType, id: p.id, parent: q.parent, creation: q.creation,
                    versionVector: q.versionVector, heads: q.heads, fields: q.fields, extensions: q.extensions)
                let o = editor.gen.record()
                ancestor = Record(
                    recordType: o.recordType, id: p.id, parent: o.parent, creation: o.creation,
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
                    Issue.record(
                        "seed \(seed) case \(i): three-way LWW merge is not symmetric\nbase: \(ancestor)\na: \(x)\nb: \(y)"
                    )
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
                dots.versionVector == a.versionVector.union(b.versionVector), dots == threeWay
            else {
                Issue.record(
                    "seed \(seed) case \(i): disjoint edits do not merge to their union\nbase: \(base)\na: \(a)\nb: \(b)\ndots: \(dots)\nthree-way: \(threeWay)"
                )
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
        return Record(
            recordType: "Note", id: Record.ID(name: "n", zone: zone), parent: nil,
            creation: Dot(node: nodeA, hlc: HLC(rawValue: 1)), versionVector: v,
            heads: v.entries.map { Record.Head(node: $0.node, isDeletion: false) }, fields: fields, extensions: [])
    }

    static func dot(_ n: NodeID, _ t: UInt64) -> Dot { Dot(node: n, hlc: HLC(rawValue: t)) }

    @Test func lastWriterWinsByHLCThenNode() throws {
        let base = Self.record(
            [Record.Field(name: "title", value: .string("old"), stamp: Self.dot(Self.nodeA, 1))], vv: [(Self.nodeA, 1)])
        let a = Self.record(
            [Record.Field(name: "title", value: .string("A"), stamp: Self.dot(Self.nodeA, 5))], vv: [(Self.nodeA, 5)])
        let b = Self.record(
            [Record.Field(name: "title", value: .string("B"), stamp: Self.dot(Self.nodeB, 7))],
            vv: [(Self.nodeA, 1), (Self.nodeB, 7)])
        #expect(try merge(a, b)["title"] == .string("B"))
        #expect(try merge(ancestor: base, local: a, remote: b)["title"] == .string("B"))
        #expect(try merge(ancestor: base, local: b, remote: a)["title"] == .string("B"))
        // Same HLC: the larger node ID wins.
        let b5 = Self.record(
            [Record.Field(name: "title", value: .string("B"), stamp: Self.dot(Self.nodeB, 5))],
            vv: [(Self.nodeA, 1), (Self.nodeB, 5)])
        #expect(try merge(a, b5)["title"] == .string("B"))
        // A write the other side has seen is superseded, even with a later clock.
        let late = Self.record(
            [Record.Field(name: "title", value: .string("late"), stamp: Self.dot(Self.nodeB, 9))], vv: [(Self.nodeB, 9)]
        )
        let after = Self.record(
            [Record.Field(name: "title", value: .string("after"), stamp: Self.dot(Self.nodeA, 3))],
            vv: [(Self.nodeA, 3), (Self.nodeB, 9)])
        #expect(try merge(late, after)["title"] == .string("after"))
        // A removal marker takes part like a value.
        let removed = Self.record(
            [Record.Field(name: "title", value: nil, stamp: Self.dot(Self.nodeB, 8))],
            vv: [(Self.nodeA, 1), (Self.nodeB, 8)])
        let m = try merge(a, removed)
        #expect(m["title"] == nil)
        #expect(m.heads.count == 2)
        // Neither side had seen the other's write: both stay, the later first.
        #expect(m.slots(for: "title").map(\.value) == [nil, .string("A")])
    }

    /// Three concurrent versions merge to one record whatever the order and grouping, also when
    /// one of them covers another's writes without holding their slots (a deletion, which keeps
    /// no fields, or a record created again over a purge horizon): the shape that made
    /// single-slot last-writer-wins merges depend on their order.
    @Test func mergesAreAssociative() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x3E26_0004)
        var editor = RecordEditor(seed: seed)
        let nodeC = NodeID(high: 0xC, low: 3)
        for i in 0..<Self.cases / 2 {
            let (base, a, b) = Self.concurrentEdits(&editor, disjoint: editor.chance(30))
            var c = editor.edited(base, stamp: editor.freshDot(after: base, node: nodeC), systemChanges: false)
            switch editor.int(3) {
            case 0:
                // C deleted the record after seeing B's version: no fields, C's deletion head.
                let seen = try merge(c, b)
                let d = editor.freshDot(after: seen, node: nodeC)
                var vv = seen.versionVector
                vv.advance(nodeC, to: d.hlc)
                c = Record(
                    recordType: seen.recordType, id: seen.id, parent: seen.parent, creation: seen.creation,
                    versionVector: vv, heads: [Record.Head(node: nodeC, isDeletion: true)], fields: [], extensions: [])
            case 1:
                // C created the record again over a horizon that covers B's writes.
                let d = editor.freshDot(after: b, node: nodeC)
                var vv = b.versionVector
                vv.advance(nodeC, to: d.hlc)
                c = Record(
                    recordType: base.recordType, id: base.id, parent: nil, creation: d, versionVector: vv,
                    heads: [Record.Head(node: nodeC, isDeletion: false)],
                    fields: [Record.Field(name: "again", value: .int64(Int64(i)), stamp: d)], extensions: [])
            default:
                break
            }
            let orders = [
                try merge(try merge(a, b), c), try merge(a, try merge(b, c)), try merge(try merge(a, c), b),
                try merge(try merge(c, b), a)
            ]
            for (k, m) in orders.enumerated() {
                do {
                    try m.validate()
                } catch {
                    Issue.record("seed \(seed) case \(i): order \(k) merged to an invalid record: \(error)\n\(m)")
                    return
                }
                guard m.encoded() == orders[0].encoded() else {
                    Issue.record(
                        "seed \(seed) case \(i): order \(k) differs\na: \(a)\nb: \(b)\nc: \(c)\nfirst: \(orders[0])\nthis: \(m)"
                    )
                    return
                }
            }
        }
    }

    /// The last-writer-wins shape that single-slot merges resolved by order: X holds
    /// `gamma@(A,178)`; Y's `gamma@(C,215)` is later; R covers `(C,215)` without holding it.
    @Test func aSupersessionWithoutSlotsGivesOneResult() throws {
        let a = Self.nodeA, c = NodeID(high: 0xC, low: 3), r = NodeID(high: 0xD, low: 4)
        func version(_ fields: [Record.Field], _ vv: [(NodeID, UInt64)], head: NodeID) -> Record {
            Record(
                recordType: "Note", id: Record.ID(name: "n", zone: Self.zone), parent: nil, creation: Self.dot(a, 1),
                versionVector: VersionVector(vv.map { ($0.0, HLC(rawValue: $0.1)) }),
                heads: [Record.Head(node: head, isDeletion: false)], fields: fields, extensions: [])
        }
        let x = version([Record.Field(name: "gamma", value: .int64(1), stamp: Self.dot(a, 178))], [(a, 178)], head: a)
        let y = version(
            [Record.Field(name: "gamma", value: .int64(2), stamp: Self.dot(c, 215))], [(a, 1), (c, 215)], head: c)
        let again = version(
            [Record.Field(name: "delta", value: .int64(3), stamp: Self.dot(r, 300))], [(a, 1), (c, 215), (r, 300)],
            head: r)
        let first = try merge(try merge(x, y), again), second = try merge(try merge(x, again), y)
        #expect(first == second)
        #expect(first["gamma"] == .int64(1))
        #expect(first.slots(for: "gamma").count == 1)
    }

    @Test func resolverSeesTheThreeRecords() throws {
        let base = Self.record(
            [
                Record.Field(name: "n", value: .int64(10), stamp: Self.dot(Self.nodeA, 1)),
                Record.Field(name: "x", value: .int64(0), stamp: Self.dot(Self.nodeA, 1))
            ], vv: [(Self.nodeA, 1)])
        let local = Self.record(
            [
                Record.Field(name: "n", value: .int64(13), stamp: Self.dot(Self.nodeA, 2)),
                Record.Field(name: "x", value: .int64(0), stamp: Self.dot(Self.nodeA, 1))
            ], vv: [(Self.nodeA, 2)])
        let remote = Self.record(
            [
                Record.Field(name: "n", value: .int64(15), stamp: Self.dot(Self.nodeB, 3)),
                Record.Field(name: "x", value: .int64(1), stamp: Self.dot(Self.nodeB, 3))
            ], vv: [(Self.nodeA, 1), (Self.nodeB, 3)])
        // A counter: apply both increments to the ancestor.
        let policy = MergePolicy.resolve { c in
            guard case .int64(let a)? = c.ancestorValue, case .int64(let l)? = c.localValue,
                case .int64(let r)? = c.remoteValue
            else { return .remote }
            return .value(.int64(l + r - a))
        }
        let m = try merge(ancestor: base, local: local, remote: remote, policy: policy)
        #expect(m["n"] == .int64(18))
        #expect(m.changedKeys == ["n"])
        #expect(m["x"] == .int64(1))  // changed on one side only: no conflict
        #expect(
            try merge(ancestor: base, local: local, remote: remote, policy: .resolve { _ in .local })["n"] == .int64(13)
        )
        #expect(try merge(ancestor: base, local: local, remote: remote)["n"] == .int64(15))
    }
}
