// RecordEditor: seeded random edits of a record, as a user or a peer would make them, for property tests.

import ShoalSamples
@testable import ShoalWire

/// Makes random edits of records: changes, removals and additions of fields, element edits of
/// lists, edits in the middle of long strings and bytes, dropped slots and system-field changes.
struct RecordEditor {
    var gen: RandomRecords

    init(seed: UInt64) { gen = RandomRecords(seed: seed) }

    mutating func int(_ n: Int) -> Int { n <= 0 ? 0 : Int(gen.rng.next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { int(100) < percent }

    /// A fresh write by a random node, later than everything `r` has seen.
    mutating func freshDot(after r: Record, node: NodeID? = nil) -> Dot {
        let top = r.versionVector.entries.map(\.hlc.rawValue).max() ?? 0
        let n = node ?? (chance(70) ? NotesCorpus.nodes[int(3)] : NodeID(high: gen.rng.next(), low: gen.rng.next()))
        return Dot(node: n, hlc: HLC(rawValue: top &+ 1 &+ UInt64(int(1000))))
    }

    /// 8 KiB of random bytes that long values are cut from (generating them per case is slow in debug).
    static let noise: [UInt8] = {
        var rng = SplitMix64(seed: 0xB10B)
        return (0..<8192).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }()

    /// A long text or bytes value, so byte-range patches are exercised.
    mutating func longValue() -> FieldValue {
        if chance(50) {
            return .string(String(repeating: "Zürich fish 🐟 ", count: 300 + int(200)))
        }
        let start = int(3000)
        return .bytes(Array(Self.noise[start..<(start + 5000 + int(190))]))
    }

    /// `value` edited in place: list elements or a byte range in the middle; nil if not editable.
    mutating func editedInPlace(_ value: FieldValue, zone: RecordZone.ID) -> FieldValue? {
        switch value {
        case .list(let l):
            var e = l.elements
            for _ in 0..<(1 + int(3)) {
                switch int(3) {
                case 0: e.insert(gen.scalar(l.elementKind, zone: zone), at: int(e.count + 1))
                case 1: if !e.isEmpty { e.remove(at: int(e.count)) }
                default: if !e.isEmpty { e[int(e.count)] = gen.scalar(l.elementKind, zone: zone) }
                }
            }
            return ListValue(e, kind: l.elementKind).map(FieldValue.list)
        case .string(let s):
            // Replace a few bytes between two scalar boundaries.
            var u = Array(s.utf8)
            func boundary(_ i: Int) -> Int {
                var i = i
                while i < u.count && u[i] & 0xC0 == 0x80 { i += 1 }
                return i
            }
            let at = boundary(int(u.count + 1))
            let end = boundary(min(u.count, at + int(20)))
            u.replaceSubrange(at..<end, with: Array(gen.string(max: 4, long: false).utf8))
            return .string(String(decoding: u, as: UTF8.self))
        case .bytes(var b):
            let at = int(b.count + 1)
            let cut = min(int(50), b.count - at)
            b.replaceSubrange(
                at..<(at + cut), with: (0..<int(40)).map { _ in UInt8(truncatingIfNeeded: gen.rng.next()) })
            return .bytes(b)
        default:
            return nil
        }
    }

    /// `r` with 1–5 random field edits, stamped with `stamp` (nil: unsaved edits). When stamped,
    /// the version vector advances to the stamp and the writer becomes the only head.
    mutating func edited(_ r: Record, stamp: Dot?, names: Set<String>? = nil, systemChanges: Bool = true) -> Record {
        var fields = r.fields
        let zone = r.id.zone
        let count = 1 + int(5)
        for _ in 0..<count {
            let candidates =
                names.map { n in fields.indices.filter { n.contains(fields[$0].name) } } ?? Array(fields.indices)
            let op = int(7)
            if op == 0 || candidates.isEmpty {
                // Add a field.
                let name = names.map { n in n.sorted()[int(n.count)] } ?? gen.identifier()
                let value = chance(20) ? longValue() : gen.value(zone: zone)
                set(&fields, Record.Field(name: name, value: value, stamp: stamp))
                continue
            }
            let i = candidates[int(candidates.count)]
            switch op {
            case 1:
                fields[i] = Record.Field(name: fields[i].name, value: nil, stamp: stamp)
            case 2 where stamp == nil && chance(30):
                fields.remove(at: i)
            case 3, 4:
                if let v = fields[i].value, let e = editedInPlace(v, zone: zone) {
                    fields[i] = Record.Field(name: fields[i].name, value: e, stamp: stamp)
                } else {
                    fields[i] = Record.Field(name: fields[i].name, value: gen.value(zone: zone), stamp: stamp)
                }
            default:
                fields[i] = Record.Field(name: fields[i].name, value: gen.value(zone: zone), stamp: stamp)
            }
        }
        // A write replaces all of its field's concurrent slots.
        var written = [Record.Field]()
        for f in fields {
            if let last = written.last, UTF8Order.equal(last.name, f.name) {
                if f.stamp == stamp { written[written.count - 1] = f } else if last.stamp != stamp { written.append(f) }
            } else {
                written.append(f)
            }
        }
        fields = written
        var out = Record(
            recordType: r.recordType, id: r.id, parent: r.parent, creation: r.creation,
            versionVector: r.versionVector, heads: r.heads, fields: fields, extensions: r.extensions)
        if let stamp {
            out.versionVector.advance(stamp.node, to: stamp.hlc)
            out.heads = [Record.Head(node: stamp.node, isDeletion: false)]
            if out.creation == nil { out.creation = stamp }
        }
        if systemChanges && chance(15) { out.recordType = gen.identifier() }
        if systemChanges && chance(10) {
            out.parent = chance(50) ? nil : Reference(recordID: Record.ID(name: gen.name(), zone: zone))
        }
        return out
    }

    /// Sets or inserts slot `f` by name.
    func set(_ fields: inout [Record.Field], _ f: Record.Field) {
        var lo = 0, hi = fields.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let c = UTF8Order.compare(fields[mid].name, f.name)
            if c == 0 { fields[mid] = f; return }
            if c < 0 { lo = mid + 1 } else { hi = mid }
        }
        fields.insert(f, at: lo)
    }

    /// `r` with a long string or bytes field added (unsaved), so later edits can patch it.
    mutating func withLongValue(_ r: Record) -> Record {
        var fields = r.fields
        set(&fields, Record.Field(name: "long" + String(int(3)), value: longValue(), stamp: r.fields.first?.stamp))
        return Record(
            recordType: r.recordType, id: r.id, parent: r.parent, creation: r.creation,
            versionVector: r.versionVector, heads: r.heads, fields: fields, extensions: r.extensions)
    }
}
