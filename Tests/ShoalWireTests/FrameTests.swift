// FrameTests: frames round-trip in every compression mode and any byte split; bad frames get their error.

import Testing
import ShoalSamples
@testable import ShoalWire

@Suite struct FrameTests {
    static let modes: [(String, FrameEncoder.Options.Mode)] = [
        ("none", .none), ("zstd", .zstd), ("dictionary", .dictionary(BuiltInDictionaries.records))
    ]

    static func batch(_ n: Int, seed: UInt64 = 7) -> [UInt8] {
        NotesCorpus.records(count: n, seed: seed).flatMap { $0.encoded() }
    }

    @Test func crc32cCheckValue() {
        #expect(CRC32C.checksum("123456789") == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        // Piecewise equals whole, across the 8-byte fast path and the tail.
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let whole = CRC32C.checksum(bytes)
        for cut in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let a = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<cut])) }
            let b = bytes.withUnsafeBytes {
                CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[cut...]), continuing: a)
            }
            #expect(b == whole, "cut at \(cut)")
        }
    }

    /// The processor's instruction (where used) and the portable tables agree on seeded random
    /// inputs of every length up to 300, at every alignment, and piecewise.
    @Test func crc32cHardwareAndTablesAgree() {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xC2C3_2C00)
        var rng = SplitMix64(seed: seed)
        let bytes = (0..<4096).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        bytes.withUnsafeBytes { all in
            for length in 0...300 {
                for offset in 0..<8 {
                    let slice = UnsafeRawBufferPointer(rebasing: all[offset..<(offset + length)])
                    let previous = UInt32(truncatingIfNeeded: rng.next())
                    guard
                        CRC32C.checksum(slice, continuing: previous)
                            == CRC32C.softwareChecksum(slice, continuing: previous)
                    else {
                        Issue.record(
                            "seed \(seed): CRC-32C differs at length \(length), offset \(offset) (hardware: \(CRC32C.usesHardware))"
                        )
                        return
                    }
                }
            }
            #expect(CRC32C.checksum(all) == CRC32C.softwareChecksum(all), "seed \(seed)")
        }
    }

    /// Long inputs take the three-chain path of the instruction (rounds of 24 KiB, then of 768
    /// bytes): it agrees with the tables at and around each round's edges and at seeded random
    /// lengths, alignments and starting values.
    @Test func crc32cThreeChainsAgreeWithTheTables() {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xC2C3_3C00)
        var rng = SplitMix64(seed: seed)
        let bytes = (0..<200_008).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        var lengths = [
            767, 768, 769, 1535, 1536, 24_575, 24_576, 24_577, 24_576 + 768, 24_576 + 767, 49_152 + 775, 200_000
        ]
        for _ in 0..<60 { lengths.append(Int(rng.next() % 200_001)) }
        bytes.withUnsafeBytes { all in
            for length in lengths {
                let offset = Int(rng.next() % 8)
                let slice = UnsafeRawBufferPointer(rebasing: all[offset..<(offset + length)])
                let previous = UInt32(truncatingIfNeeded: rng.next())
                #expect(
                    CRC32C.checksum(slice, continuing: previous)
                        == CRC32C.softwareChecksum(slice, continuing: previous),
                    "seed \(seed): length \(length), offset \(offset) (hardware: \(CRC32C.usesHardware))")
            }
        }
    }

    @Test(arguments: [0, 1, 63, 64, 1000, 100_000])
    func roundTripsInEveryMode(size: Int) throws {
        let payload = Self.batch(max(1, size / 150)).prefix(size)
        for (name, mode) in Self.modes {
            let encoder = FrameEncoder(options: .init(mode: mode))
            let bytes = try encoder.encode(.changes, payload: Array(payload))
            let frame = try FrameReader.decodeOne(bytes)
            #expect(frame.type == .changes, "\(name)")
            #expect(frame.payload == Array(payload), "\(name) size \(size)")
        }
    }

    /// Encoding into the caller's storage (a socket buffer) writes exactly the bytes the array
    /// form gives, asks for exactly their size, and calls `output` once — compressed or not.
    @Test(arguments: [0, 1, 63, 64, 1000, 100_000])
    func encodesIntoCallerStorageAsIntoAnArray(size: Int) throws {
        let text = Self.batch(max(1, size / 150)).prefix(size)
        var rng = SplitMix64(seed: UInt64(size))
        let noise = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        for (name, mode) in Self.modes {
            let encoder = FrameEncoder(options: .init(mode: mode))
            for frame in [
                Frame(type: .changes, payload: Array(text)),
                Frame(type: .assetChunk, payload: noise, mayCompress: false),
                Frame(type: .changes, payload: Array(text), mayCompress: false)
            ] {
                var calls = 0
                let written = try encoder.encode(frame) { size, write -> [UInt8] in
                    calls += 1
                    // Storage that starts out dirty, as a reused socket buffer would.
                    var storage = [UInt8](repeating: 0xEE, count: size)
                    storage.withUnsafeMutableBytes { write($0) }
                    return storage
                }
                let array = try encoder.encode(frame)
                let decoded = try FrameReader.decodeOne(written)
                #expect(calls == 1, "\(name)")
                #expect(written == array, "\(name) size \(size) mayCompress \(frame.mayCompress)")
                #expect(decoded.payload == frame.payload, "\(name) size \(size)")
            }
        }
    }

    /// An oversized payload is refused before any storage is asked for.
    @Test func oversizedPayloadIsRefusedBeforeStorageIsAskedFor() {
        var limits = WireLimits.default
        limits.maxFramePayloadBytes = 16
        var options = FrameEncoder.Options(mode: .none)
        options.limits = limits
        var asked = false
        #expect(throws: WireError.self) {
            _ = try FrameEncoder(options: options).encode(
                Frame(type: .changes, payload: Array(repeating: 1, count: 17))
            ) { size, _ -> Int in
                asked = true
                return size
            }
        }
        #expect(!asked)
    }

    @Test func compressesOnlyAboveThresholdAndWhenItPays() throws {
        let encoder = FrameEncoder(options: .init(mode: .zstd))
        let small = try FrameReader.decodeOne(try encoder.encode(.ping, payload: Array(repeating: 0, count: 63)))
        #expect(small.compression == .none)
        let repetitive = try FrameReader.decodeOne(
            try encoder.encode(.changes, payload: Array(repeating: 7, count: 4096)))
        #expect(repetitive.compression == .zstd)
        var rng = SplitMix64(seed: 3)
        let noise = (0..<4096).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let incompressible = try encoder.encode(.assetChunk, payload: noise)
        #expect(try FrameReader.decodeOne(incompressible).compression == .none)
        #expect(incompressible.count == 4096 + 13)
        let dict = FrameEncoder(options: .init(mode: .dictionary(BuiltInDictionaries.records)))
        let record = try FrameReader.decodeOne(
            try dict.encode(.changes, payload: NotesCorpus.records(count: 1, seed: 99)[0].encoded()))
        #expect(record.compression == .dictionary(id: BuiltInDictionaries.recordsID))
    }

    /// A stream of frames of every kind, split at random points, reads back the same frames and
    /// never buffers more than one frame.
    @Test func readsAnyByteSplit() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xF4A3_0001)
        var rng = SplitMix64(seed: seed)
        var frames = [Frame]()
        var stream = [UInt8]()
        for i in 0..<200 {
            let (_, mode) = Self.modes[i % 3]
            let encoder = FrameEncoder(options: .init(mode: mode))
            let size = Int(rng.next() % 3000)
            let payload = Array(Self.batch(size / 150 + 1, seed: UInt64(i)).prefix(size))
            let type = FrameType(rawValue: UInt8(1 + rng.next() % 20))  // includes unknown types
            frames.append(Frame(type: type, payload: payload))
            stream += try encoder.encode(type, payload: payload)
        }
        for round in 0..<20 {
            var reader = FrameReader()
            var got = [Frame]()
            var i = 0
            var maxBuffered = 0
            while i < stream.count {
                let n = min(stream.count - i, Int(rng.next() % (round < 10 ? 17 : 5000)) + 1)
                got += try reader.frames(in: Array(stream[i..<i + n]))
                maxBuffered = max(maxBuffered, reader.bufferedByteCount)
                i += n
            }
            #expect(got.map(\.type) == frames.map(\.type), "seed \(seed) round \(round)")
            #expect(got.map(\.payload) == frames.map(\.payload), "seed \(seed) round \(round)")
            #expect(maxBuffered <= 3000 + 17, "seed \(seed): buffered \(maxBuffered)")
            #expect(reader.consumedByteCount == stream.count)
        }
    }

    /// A header alone costs the reader no more than its bytes and a small first buffer: memory
    /// for the payload grows with the bytes that arrive, not with the length a peer declares.
    @Test func aDeclaredLengthReservesNothingUntilItsBytesArrive() throws {
        let declared = UInt32(WireLimits.default.maxFramePayloadBytes)
        let header = Array(Self.frame(6, payload: [], length: declared).prefix(FrameLayout.headerSize))
        var reader = FrameReader()
        #expect(try reader.frames(in: header).isEmpty)
        #expect(reader.bufferedByteCount == FrameLayout.headerSize)
        #expect(
            reader.reservedByteCount < 2 * FrameReader.initialReservation,
            "reserved \(reader.reservedByteCount) bytes for a header")
        // Bytes that arrive are held, and the frame still completes.
        let payload = [UInt8](repeating: 7, count: 100_000)
        let whole = Self.frame(6, payload: payload)
        var second = FrameReader()
        _ = try second.frames(in: Array(whole.prefix(FrameLayout.headerSize + 10)))
        #expect(second.reservedByteCount < 2 * FrameReader.initialReservation)
        let rest = try second.frames(in: Array(whole.dropFirst(FrameLayout.headerSize + 10)))
        #expect(rest.map(\.payload) == [payload])
    }

    @Test func unknownTypesAreDelivered() throws {
        let f = try FrameReader.decodeOne(try FrameEncoder().encode(FrameType(rawValue: 0xC3), payload: [1, 2, 3]))
        #expect(!f.type.isKnown)
        #expect(f.payload == [1, 2, 3])
    }

    static func frame(
        _ type: UInt8 = 6, flags: UInt8 = 0, payload: [UInt8], dictionaryID: UInt32? = nil, length: UInt32? = nil
    ) -> [UInt8] {
        var b: [UInt8] = [0x53, 0x48, 1, type, flags]
        let n = length ?? UInt32(payload.count)
        b += (0..<4).map { UInt8(truncatingIfNeeded: n >> (8 * $0)) }
        if let d = dictionaryID { b += (0..<4).map { UInt8(truncatingIfNeeded: d >> (8 * $0)) } }
        b += payload
        let crc = CRC32C.checksum(b)
        return b + (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * $0)) }
    }

    static func expectError(
        _ bytes: [UInt8], _ code: WireError.Code, at offset: Int? = nil, limits: WireLimits = .default,
        _ note: Comment? = nil
    ) {
        do {
            let f = try FrameReader.decodeOne(bytes, limits: limits)
            Issue.record("expected \(code), decoded \(f.type) with \(f.payload.count) bytes. \(note ?? "")")
        } catch {
            #expect(error.code == code, "\(error)")
            if let offset { #expect(error.offset == offset, "\(error)") }
        }
    }

    @Test func malformedFramesGetTheirErrors() throws {
        let good = Self.frame(payload: [42])
        _ = try FrameReader.decodeOne(good)
        var b = good; b[0] = 0x47
        Self.expectError(b, .badMagic, at: 0)
        b = Self.frame(payload: [42]); b[2] = 2
        Self.expectError(b, .unsupportedVersion, at: 2)
        Self.expectError(Self.frame(0, payload: [42]), .invalidValue, at: 3)
        Self.expectError(Self.frame(flags: 0x04, payload: [42]), .unknownRequiredTag, at: 4)
        Self.expectError(Self.frame(flags: 0x03, payload: [42]), .unknownRequiredTag, at: 4)
        b = good; b[9] ^= 1
        Self.expectError(b, .checksumMismatch, at: 10)
        Self.expectError(Array(good.dropLast()), .truncated)
        Self.expectError(good + [0], .trailingBytes, at: good.count)
        var small = WireLimits(); small.maxFramePayloadBytes = 100
        Self.expectError(Self.frame(payload: [], length: 101), .limitExceeded, at: 5, limits: small)
        Self.expectError(Self.frame(payload: [], length: .max), .limitExceeded, at: 5)
        Self.expectError(Self.frame(flags: 2, payload: [1, 2, 3], dictionaryID: 12345), .unknownDictionary, at: 9)
        Self.expectError(Self.frame(flags: 1, payload: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), .decompressionFailed, at: 9)
    }

    /// A small zstd frame that declares a huge content size is refused before any allocation.
    @Test func decompressionBombIsRefused() throws {
        let big = [UInt8](repeating: 0, count: 8 << 20)
        let compressor = ZstdCompressor()
        let bomb = try #require(
            big.withUnsafeBytes { compressor.compress($0, level: 3, dictionary: nil, notBelow: 1 << 20) })
        #expect(bomb.count < 4096)
        Self.expectError(Self.frame(flags: 1, payload: bomb), .limitExceeded, at: 9)
        // Declared size within the limit but more data than declared: corrupt, not an overrun.
        var lying = try #require(
            Array(repeating: UInt8(5), count: 1000).withUnsafeBytes {
                compressor.compress($0, level: 3, dictionary: nil, notBelow: 900)
            })
        // Frame header descriptor: single-segment frames keep the content size right after it.
        let fhd = lying[4]
        #expect(fhd & 0x20 != 0)
        lying[5] = 10  // declare 10 bytes instead of 1000 (1-byte content size field)
        Self.expectError(Self.frame(flags: 1, payload: lying), .decompressionFailed)
    }

    @Test func readerStaysFailedAfterAnError() throws {
        var reader = FrameReader()
        var bad = Self.frame(payload: [1]); bad[0] = 0
        #expect(throws: WireError.self) { try reader.frames(in: bad) }
        #expect(throws: WireError.self) { try reader.frames(in: Self.frame(payload: [1])) }
    }

    @Test func oversizedPayloadIsRefusedByTheEncoder() {
        var options = FrameEncoder.Options(); options.limits.maxFramePayloadBytes = 10
        #expect(throws: WireError.self) {
            try FrameEncoder(options: options).encode(.changes, payload: Array(repeating: 1, count: 11))
        }
    }

    @Test func controlMessagesRoundTrip() throws {
        for m in [
            ErrorMessage(code: "limitExceeded", message: "batch over 4 MiB"),
            ErrorMessage(code: "requestRateLimited", retryAfterMilliseconds: 1500, message: "slow down 🐟")
        ] {
            #expect(try ErrorMessage(decoding: m.encoded()) == m)
        }
        #expect(try PingMessage(decoding: PingMessage(nonce: .max).encoded()) == PingMessage(nonce: .max))
        #expect(
            try GoodbyeMessage(decoding: GoodbyeMessage(reason: "shutting down").encoded()).reason == "shutting down")
        #expect(throws: WireError.self) { try ErrorMessage(decoding: [1, 0x61, 2, 0]) }  // reserved flag bit
        #expect(throws: WireError.self) { try PingMessage(decoding: [0x80, 0x00]) }  // overlong varint
        #expect(throws: WireError.self) { try GoodbyeMessage(decoding: [1, 0x61, 0]) }  // trailing byte
    }
}
