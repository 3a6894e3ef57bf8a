// SpecVectorTests: every vector in Spec/vectors, decoded and re-encoded (valid) or rejected (invalid).

import Foundation
import ShoalSamples
import Testing
@testable import ShoalWire
import ShoalWireJSON

/// One entry of a `Spec/vectors` file.
struct SpecVector: Sendable, CustomTestStringConvertible {
    /// The file it came from, e.g. `records.json`.
    let file: String
    let name: String
    /// `value`, `record`, `delta`, `tombstone` or `token`.
    let kind: String
    let bytes: [UInt8]
    /// The containing record's zone (value and delta vectors).
    let zone: RecordZone.ID?
    /// Valid vectors: the decoded value's JSON, re-serialised (decoded again by each test).
    let json: String?
    /// Invalid vectors: the error code name and byte offset.
    let error: String?
    let offset: Int?
    /// Record vectors: the version vector's fingerprint (wire-format §7.1), the base tag of a
    /// delta computed from the record.
    let fingerprint: Int?

    var testDescription: String { "\(file): \(name)" }

    func jsonObject() throws -> Any {
        guard let json else { throw VectorJSONError("\(name): no json member") }
        return try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
    }
}

/// Locates, loads and (under `SHOAL_WRITE_VECTORS=1`) writes the vector files.
enum SpecVectors {
    /// `Spec/vectors`, found from this file's path (`Tests/ShoalWireTests/…`).
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Spec").appendingPathComponent("vectors")

    static let validFiles = ["values.json", "records.json", "deltas.json", "tombstones.json", "tokens.json"]
    static let invalidFile = "invalid.json"

    static func load(_ file: String) throws -> [SpecVector] {
        let data = try Data(contentsOf: directory.appendingPathComponent(file))
        let entries = try VectorJSON.array(try JSONSerialization.jsonObject(with: data), file)
        return try entries.enumerated().map { i, e in
            let o = try VectorJSON.object(e, "\(file)[\(i)]")
            let name = try VectorJSON.string(o["name"], "\(file)[\(i)].name")
            let json: String? = try VectorJSON.optional(o["json"]).map {
                String(
                    decoding: try JSONSerialization.data(withJSONObject: $0, options: [.fragmentsAllowed]),
                    as: UTF8.self)
            }
            return SpecVector(
                file: file, name: name, kind: try VectorJSON.string(o["kind"], "\(name).kind"),
                bytes: try VectorJSON.bytes(o["hex"], "\(name).hex"),
                zone: try VectorJSON.optional(o["zone"]).map { try VectorJSON.zone($0, "\(name).zone") },
                json: json,
                error: try VectorJSON.optional(o["error"]).map { try VectorJSON.string($0, "\(name).error") },
                offset: try VectorJSON.optional(o["offset"]).map { try VectorJSON.int($0, "\(name).offset") },
                fingerprint: try VectorJSON.optional(o["fingerprint"]).map {
                    try VectorJSON.int($0, "\(name).fingerprint")
                })
        }
    }

    static let valid: [SpecVector] = validFiles.flatMap { (try? load($0)) ?? [] }
    static let invalid: [SpecVector] = (try? load(invalidFile)) ?? []
}

/// Decoders and encoders as the vectors name them.
enum SpecCodec {
    /// A field value as a vector holds it: the slot's type tag (stamped bit clear), then the payload.
    static func decodeValue(_ bytes: [UInt8], zone: RecordZone.ID, limits: WireLimits = .default) throws(WireError)
        -> FieldValue
    {
        let result: Result<FieldValue, WireError> = bytes.withUnsafeBytes { raw in
            var r = WireReader(raw, limits: limits)
            do throws(WireError) {
                let tag = try r.readByte("value type tag")
                let v = try FieldValue.decodePayload(tag: tag, at: 0, from: &r, zone: zone)
                try r.expectEnd("the value")
                return .success(v)
            } catch { return .failure(error) }
        }
        return try result.get()
    }

