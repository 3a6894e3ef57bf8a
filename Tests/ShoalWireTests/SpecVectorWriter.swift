// SpecVectorWriter: regenerates Spec/vectors from the cases in SpecVectorCases (SHOAL_WRITE_VECTORS=1).

import Foundation
import Testing
@testable import ShoalWire
import ShoalWireJSON

/// Builds vector entries, checking each against the codec as it goes, and writes the files.
///
/// Run `SHOAL_WRITE_VECTORS=1 swift test --filter SpecVectorWriter` to regenerate
/// `Spec/vectors/*.json`; normal runs skip this and only read the files.
struct VectorBuilder {
    var entries: [String: [[String: Any]]] = [:]
    var problems: [String] = []

    mutating func add(_ file: String, _ entry: [String: Any]) { entries[file, default: []].append(entry) }

    mutating func value(_ name: String, _ v: FieldValue, zone: RecordZone.ID = SpecFixtures.zone) {
        let bytes = SpecCodec.encodeValue(v, zone: zone)
        do {
            let back = try SpecCodec.decodeValue(bytes, zone: zone)
            if back != v { problems.append("value \(name): round trip differs") }
        } catch { problems.append("value \(name): \(error)") }
        add(
            "values.json",
            [
                "name": name, "kind": "value", "zone": VectorJSON.zone(zone), "hex": Hex.string(bytes),
                "json": VectorJSON.value(v)
            ])
    }

    mutating func record(_ name: String, _ r: Record) {
        let bytes = r.encoded()
        do {
            try r.validate()
            let back = try Record(decoding: bytes)
            if back != r || back.encoded() != bytes { problems.append("record \(name): round trip differs") }
        } catch { problems.append("record \(name): \(error)") }
        add(
            "records.json",
            [
                "name": name, "kind": "record", "hex": Hex.string(bytes), "json": VectorJSON.record(r),
                "fingerprint": Int(r.versionFingerprint)
            ])
    }

    mutating func delta(_ name: String, _ d: RecordDelta, zone: RecordZone.ID = SpecFixtures.zone) {
        let bytes = d.encoded(zone: zone)
        do {
            let back = try RecordDelta(decoding: bytes, zone: zone)
            if back != d { problems.append("delta \(name): round trip differs") }
        } catch { problems.append("delta \(name): \(error)") }
        add(
            "deltas.json",
            [
                "name": name, "kind": "delta", "zone": VectorJSON.zone(zone), "hex": Hex.string(bytes),
                "json": VectorJSON.delta(d)
            ])
    }

    mutating func tombstone(_ name: String, _ t: Tombstone) {
        let bytes = t.encoded()
        do {
            if try Tombstone(decoding: bytes) != t { problems.append("tombstone \(name): round trip differs") }
        } catch { problems.append("tombstone \(name): \(error)") }
        add(
            "tombstones.json",
            ["name": name, "kind": "tombstone", "hex": Hex.string(bytes), "json": VectorJSON.tombstone(t)])
    }

    mutating func token(_ name: String, _ c: ChangeToken.Contents) {
        let bytes = ChangeToken(c).bytes
        do {
            if try ChangeToken(bytes: bytes).contents() != c { problems.append("token \(name): round trip differs") }
        } catch { problems.append("token \(name): \(error)") }
        add("tokens.json", ["name": name, "kind": "token", "hex": Hex.string(bytes), "json": VectorJSON.token(c)])
    }

    /// An invalid vector: decoding must fail with `code`; the offset recorded is the decoder's, and
    /// must equal `offset` when the case states one.
    mutating func invalid(
        _ name: String, _ kind: String, _ bytes: [UInt8], _ code: WireError.Code, at offset: Int? = nil,
        zone: RecordZone.ID? = nil
    ) {
        let z = zone ?? ((kind == "value" || kind == "delta") ? SpecFixtures.zone : nil)
        var entry: [String: Any] = ["name": name, "kind": kind, "hex": Hex.string(bytes), "error": code.name]
        if let z { entry["zone"] = VectorJSON.zone(z) }
        do {
            guard let e = try SpecCodec.error(decoding: bytes, kind: kind, zone: z) else {
                problems.append("invalid \(name): decoded without error")
                return
            }
            if e.code != code { problems.append("invalid \(name): expected \(code.name), got \(e)") }
            if let offset, offset != e.offset {
                problems.append("invalid \(name): expected offset \(offset), got \(e)")
            }
            entry["offset"] = e.offset
        } catch { problems.append("invalid \(name): \(error)") }
        add("invalid.json", entry)
    }

    func write(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (file, list) in entries {
            let data = try JSONSerialization.data(
                withJSONObject: list, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            try (data + Data("\n".utf8)).write(to: directory.appendingPathComponent(file))
        }
    }
}

@Suite struct SpecVectorWriter {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SHOAL_WRITE_VECTORS"] == "1"))
    func writeVectors() throws {
        var b = VectorBuilder()
        SpecVectorCases.values(&b)
        SpecVectorCases.records(&b)
        SpecVectorCases.deltas(&b)
        SpecVectorCases.tombstones(&b)
        SpecVectorCases.tokens(&b)
        SpecVectorCases.invalid(&b)
        for p in b.problems { Issue.record(Comment(rawValue: p)) }
        for (file, list) in b.entries {
            #expect(Set(list.compactMap { $0["name"] as? String }).count == list.count, "\(file) repeats a name")
        }
        guard b.problems.isEmpty else { return }
        try b.write(to: SpecVectors.directory)
    }
}
