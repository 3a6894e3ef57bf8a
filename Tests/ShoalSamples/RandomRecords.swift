// RandomRecords: arbitrary valid records (every type, edge values, stamps) for property tests and fuzz seeds.

package import ShoalWire

/// Generates arbitrary valid records from a seeded generator, covering every field type and the
/// edge values the Spec calls out: empty and very long strings, non-ASCII text, NaN, −0.0,
/// infinities, Int64 extremes, empty lists, references across zones, optional location parts,
/// removed-field markers, several writers and concurrent heads, parents and unknown extensions.
package struct RandomRecords {
    /// The generator.
    package var rng: SplitMix64

    /// Creates a generator from a seed.
    package init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    mutating func int(_ n: Int) -> Int { n <= 0 ? 0 : Int(rng.next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { int(100) < percent }

    static let pieces = ["a", "z", "note", "Zürich", "日本語", "🐟", "é", " ", "\u{0}", "ß", "x_y", "Ω", "\n", "naïve"]

    /// A random string of up to `max` pieces (possibly empty).
    package mutating func string(max: Int = 6, long: Bool = true) -> String {
        let n = int(max + 1)
        var s = ""
        for _ in 0..<n { s += RandomRecords.pieces[int(RandomRecords.pieces.count)] }
        if long && chance(3) { s += String(repeating: "long ", count: 40 + int(200)) }
        return s
    }

    /// A random non-empty name.
    package mutating func name() -> String {
        let s = string(max: 3, long: false)
        return s.isEmpty ? "n\(int(1000))" : s
    }

    /// A random identifier (record type or field name).
    package mutating func identifier() -> String {
        let first = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        let rest = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
        var s = String(first[int(first.count)])
        for _ in 0..<int(12) { s.append(rest[int(rest.count)]) }
        return s
    }

    mutating func int64() -> Int64 {
        switch int(6) {
        case 0: return .min
        case 1: return .max
        case 2: return 0
        case 3: return -1
        case 4: return Int64(int(300)) - 150
        default: return Int64(bitPattern: rng.next())
        }
    }

    mutating func double() -> Double {
        switch int(9) {
        case 0: return .nan
        case 1: return -0.0
        case 2: return .infinity
        case 3: return -.infinity
        case 4: return .leastNonzeroMagnitude
        case 5: return .greatestFiniteMagnitude
        case 6: return 0
        default: return Double(bitPattern: rng.next() & 0x7FEF_FFFF_FFFF_FFFF | (rng.next() & 0x8000_0000_0000_0000))
        }
    }

    mutating func bytes() -> [UInt8] {
        (0..<int(chance(5) ? 3000 : 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    mutating func timestamp() -> Timestamp {
        Timestamp(millisecondsSince1970: chance(10) ? int64() : Int64(int(4_000_000_000_000)) - 100_000_000_000)
    }

    mutating func zone(near z: RecordZone.ID) -> RecordZone.ID {
        chance(80) ? z : RecordZone.ID(name: name(), owner: chance(50) ? RecordZone.ID.defaultOwnerName : name())
    }

    mutating func reference(zone: RecordZone.ID) -> Reference {
        Reference(
            recordID: Record.ID(name: name(), zone: self.zone(near: zone)), action: chance(50) ? .none : .deleteSelf)
    }

    mutating func asset() -> Asset {
        let h = ContentHash(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        return Asset(
            hash: h ?? ContentHash(bytes: [UInt8](repeating: 0, count: 32))!,
            size: chance(10) ? Int64.max : Int64(int(1 << 30)))
    }

    mutating func location() -> Location {
        Location(
            latitude: double(), longitude: double(),
            altitude: chance(50) ? double() : nil, horizontalAccuracy: chance(50) ? double() : nil,
            verticalAccuracy: chance(50) ? double() : nil, course: chance(50) ? double() : nil,
            speed: chance(50) ? double() : nil, timestamp: chance(50) ? timestamp() : nil)
    }

    /// A random scalar of `kind`.
    package mutating func scalar(_ kind: FieldValue.Kind, zone: RecordZone.ID) -> FieldValue {
        switch kind {
        case .string: return .string(string())
        case .int64: return .int64(int64())
        case .double: return .double(double())
        case .bool: return .bool(chance(50))
        case .bytes: return .bytes(bytes())
        case .date: return .date(timestamp())
        case .reference: return .reference(reference(zone: zone))
        case .asset: return .asset(asset())
        case .location: return .location(location())
        }
    }

    /// A random value: a scalar, or a list of up to 8 scalars of one kind.
    package mutating func value(zone: RecordZone.ID) -> FieldValue {
        let kind = FieldValue.Kind.allCases[int(FieldValue.Kind.allCases.count)]
        if chance(25) {
            let n = int(9)
            let elements = (0..<n).map { _ in scalar(kind, zone: zone) }
            return .list(ListValue(elements, kind: kind) ?? .string([]))
        }
        return scalar(kind, zone: zone)
    }

    mutating func node() -> NodeID {
        // A few well-known nodes so vectors share entries, plus occasional fresh ones.
        chance(70) ? NotesCorpus.nodes[int(3)] : NodeID.random(using: &rng)
    }

    /// A random record: unsaved (no stamps) or saved by up to four nodes.
    package mutating func record() -> Record {
        let zone = RecordZone.ID(name: name(), owner: chance(70) ? RecordZone.ID.defaultOwnerName : name())
        var r = Record(recordType: identifier(), id: Record.ID(name: name(), zone: zone))
        var names = Set<String>()
        for _ in 0..<int(chance(3) ? 200 : 12) { names.insert(identifier()) }
        for n in names { r[n] = value(zone: zone) }
        if chance(20) { r.parent = Reference(recordID: Record.ID(name: name(), zone: self.zone(near: zone))) }
        if chance(30) { return r }
        return saved(r)
    }

    /// `r` with replication metadata: a version vector of 1–4 nodes, stamps, heads, maybe markers.
    package mutating func saved(_ r: Record) -> Record {
        let writers = (0..<(1 + int(4))).map { _ in node() }
        var vv = VersionVector()
        for w in writers { vv.advance(w, to: HLC(rawValue: 1 + rng.next() % (1 << 60))) }
        func stamp() -> Dot {
            let e = vv.entries[int(vv.entries.count)]
            return Dot(
                node: e.node, hlc: HLC(rawValue: e.hlc.rawValue - (chance(50) ? 0 : rng.next() % e.hlc.rawValue)))
        }
        var fields = r.fields.map { Record.Field(name: $0.name, value: chance(10) ? nil : $0.value, stamp: stamp()) }
        if chance(10), let i = fields.indices.randomElement(using: &rng) { fields[i].stamp = nil }
        var heads = [Record.Head]()
        for e in vv.entries where chance(40) { heads.append(Record.Head(node: e.node, isDeletion: chance(30))) }
        if heads.isEmpty { heads = [Record.Head(node: vv.entries[0].node, isDeletion: chance(10))] }
        var extensions = [Record.Extension]()
        if chance(5) {
            var tag: UInt64 = 1
            for _ in 0..<(1 + int(3)) {
                extensions.append(Record.Extension(tag: tag, bytes: bytes()))
                tag += 2 * UInt64(1 + int(1000))
            }
        }
        return Record(
            recordType: r.recordType, id: r.id, parent: r.parent, creation: stamp(), versionVector: vv,
            heads: heads, fields: fields, extensions: extensions)
    }
}
