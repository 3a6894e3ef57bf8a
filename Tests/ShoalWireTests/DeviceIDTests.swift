// DeviceIDTests: the device ID text form — Spec/vectors/device-ids.json both ways, and its properties.

import Foundation
import Testing
import ShoalSamples
@testable import ShoalWire

/// One entry of `Spec/vectors/device-ids.json`.
struct DeviceIDVector: Sendable, CustomTestStringConvertible {
    var name: String
    var hex: String?
    var text: String
    var error: String?
    var offset: Int?
    var detail: String?

    var testDescription: String { name }

    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Spec/vectors/device-ids.json")

    static func load() -> [DeviceIDVector] {
        guard let data = try? Data(contentsOf: file),
            let list = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { return [] }
        return list.map { v in
            DeviceIDVector(
                name: v["name"] as? String ?? "?", hex: v["hex"] as? String, text: v["text"] as? String ?? "",
                error: v["error"] as? String, offset: v["offset"] as? Int, detail: v["detail"] as? String)
        }
    }
}

@Suite struct DeviceIDTests {
    static let vectors = DeviceIDVector.load()

    /// Syncthing's own example device ID (its `lib/protocol/deviceid_test.go`): the text forms agree.
    static let syncthingExample = "P56IOI7-MZJNU2Y-IQGDREY-DM2MGTI-MGL3BXN-PQ6W5BM-TBBZ4TJ-XZWICQ2"

