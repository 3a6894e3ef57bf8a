// WriteEntryTests: write entries and writer checkpoints (Spec/authenticated-writes.md §2–§3) round-trip byte for byte, and malformed ones fail with their code and offset.

import Testing
import ShoalSamples
@testable import ShoalWire

/// The bytes of `text`, hexadecimal (empty when it is not: the test then fails on them).
private func hex(_ text: String) -> [UInt8] { Hex.bytes(text) ?? [] }

@Suite struct WriteEntryTests {
    static let zone = RecordZone.ID(name: "notes")
    static let writer = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)
    static let incarnation = NodeID(high: 0x1AC0_0000_0000_0001, low: 2)

    /// The entry whose bytes and chain value Python's hashlib computed independently
    /// (`WriterLogTests` checks the digests and the chain).
    static let known = WriteEntry(
        sequence: 1, hlc: HLC(rawValue: 0x18C_0000_0001), isCreation: true, record: "n1",
        slots: [
            WriteEntry.Slot(name: "title", digest: hex("0101024869")),
            WriteEntry.Slot(name: "", digest: hex("01044e6f746500"))
        ])
    static let knownHex = "01010000008c01000002026e3102000701044e6f746500057469746c65050101024869"

    @Test func theKnownEntryEncodesToItsBytes() throws {
        #expect(Hex.string(Self.known.encoded()) == Self.knownHex)
        #expect(try WriteEntry(decoding: hex(Self.knownHex)) == Self.known)
        #expect(Self.known.slots.map(\.name) == ["", "title"], "slots sorted by name bytes, the empty name first")
    }

    /// 1,000 seeded entries — saves and deletions, up to 6 slots with names of 1 to 40 bytes —
    /// decode to themselves and re-encode to the same bytes.
    @Test func seededEntriesRoundTrip() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xE47_0001)
        var rng = SplitMix64(seed: seed)
        for i in 0..<1_000 {
            let deletion = rng.next() % 4 == 0
            var names = Set<String>()
            let letters: [Character] = ["a", "b", "c", "d", "é"]
            if !deletion {
                for _ in 0..<(rng.next() % 7) {
                    names.insert(String(repeating: letters[Int(rng.next() % 5)], count: Int(1 + rng.next() % 8)))
                }
            }
            let slots = names.map {
                WriteEntry.Slot(name: $0, digest: (0..<16).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            }
            let entry = WriteEntry(
                sequence: 1 + rng.next() % 1_000_000, hlc: HLC(rawValue: rng.next() >> 1), isDeletion: deletion,
                isCreation: rng.next() % 2 == 0, record: "r\(rng.next() % 10_000)", slots: slots)
            let bytes = entry.encoded()
            let back = try WriteEntry(decoding: bytes)
            #expect(back == entry, "seed \(seed), entry \(i)")
            #expect(back.encoded() == bytes, "seed \(seed), entry \(i)")
        }
    }

    /// Malformed entries: a name, the bytes, the code and offset the Spec gives.
    static let malformed: [(String, String, WireError.Code, Int)] = [
        ("sequence zero", "00" + String(knownHex.dropFirst(2)), .invalidValue, 0),
        ("reserved flag", String(knownHex.prefix(18)) + "04" + String(knownHex.dropFirst(20)), .unknownRequiredTag, 9),
        ("deletion with slots", String(knownHex.prefix(18)) + "01" + String(knownHex.dropFirst(20)), .invalidValue, 13),
        (
            "slots out of order", "01010000008c01000002026e3102" + "057469746c65050101024869" + "000701044e6f746500",
            .unsorted, 26
        ),
        ("a slot twice", "01010000008c01000002026e3102" + "000701044e6f746500" + "000701044e6f746500", .duplicate, 23),
        ("digest cut short", String(knownHex.dropLast(2)), .truncated, 30),
        ("a byte after the end", knownHex + "00", .trailingBytes, 35),
        ("an empty digest", "01010000008c01000002026e3101" + "0000ab", .invalidValue, 15),
        (
            "a digest of 17 bytes", "01010000008c01000002026e3101" + "0011" + String(repeating: "ab", count: 17),
            .invalidValue, 15
        )
    ]

    /// Each malformed entry fails with its code and offset.
    @Test func malformedEntriesFail() {
        for (name, text, code, offset) in Self.malformed {
            do throws(WireError) {
                _ = try WriteEntry(decoding: hex(text))
                Issue.record("\(name): decoded")
            } catch {
                #expect(error.code == code, "\(name): \(error)")
                #expect(error.offset == offset, "\(name): \(error)")
            }
        }
    }

    /// An entry claiming more slots than the limit fails at its count, before reading any.
    @Test func aSlotCountOverTheLimitFailsAtTheCount() {
        var limits = WireLimits.default
        limits.maxFieldCount = 1
        do throws(WireError) {
            _ = try WriteEntry(
                decoding: hex(String(Self.knownHex.prefix(26)) + "03" + String(Self.knownHex.dropFirst(28))),
                limits: limits)
            Issue.record("decoded")
        } catch {
            #expect(error.code == .limitExceeded && error.offset == 13, "\(error)")
        }
    }

    @Test func aSignedCheckpointRoundTripsAndCoversItsFields() throws {
        let signature = (0..<64).map { UInt8($0) }
        let checkpoint = WriterCheckpoint(
            zone: Self.zone, incarnation: Self.incarnation, writer: Self.writer, sequence: 300,
            chain: hex("e5edbe1e50e8bb2c46b5860ba5dba05467bddb31104211723502041800a90618"), signature: signature)
        let bytes = checkpoint.encoded()
        #expect(try WriterCheckpoint(decoding: bytes) == checkpoint)
        #expect(bytes.count == checkpoint.signedBytes.count - WriterCheckpoint.signatureContext.count + 64)
        #expect(
            Array(checkpoint.signedBytes.prefix(WriterCheckpoint.signatureContext.count))
                == WriterCheckpoint.signatureContext)
        #expect(
            Array(checkpoint.signedBytes.dropFirst(WriterCheckpoint.signatureContext.count))
                == Array(bytes.dropLast(64)),
            "the signature covers every field before it")
        var later = checkpoint
        later.sequence = 301
        #expect(later.signedBytes != checkpoint.signedBytes)
    }

    @Test func malformedCheckpointsFail() throws {
        var checkpoint = WriterCheckpoint(
            zone: Self.zone, incarnation: Self.incarnation, writer: Self.writer, sequence: 1,
            chain: [UInt8](repeating: 7, count: 32), signature: [UInt8](repeating: 9, count: 64))
        let bytes = checkpoint.encoded()
        #expect(try WriterCheckpoint(decoding: bytes) == checkpoint)
        // zone "notes" (6) + owner "_defaultOwner" (14) + incarnation (16) + writer (16) = 52: the sequence.
        var zero = bytes
        zero[52] = 0
        #expect(
            Self.failure { () throws(WireError) in try WriterCheckpoint(decoding: zero) }
                == WireError(.invalidValue, at: 52, ""))
        #expect(
            Self.failure { () throws(WireError) in try WriterCheckpoint(decoding: Array(bytes.dropLast())) }
                == WireError(.truncated, at: 85, ""))
        checkpoint.signature = []
        #expect(
            Self.failure { () throws(WireError) in try WriterCheckpoint(decoding: checkpoint.encoded()) }?.code
                == .truncated, "an unsigned checkpoint does not decode")
    }

    /// The error `body` throws (compared by code and offset), or nil when it throws none.
    static func failure(_ body: () throws(WireError) -> WriterCheckpoint) -> WireError? {
        do throws(WireError) {
            _ = try body()
            return nil
        } catch {
            return WireError(error.code, at: error.offset, "")
        }
    }
}
