// ZstdPayloadTests: what a compressed frame payload may be (Spec/wire-format.md §14) — one standard
// zstd frame, its window within its content, its own dictionary ID agreeing with the frame's.

import Testing
@testable import ShoalWire

@Suite struct ZstdPayloadTests {
    /// A zstd frame without compression, written by hand: a 2-byte content size field (sizes
    /// 256–65,791), no single-segment flag, so the window descriptor `window` is present; the
    /// content goes in raw blocks of at most `block` bytes.
    static func rawFrame(content: [UInt8], window: UInt8, block: Int = 128 << 10) -> [UInt8] {
        var b: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x40, window]
        let fcs = content.count - 256
        b += [UInt8(truncatingIfNeeded: fcs), UInt8(truncatingIfNeeded: fcs >> 8)]
        var start = 0
        repeat {
            let end = min(content.count, start + block)
            let header = (end - start) << 3 | (end == content.count ? 1 : 0)
            b += [
                UInt8(truncatingIfNeeded: header), UInt8(truncatingIfNeeded: header >> 8),
                UInt8(truncatingIfNeeded: header >> 16)
            ]
            b += content[start..<end]
            start = end
        } while start < content.count
        return b
    }

    /// Where the zstd frame's dictionary ID field starts (after magic, descriptor and any window byte).
    static func dictionaryIDOffset(_ zstd: [UInt8]) -> Int {
        zstd[4] & 0x20 != 0 ? 5 : 6
    }

    static let records = FrameTests.batch(4, seed: 21)

    static func dictionaryCompressed() throws -> [UInt8] {
        let z = records.withUnsafeBytes {
            ZstdCompressor().compress($0, level: 3, dictionary: BuiltInDictionaries.records, notBelow: records.count)
        }
        let zstd = try #require(z)
        // libzstd writes the 4-byte form of the ID field for an ID of 0x53480001.
        #expect(zstd[4] & 0x03 == 3)
        return zstd
    }

    @Test func skippableFramesAreNotPayloads() {
        // Magic 0x184D2A50 (any of 0x184D2A50–0x184D2A5F), then the skipped size.
        FrameTests.expectError(
            FrameTests.frame(flags: 1, payload: [0x50, 0x2A, 0x4D, 0x18, 0, 0, 0, 0]), .decompressionFailed, at: 9)
        FrameTests.expectError(
            FrameTests.frame(flags: 1, payload: [0x5F, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 0x61, 0x62, 0x63]),
            .decompressionFailed, at: 9)
        FrameTests.expectError(
            FrameTests.frame(
                flags: 2, payload: [0x50, 0x2A, 0x4D, 0x18, 0, 0, 0, 0], dictionaryID: BuiltInDictionaries.recordsID),
            .decompressionFailed, at: 13)
    }

    @Test func otherMagicNumbersAreNotPayloads() {
        // The magic of a pre-RFC zstd format (v0.7), and a payload shorter than a magic number.
        FrameTests.expectError(
            FrameTests.frame(flags: 1, payload: [0x27, 0xB5, 0x2F, 0xFD, 0x00, 0x01, 0x00, 0x00, 0x00]),
            .decompressionFailed, at: 9)
        FrameTests.expectError(FrameTests.frame(flags: 1, payload: [0x28, 0xB5, 0x2F]), .decompressionFailed, at: 9)
    }

    @Test func aWindowWithinTheContentIsAccepted() throws {
        let content = [UInt8](repeating: 0x61, count: 1280)
        // 1 KiB + 2 eighths = 1,280 bytes: exactly the content size.
        let f = try FrameReader.decodeOne(
            FrameTests.frame(flags: 1, payload: Self.rawFrame(content: content, window: 0x02)))
        #expect(f.payload == content)
        // Below 1 KiB of content, the smallest window (1 KiB) is allowed.
        let small = [UInt8](repeating: 0x62, count: 300)
        #expect(
            try FrameReader.decodeOne(FrameTests.frame(flags: 1, payload: Self.rawFrame(content: small, window: 0x00)))
                .payload == small)
    }

    @Test func aWindowLargerThanTheContentIsRefused() {
        let content = [UInt8](repeating: 0x61, count: 1280)
        // 1 KiB + 3 eighths = 1,408 bytes, one eighth over the content.
        FrameTests.expectError(
            FrameTests.frame(flags: 1, payload: Self.rawFrame(content: content, window: 0x03)), .decompressionFailed,
            at: 9)
        // 2 KiB for 300 bytes, and 2 MiB (exponent 11).
        let small = [UInt8](repeating: 0x62, count: 300)
        FrameTests.expectError(
            FrameTests.frame(flags: 1, payload: Self.rawFrame(content: small, window: 0x08)), .decompressionFailed,
            at: 9)
        FrameTests.expectError(
            FrameTests.frame(flags: 1, payload: Self.rawFrame(content: small, window: 0x58)), .decompressionFailed,
            at: 9)
        // The largest exponent (31: a 2 TiB window) is refused the same way, on every platform.
        FrameTests.expectError(
            FrameTests.frame(flags: 1, payload: Self.rawFrame(content: small, window: 0xFF)), .decompressionFailed,
            at: 9)
    }

    @Test func aDictionaryIDFieldOfZeroMeansNoID() throws {
        var zstd = try Self.dictionaryCompressed()
        let at = Self.dictionaryIDOffset(zstd)
        for k in 0..<4 { zstd[at + k] = 0 }
        // The frame header's dictionary decodes it.
        let f = try FrameReader.decodeOne(
            FrameTests.frame(flags: 2, payload: zstd, dictionaryID: BuiltInDictionaries.recordsID))
        #expect(f.payload == Self.records)
        #expect(f.compression == .dictionary(id: BuiltInDictionaries.recordsID))
    }

    @Test func aZstdFrameNamingAnotherDictionaryIsRefused() throws {
        let zstd = try Self.dictionaryCompressed()
        // Compression 1 names no dictionary, so a zstd frame that names one cannot be decoded.
        FrameTests.expectError(FrameTests.frame(flags: 1, payload: zstd), .unknownDictionary, at: 9)
        // Compression 2 with a zstd frame naming a dictionary other than the frame header's.
        var other = zstd
        other[Self.dictionaryIDOffset(zstd)] ^= 0x03
        FrameTests.expectError(
            FrameTests.frame(flags: 2, payload: other, dictionaryID: BuiltInDictionaries.recordsID), .unknownDictionary,
            at: 13)
    }
}