    static func encodeValue(_ v: FieldValue, zone: RecordZone.ID) -> [UInt8] {
        WireWriter.encode(size: 1 + v.payloadSize(zone: zone)) { w in
            w.writeByte(v.tag)
            v.encodePayload(into: &w, zone: zone)
        }
    }

    /// The error decoding `bytes` as `kind` yields, or nil if they decode.
    static func error(decoding bytes: [UInt8], kind: String, zone: RecordZone.ID?) throws -> WireError? {
        guard ["value", "record", "delta", "tombstone", "token"].contains(kind) else {
            throw VectorJSONError("unknown kind \(kind)")
        }
        do throws(WireError) {
            switch kind {
            case "value": _ = try decodeValue(bytes, zone: try zoneOrThrow(zone))
            case "record": _ = try Record(decoding: bytes)
            case "delta": _ = try RecordDelta(decoding: bytes, zone: try zoneOrThrow(zone))
            case "tombstone": _ = try Tombstone(decoding: bytes)
            default: _ = try ChangeToken(bytes: bytes).contents()
            }
        } catch {
            return error
        }
        return nil
    }

    static func zoneOrThrow(_ zone: RecordZone.ID?) throws(WireError) -> RecordZone.ID {
        guard let zone else { throw WireError(.invalidValue, at: -1, "vector has no zone member") }
        return zone
    }
}

@Suite struct SpecVectorTests {
    @Test func vectorFilesLoad() throws {
        for file in SpecVectors.validFiles + [SpecVectors.invalidFile] {
            let vectors = try SpecVectors.load(file)
            #expect(!vectors.isEmpty, "\(file) has no vectors")
            #expect(Set(vectors.map(\.name)).count == vectors.count, "\(file) repeats a vector name")
        }
        #expect(SpecVectors.valid.count > 100)
        #expect(SpecVectors.invalid.count > 50)
    }

    @Test(arguments: SpecVectors.valid)
    func validVectorDecodesAndEncodes(_ v: SpecVector) throws {
        let json = try v.jsonObject()
        switch v.kind {
        case "value":
            let zone = try #require(v.zone, "value vectors name their zone")
            let expected = try VectorJSON.value(json, "json")
            #expect(try SpecCodec.decodeValue(v.bytes, zone: zone) == expected)
            #expect(Hex.string(SpecCodec.encodeValue(expected, zone: zone)) == Hex.string(v.bytes))
        case "record":
            let expected = try VectorJSON.record(json)
            let decoded = try Record(decoding: v.bytes)
            #expect(decoded == expected)
            #expect(Hex.string(expected.encoded()) == Hex.string(v.bytes))
            let fingerprint = try #require(v.fingerprint, "record vectors state their version fingerprint")
            #expect(Int(decoded.versionFingerprint) == fingerprint)
        case "delta":
            let zone = try #require(v.zone, "delta vectors name their zone")
            let expected = try VectorJSON.delta(json)
            #expect(try RecordDelta(decoding: v.bytes, zone: zone) == expected)
            #expect(Hex.string(expected.encoded(zone: zone)) == Hex.string(v.bytes))
        case "tombstone":
            let expected = try VectorJSON.tombstone(json)
            #expect(try Tombstone(decoding: v.bytes) == expected)
            #expect(Hex.string(expected.encoded()) == Hex.string(v.bytes))
        case "token":
            let (expected, text) = try VectorJSON.token(json)
            #expect(try ChangeToken(bytes: v.bytes).contents() == expected)
            #expect(Hex.string(ChangeToken(expected).bytes) == Hex.string(v.bytes))
            #expect(ChangeToken(bytes: v.bytes).description == text)
            #expect(ChangeToken(text: text)?.bytes == v.bytes)
        default:
            Issue.record("unknown kind \(v.kind)")
        }
    }

    @Test(arguments: SpecVectors.invalid)
    func invalidVectorIsRejected(_ v: SpecVector) throws {
        let expectedCode = try #require(v.error)
        let expectedOffset = try #require(v.offset)
        let error = try SpecCodec.error(decoding: v.bytes, kind: v.kind, zone: v.zone)
        let e = try #require(error, "decoded without error")
        #expect(e.code.name == expectedCode, "\(e)")
        #expect(e.offset == expectedOffset, "\(e)")
    }

