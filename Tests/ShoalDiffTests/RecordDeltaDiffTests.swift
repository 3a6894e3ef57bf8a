// RecordDeltaDiffTests: apply(diff(a, b), a) == b, empty self-diffs and codec round trips, on seeded random records.

import Testing
import ShoalDiff
import ShoalSamples
@testable import ShoalWire

@Suite struct RecordDeltaDiffTests {
    static let cases = 10_000

    @Test func diffOfARecordWithItselfIsEmpty() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xD1FF_0002)
        var gen = RandomRecords(seed: seed)
        for i in 0..<Self.cases {
            let a = gen.record()
            let copy = try Record(decoding: a.encoded())
            let same = diff(a, a), decoded = diff(a, copy)
            guard same.isEmpty, decoded.isEmpty, same.baseTag == a.versionFingerprint else {
                Issue.record("seed \(seed) case \(i): diff(a, a) is not empty: \(same) / \(decoded)\n\(a)")
                return
            }
            guard try apply(same, to: a) == a else {
                Issue.record("seed \(seed) case \(i): applying an empty delta changed the record")
                return
            }
        }
    }

    /// The diff compares slots by their stored bytes, several at a time: flipping any one byte of
    /// a slot's value or stamp, in any slot of a run (first, middle, last, odd tail), is one change.
    @Test func aChangeInAnyByteOfAValueOrStampIsSeen() throws {
        let node = NodeID(high: 0x0102_0304_0506_0708, low: 0x1112_1314_1516_1718)
        let dot = Dot(node: node, hlc: HLC(rawValue: 0x2122_2324_2526_2728))
        let value: Int64 = 0x3132_3334_3536_3738
        func record(_ fields: [Record.Field]) -> Record {
            Record(
                recordType: "T", id: Record.ID(name: "r", zone: RecordZone.ID(name: "z")), parent: nil, creation: dot,
                versionVector: VersionVector(), heads: [], fields: fields, extensions: [])
        }
        let names = (0..<33).map { "f" + String($0 + 10) }
        let base = names.map { Record.Field(name: $0, value: .int64(value), stamp: dot) }
        let a = record(base)
        for i in [0, 1, 2, 16, 31, 32] {
            var variants: [Record.Field] = [
                Record.Field(name: names[i], value: .int64(value), stamp: nil),
                Record.Field(name: names[i], value: nil, stamp: dot)
            ]
            for k in 0..<8 {
                let bit = UInt64(1) << (8 * k)
                variants.append(Record.Field(name: names[i], value: .int64(value ^ Int64(bitPattern: bit)), stamp: dot))
                variants.append(
                    Record.Field(
                        name: names[i], value: .int64(value),
                        stamp: Dot(node: NodeID(high: node.high ^ bit, low: node.low), hlc: dot.hlc)))
                variants.append(
                    Record.Field(
                        name: names[i], value: .int64(value),
                        stamp: Dot(node: NodeID(high: node.high, low: node.low ^ bit), hlc: dot.hlc)))
                variants.append(
                    Record.Field(
                        name: names[i], value: .int64(value),
                        stamp: Dot(node: node, hlc: HLC(rawValue: dot.hlc.rawValue ^ bit))))
            }
            for v in variants {
                var fields = base
                fields[i] = v
                let b = record(fields)
                let d = diff(a, b)
                #expect(d.operations == [.set(v)], "slot \(i): \(v)")
                #expect(try apply(d, to: a) == b)
            }
        }
    }

    /// apply(diff(a, b), a) == b, and the delta round-trips through the codec (one loop, both properties).
    @Test func applyingTheDiffGivesTheNewVersionAndRoundTrips() {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xD1FF_0003)
        var editor = RecordEditor(seed: seed)
        var patches = 0, splices = 0
        for i in 0..<Self.cases {
            var a = editor.gen.record()
            if editor.chance(40) { a = editor.withLongValue(a) }
            let stamp = editor.chance(50) ? editor.freshDot(after: a) : nil
            let b = editor.edited(a, stamp: stamp)
            let d = diff(a, b, options: DiffOptions(bytePatchThreshold: editor.chance(50) ? 4096 : 16))
            do {
                let applied = try apply(d, to: a)
                guard applied == b, applied.encoded() == b.encoded() else {
                    Issue.record("seed \(seed) case \(i): apply(diff(a, b), a) != b\na: \(a)\nb: \(b)\ndelta: \(d)")
                    return
                }
            } catch {
                Issue.record("seed \(seed) case \(i): apply failed: \(error)\na: \(a)\nb: \(b)\ndelta: \(d)")
                return
            }
            let zone = a.id.zone
            let bytes = d.encoded(zone: zone)
            do {
                let back = try RecordDelta(decoding: bytes, zone: zone)
                guard back == d, back.encoded(zone: zone) == bytes else {
                    Issue.record("seed \(seed) case \(i): delta round trip differs\n\(d)\n\(back)")
                    return
                }
                guard try apply(back, to: a) == b else {
                    Issue.record("seed \(seed) case \(i): decoded delta does not rebuild b")
                    return
                }
            } catch {
                Issue.record("seed \(seed) case \(i): \(error)\n\(d)")
                return
            }
            for op in d.operations {
                if case .patch = op { patches += 1 }
                if case .splice = op { splices += 1 }
            }
        }
        #expect(patches > 100 && splices > 100, "seed \(seed): \(patches) patches, \(splices) splices")
    }

    static let zone = RecordZone.ID(name: "z")
    static let node = NodeID(high: 1, low: 1)

    static func note(_ fields: [String: FieldValue]) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: "n", zone: zone))
        for (k, v) in fields { r[k] = v }
        return Stamping.saved(r, by: node, at: HLC(rawValue: 1 << 20))
    }

    @Test func listEditsBecomeSplices() throws {
        let old = Self.note(["tags": .list(.string((0..<50).map { "tag\($0)" }))])
        var new = old
        var tags = (0..<50).map { "tag\($0)" }
        tags.insert("new", at: 10)
        tags.remove(at: 40)
        new["tags"] = .list(.string(tags))
        let d = diff(old, new)
        guard case .splice(let name, nil, let edits)? = d.operations.first else {
            Issue.record("expected a splice, got \(d)")
            return
        }
        #expect(name == "tags")
        #expect(
            edits == [
                RecordDelta.ListSplice(offset: 10, deleteCount: 0, insert: .string(["new"])),
                RecordDelta.ListSplice(offset: 39, deleteCount: 1, insert: .string([]))
            ])
        let bytes = d.encoded(zone: Self.zone)
        #expect(try RecordDelta(decoding: bytes, zone: Self.zone) == d)
        #expect(try apply(d, to: old) == new)
    }

    @Test func longValueEditsBecomeBytePatches() throws {
        let text = String(repeating: "the quick sync ", count: 400)
        let old = Self.note(["text": .string(text), "blob": .bytes([UInt8](repeating: 7, count: 5000))])
        var new = old
        var t = Array(text.utf8)
        t.replaceSubrange(3000..<3005, with: Array("fish🐟".utf8))
        new["text"] = .string(String(decoding: t, as: UTF8.self))
        var blob = [UInt8](repeating: 7, count: 5000)
        blob[4000] = 9
        new["blob"] = .bytes(blob)
        let d = diff(old, new)
        #expect(
            d.operations == [
                .patch(
                    name: "blob", stamp: nil, edits: [RecordDelta.BytePatch(offset: 4000, deleteCount: 1, insert: [9])]),
                .patch(
                    name: "text", stamp: nil,
                    edits: [RecordDelta.BytePatch(offset: 3000, deleteCount: 5, insert: Array("fish🐟".utf8))])
            ])
        let bytes = d.encoded(zone: Self.zone)
        #expect(bytes.count < 40)
        #expect(try RecordDelta(decoding: bytes, zone: Self.zone) == d)
        #expect(try apply(d, to: old) == new)
        // Below the threshold the value is resent whole.
        #expect(
            diff(old, new, options: DiffOptions(bytePatchThreshold: 1 << 20)).operations.allSatisfy {
                if case .set = $0 { true } else { false }
            })
    }

    @Test func oneChangedFieldCostsLittleMoreThanItsValue() {
        var fields = [String: FieldValue]()
        for i in 0..<32 { fields["f\(i)"] = .string("value number \(i)") }
        let old = Self.note(fields)
        var new = old
        new["f7"] = .string("a new value")
        let d = diff(old, new)
        #expect(d.system == nil && d.operations.count == 1)
        // 1 flags + 4 base tag + 1 count + 3 name + 1 tag; the value is 12 bytes with its length.
        #expect(d.encoded(zone: Self.zone).count <= 12 + 16)
    }

    @Test func systemFieldsTravelOnlyWhenTheyChange() throws {
        let old = Self.note(["a": .int64(1)])
        var new = old
        new.recordType = "Memo"
        let d = diff(old, new)
        #expect(d.operations.isEmpty && d.system?.recordType == "Memo")
        #expect(try apply(d, to: old) == new)
        var edit = old
        edit["a"] = .int64(2)
        #expect(diff(old, edit).system == nil)
    }
}
