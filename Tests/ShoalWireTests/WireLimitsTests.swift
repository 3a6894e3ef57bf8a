// WireLimitsTests: decoders stay trap-free under any WireLimits, however large or nonsensical.

import Testing
@testable import ShoalWire

@Suite struct WireLimitsTests {
    static var unlimited: WireLimits {
        var l = WireLimits()
        l.maxNameBytes = .max; l.maxFieldNameBytes = .max; l.maxRecordBytes = .max; l.maxFieldCount = .max
        l.maxListCount = .max; l.maxVectorEntries = .max; l.maxDeltaOperations = .max; l.maxBlobBytes = .max
        return l
    }

    static func varint(_ v: UInt64) -> [UInt8] {
        var v = v, out = [UInt8]()
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        out.append(UInt8(v))
        return out
    }

    @Test func tokenVectorCountThatWrapsIsTruncated() throws {
        let n: UInt64 = 768_614_336_404_564_651  // × 24 = 2^64 + 8
        #expect(n &* 24 == 8)
        let bytes: [UInt8] =
            [0x53, 0x54, 0x01, 0x01] + [UInt8](repeating: 7, count: 16) + Self.varint(n)
            + [UInt8](repeating: 1, count: 40)
        #expect(throws: WireError.self) { _ = try ChangeToken(bytes: bytes).contents(limits: Self.unlimited) }
    }

    @Test func recordVectorCountThatWrapsIsTruncated() throws {
        let n: UInt64 = 737_869_762_948_382_065  // × 25 = 2^64 + 9
        #expect(n &* 25 == 9)
        let bytes: [UInt8] =
            [0x00, 0x01, 0x4E, 0x01, 0x6E, 0x01, 0x7A, 0x01, 0x6F] + Self.varint(n) + [UInt8](repeating: 1, count: 40)
        #expect(throws: WireError.self) { _ = try Record(decoding: bytes, limits: Self.unlimited) }
    }

    @Test func listCountThatWrapsIsTruncated() throws {
        // A list of doubles: n passes require(n) only if n <= available, so n * 8 cannot wrap; but
        // the field count (× 3) can.
        let n: UInt64 = 6_148_914_691_236_517_206  // × 3 = 2^64 + 2
        #expect(n &* 3 == 2)
        let bytes: [UInt8] =
            [0x00, 0x01, 0x4E, 0x01, 0x6E, 0x01, 0x7A, 0x01, 0x6F, 0x00] + Self.varint(n) + [0x01, 0x61, 0x04, 0x00]
        #expect(throws: WireError.self) { _ = try Record(decoding: bytes, limits: Self.unlimited) }
    }

    @Test func negativeLimitsRejectInsteadOfTrapping() throws {
        var l = WireLimits()
        l.maxListCount = -1
        l.maxNameBytes = -5
        let zone = RecordZone.ID(name: "z")
        #expect(throws: WireError.self) { _ = try SpecCodec.decodeValue([0x41, 0x01, 0x00], zone: zone, limits: l) }
        #expect(throws: WireError.self) { _ = try Tombstone(decoding: [0x01, 0x4E, 0x01, 0x6E], limits: l) }
    }
}