    /// Codes only the frame layer produces; every other code needs an invalid vector here.
    static let frameOnlyCodes: Set = ["checksum_mismatch", "decompression_failed", "unknown_dictionary"]

    @Test func everyDecoderErrorCodeHasAnInvalidVector() throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/ShoalWire/Errors/WireError.swift")
        let text = try String(contentsOf: source, encoding: .utf8)
        var defined = Set<String>()
        var rest = Substring(text)
        while let r = rest.range(of: "= Code(\"") {
            let tail = rest[r.upperBound...]
            guard let end = tail.firstIndex(of: "\"") else { break }
            defined.insert(String(tail[..<end]))
            rest = tail[end...]
        }
        #expect(defined.count >= 16, "could not read the codes from WireError.swift")
        #expect(Self.frameOnlyCodes.isSubset(of: defined), "a frame-only code was renamed or removed")
        let covered = Set(SpecVectors.invalid.compactMap(\.error))
        for code in defined.subtracting(Self.frameOnlyCodes).sorted() {
            #expect(covered.contains(code), "no invalid vector produces \(code)")
        }
        #expect(covered.isSubset(of: defined), "an invalid vector names an undefined code")
    }

    /// Every invalid vector's kind has at least one valid vector too, and kinds are the documented five.
    @Test func vectorKindsAreDocumented() {
        let kinds: Set = ["value", "record", "delta", "tombstone", "token"]
        #expect(Set(SpecVectors.valid.map(\.kind)) == kinds)
        #expect(Set(SpecVectors.invalid.map(\.kind)) == kinds)
    }
}

/// Mutations of the valid vectors: every decoder returns a value or an error, and whatever it
/// accepts it re-encodes to the same bytes (one encoding per value).
@Suite struct SpecVectorMutationTests {
    @Test func mutatedVectorsDecodeCanonicallyOrFail() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5EED_0003)
        var rng = SplitMix64(seed: seed)
        let vectors = SpecVectors.valid
        try #require(!vectors.isEmpty)
        for i in 0..<20_000 {
            let v = vectors[Int(rng.next() % UInt64(vectors.count))]
            var bytes = v.bytes
            switch rng.next() % 4 {
            case 0 where !bytes.isEmpty: bytes[Int(rng.next() % UInt64(bytes.count))] ^= UInt8(1 << (rng.next() % 8))
            case 1 where !bytes.isEmpty:
                bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
            case 2: bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count + 1))))
            default: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: Int(rng.next() % UInt64(bytes.count + 1)))
            }
            let reencoded: [UInt8]?
            switch v.kind {
            case "value":
                let zone = v.zone ?? RecordZone.ID(name: "z")
                reencoded = (try? SpecCodec.decodeValue(bytes, zone: zone)).map {
                    SpecCodec.encodeValue($0, zone: zone)
                }
            case "record": reencoded = (try? Record(decoding: bytes))?.encoded()
            case "delta":
                let zone = v.zone ?? RecordZone.ID(name: "z")
                reencoded = (try? RecordDelta(decoding: bytes, zone: zone))?.encoded(zone: zone)
            case "tombstone": reencoded = (try? Tombstone(decoding: bytes))?.encoded()
            default: reencoded = (try? ChangeToken(bytes: bytes).contents()).map { ChangeToken($0).bytes }
            }
            if let reencoded, reencoded != bytes {
                Issue.record(
                    "seed \(seed) case \(i): \(v.name) mutated to \(Hex.string(bytes)) decodes but re-encodes to \(Hex.string(reencoded))"
                )
                return
            }
            // Whatever decodes also validates (the store relies on it for received records).
            for candidate in [v.bytes, bytes] where v.kind == "record" {
                guard let r = try? Record(decoding: candidate) else { continue }
                do { try r.validate() } catch {
                    Issue.record(
                        "seed \(seed) case \(i): \(v.name) as \(Hex.string(candidate)) decodes but does not validate: \(error)"
                    )
                    return
                }
            }
        }
    }
}