    @Test func vectorFileIsPresent() {
        #expect(Self.vectors.filter { $0.error == nil }.count >= 5, "Spec/vectors/device-ids.json is missing or short")
        #expect(
            Self.vectors.filter { $0.error != nil }.count >= 10,
            "Spec/vectors/device-ids.json has too few invalid vectors")
    }

    /// Bytes → text gives `text`; `text` → bytes gives `hex`, also in lower case and without separators.
    @Test(arguments: vectors.filter { $0.error == nil })
    func validVector(_ v: DeviceIDVector) throws {
        let id = try #require(DeviceID(hex: v.hex ?? ""), "hex is not 32 bytes")
        #expect(id.text == v.text)
        #expect(try DeviceID(text: v.text) == id)
        #expect(try DeviceID(text: v.text.lowercased()) == id)
        #expect(try DeviceID(text: v.text.replacingOccurrences(of: "-", with: "")) == id)
        #expect(try DeviceID(text: v.text.replacingOccurrences(of: "-", with: " ")) == id)
    }

    /// Parsing `text` fails with the stated code, offset and detail.
    @Test(arguments: vectors.filter { $0.error != nil })
    func invalidVector(_ v: DeviceIDVector) {
        do {
            let id = try DeviceID(text: v.text)
            Issue.record("parsed as \(id.hex), expected \(v.error ?? "?")")
        } catch {
            #expect(error.code.name == v.error)
            #expect(error.offset == v.offset)
            #expect(error.detail == v.detail)
        }
    }

    @Test func syncthingExampleRoundTrips() throws {
        let id = try DeviceID(text: Self.syncthingExample)
        #expect(id.text == Self.syncthingExample)
        #expect(id.short == "P56IOI7")
    }

    /// The worked example of Spec/security.md "Device IDs": the check character of the 13
    /// characters `P56IOI7MZJNU2` is `Y`.
    @Test func luhnWorkedExample() {
        let values = "P56IOI7MZJNU2".utf8.compactMap(DeviceIDText.value(of:))
        #expect(values.count == 13)
        #expect(DeviceIDText.alphabet[Int(DeviceIDText.check(values))] == UInt8(ascii: "Y"))
    }

    /// Why every single substitution is caught: with the fold `p / 32 + p % 32`, multiplying by
    /// either factor is a permutation of 0…31, so changing one character changes the sum mod 32.
    @Test func luhnFactorsPermuteTheAlphabet() {
        for factor in [1, 2] {
            let images = Set((0..<32).map { v in (factor * v) / 32 + (factor * v) % 32 })
            #expect(images == Set(0..<32), "factor \(factor)")
        }
    }

    /// Random IDs round-trip through every accepted spelling of their text form.
    @Test func randomIDsRoundTrip() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xDE71_CE1D)
        var rng = SplitMix64(seed: seed)
        for _ in 0..<2_000 {
            let id = try #require(DeviceID(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
            let text = id.text
            guard text.utf8.count == 63, text.split(separator: "-").map(\.count) == Array(repeating: 7, count: 8),
                try DeviceID(text: text) == id,
                try DeviceID(text: text.lowercased().replacingOccurrences(of: "-", with: "")) == id
            else {
                Issue.record("seed \(seed): \(id.hex) does not round-trip through \(text)")
                return
            }
        }
    }

    /// Every single-character substitution in the text form is detected (as `invalid_value`).
    @Test func everySubstitutionIsDetected() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5B57_1D00)
        var rng = SplitMix64(seed: seed)
        let alphabet = DeviceIDText.alphabet
        for _ in 0..<16 {
            let id = try #require(DeviceID(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
            let text = Array(id.text.utf8)
            for i in text.indices where text[i] != UInt8(ascii: "-") {
                for c in alphabet where c != text[i] {
                    var changed = text
                    changed[i] = c
                    let s = String(decoding: changed, as: UTF8.self)
                    do {
                        let other = try DeviceID(text: s)
                        Issue.record("seed \(seed): \(s) (one character of \(id.text) changed) parsed as \(other.hex)")
                        return
                    } catch {
                        guard error.code == .invalidValue else {
                            Issue.record("seed \(seed): \(s) failed with \(error.code), not invalid_value")
                            return
                        }
                    }
                }
            }
        }
    }

    @Test func bytesAndHexAreChecked() {
        #expect(DeviceID(bytes: [UInt8](repeating: 0, count: 31)) == nil)
        #expect(DeviceID(bytes: [UInt8](repeating: 0, count: 33)) == nil)
        #expect(DeviceID(hex: String(repeating: "0", count: 63)) == nil)
        #expect(DeviceID(hex: String(repeating: "g", count: 64)) == nil)
        #expect(DeviceID(hex: String(repeating: "ab", count: 32))?.hex == String(repeating: "ab", count: 32))
    }

    // MARK: Generating the vectors

    /// Writes Spec/vectors/device-ids.json when SHOAL_WRITE_VECTORS=1.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SHOAL_WRITE_VECTORS"] == "1"))
    func writeDeviceIDVectors() throws {
        var out = [[String: Any]]()
        func valid(_ name: String, _ bytes: [UInt8]) throws {
            let id = try #require(DeviceID(bytes: bytes))
            #expect(try DeviceID(text: id.text) == id)
            out.append(["name": name, "kind": "device_id", "hex": id.hex, "text": id.text])
        }
        func invalid(_ name: String, _ text: String) {
            do {
                let id = try DeviceID(text: text)
                Issue.record("\(name): \(text) parsed as \(id.hex)")
            } catch {
                out.append([
                    "name": name, "kind": "device_id", "text": text, "error": error.code.name, "offset": error.offset,
                    "detail": error.detail
                ])
            }
        }
        try valid("zero", [UInt8](repeating: 0, count: 32))
        try valid("all-ones", [UInt8](repeating: 0xFF, count: 32))
        try valid("counting", (0..<32).map { UInt8($0) })
        // SHA-256 of the empty string.
        try valid(
            "sha256-of-empty", Hex.bytes("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") ?? [])
        try valid("syncthing-example", try DeviceID(text: Self.syncthingExample).bytes)
        var rng = SplitMix64(seed: 0xDE71_CE1D)
        for i in 1...3 { try valid("random-\(i)", (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) }) }

        let good = try DeviceID(text: Self.syncthingExample).text
        let plain = good.replacingOccurrences(of: "-", with: "")
        func replacing(_ s: String, at i: Int, with c: Character) -> String {
            var a = Array(s)
            a[i] = c
            return String(a)
        }
        invalid("empty", "")
        invalid("separators-only", "-------")
        invalid("one-character-short", String(good.dropLast()))
        invalid("one-character-long", good + "A")
        invalid("without-check-characters", "P56IOI7MZJNU2IQGDREYDM2MGTMGL3BXNPQ6W5BTBBZ4TJXZWICQ")
        invalid("digit-zero", replacing(good, at: 4, with: "0"))
        invalid("digit-one", replacing(good, at: 4, with: "1"))
        invalid("digit-eight", replacing(good, at: 4, with: "8"))
        invalid("punctuation", replacing(good, at: 7, with: "_"))
        invalid("non-ascii", "É" + good.dropFirst())
        invalid("padding", good + "====")
        // A changed data character in each run of 13: the run's check character catches it.
        invalid("check-run-1", replacing(good, at: 0, with: "Q"))
        invalid("check-run-2", replacing(good, at: 17, with: "A"))
        invalid("check-run-3", replacing(good, at: 35, with: "Z"))
        invalid("check-run-4", replacing(good, at: 56, with: "B"))
        invalid("check-character-itself", replacing(good, at: 14, with: "Z"))
        // Two adjacent characters swapped (detected here; Luhn mod 32 catches most transpositions).
        invalid("transposed", replacing(replacing(good, at: 0, with: "5"), at: 1, with: "P"))
        // The 52nd data character is 'R' (value 17): a bit beyond the 256, with a matching check character.
        var values = plain.utf8.compactMap(DeviceIDText.value(of:))
        values[54] = 17
        values[55] = DeviceIDText.check(values[42..<55])
        invalid("bits-beyond-256", String(decoding: values.map { DeviceIDText.alphabet[Int($0)] }, as: UTF8.self))

        let data = try JSONSerialization.data(
            withJSONObject: out, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try (data + Data("\n".utf8)).write(to: DeviceIDVector.file)
    }
}
