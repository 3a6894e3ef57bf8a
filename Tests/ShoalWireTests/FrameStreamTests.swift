// FrameStreamTests: compression 3 — one zstd stream per connection direction (wire-format §14.3).

import Foundation
import ShoalTestSupport
import Testing
import ShoalSamples
@testable import ShoalWire

@Suite struct FrameStreamTests {
    /// Payloads as a connection carries them: single records, small batches, acknowledgements,
    /// pings, empty payloads, random (incompressible) bytes, and now and then a large one.
    static func payloads(count: Int, seed: UInt64) -> [[UInt8]] {
        var rng = SplitMix64(seed: seed)
        let records = NotesCorpus.records(count: 40, seed: seed)
        return (0..<count).map { _ in
            switch rng.next() % 8 {
            case 0: return PingMessage(nonce: rng.next()).encoded()
            case 1: return []
            case 2: return (0..<Int(rng.next() % 300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            case 3: return (0..<Int(1 &+ rng.next() % 6)).flatMap { _ in records[Int(rng.next() % 40)].encoded() }
            case 4 where rng.next() % 8 == 0:
                return [UInt8](
                    repeating: UInt8(truncatingIfNeeded: rng.next()), count: 200_000 &+ Int(rng.next() % 100_000))
            default: return records[Int(rng.next() % 40)].encoded()
            }
        }
    }

    /// The frames a streaming encoder writes for `payloads`, each with its wire bytes.
    static func encode(_ payloads: [[UInt8]], mode: FrameEncoder.Options.Mode) throws -> [[UInt8]] {
        let encoder = FrameEncoder(streamingWith: FrameEncoder.Options(mode: mode))
        return try payloads.map { try encoder.encode(.changes, payload: $0) }
    }

    /// Feeds `frames` to one stream-accepting reader in pieces drawn from `rng`.
    static func read(_ frames: [[UInt8]], rng: inout SplitMix64) throws(WireError) -> [Frame] {
        var reader = FrameReader(acceptsStreamCompression: true)
        let bytes = frames.flatMap { $0 }
        var out = [Frame]()
        var at = 0
        while at < bytes.count {
            let n = min(bytes.count - at, 1 + Int(rng.next() % (rng.next() % 2 == 0 ? 16 : 70_000)))
            out += try reader.frames(in: Array(bytes[at..<(at + n)]))
            at += n
        }
        return out
    }

    static let modes: [FrameEncoder.Options.Mode] = [.dictionary(BuiltInDictionaries.records), .zstd]

    @Test(arguments: 0..<2)
    func aStreamRoundTripsInAnySplit(mode: Int) throws {
        for k in 0..<12 {
            let seed = 0x57E4_0000 &+ UInt64(k) &* 7919 &+ UInt64(mode)
            let payloads = Self.payloads(count: 60, seed: seed)
            let frames = try Self.encode(payloads, mode: Self.modes[mode])
            var rng = SplitMix64(seed: seed)
            let back = try Self.read(frames, rng: &rng)
            #expect(back.map(\.payload) == payloads, "seed \(seed)")
            let streamed = back.filter { $0.compression == .stream }.count
            #expect(
                streamed == payloads.filter { !$0.isEmpty && $0.count <= 64 << 10 }.count,
                "every payload of 1 byte to 64 KiB went into the stream (seed \(seed))")
        }
    }

    /// Flipping a bit, dropping, repeating or swapping frames of a stream yields a typed error —
    /// the chained checksum catches the order — and never a trap or a wrong payload.
    @Test func damagedStreamsFailWithATypedError() throws {
        for k in 0..<200 {
            let seed = 0xDA4A_6E00 &+ UInt64(k)
            var rng = SplitMix64(seed: seed)
            // Every frame in the stream (non-empty, at most 64 KiB): frames of compression 0–2
            // are independent of each other, and their order is not the stream's to check.
            let payloads = Self.payloads(count: 6, seed: seed).map { $0.isEmpty ? [1] : Array($0.prefix(60_000)) }
            var frames = try Self.encode(payloads, mode: Self.modes[k % 2])
            let i = Int(rng.next() % UInt64(frames.count)),
                j = (i + 1 + Int(rng.next() % UInt64(frames.count - 1))) % frames.count
            let what = rng.next() % 4
            switch what {
            case 0:
                let at = Int(rng.next() % UInt64(frames[i].count))
                frames[i][at] ^= UInt8(truncatingIfNeeded: 1 << (rng.next() % 8))
            case 1: frames.remove(at: i)
            case 2: frames.insert(frames[i], at: i)
            default: frames.swapAt(i, j)
            }
            do {
                // No error is possible only for a stream cut short: the last frame dropped, or a
                // length made longer (the reader waits for bytes that never come). What decoded is
                // then a prefix of what was sent, never a wrong payload.
                let back = try Self.read(frames, rng: &rng).map(\.payload)
                #expect(
                    back.count < payloads.count && Array(payloads.prefix(back.count)) == back,
                    "seed \(seed): damage \(what) at \(i) decoded")
            } catch {
                #expect(
                    error.offset >= 0 && error.offset < frames.reduce(0) { $0 + $1.count }, "seed \(seed): \(error)")
            }
        }
    }

    @Test func aReaderThatDidNotAnnounceTheStreamRefusesIt() throws {
        let frame = try Self.encode([NotesCorpus.records(count: 1, seed: 3)[0].encoded()], mode: .zstd)[0]
        #expect(frame[4] == 3)
        #expect(throws: WireError.self) { try FrameReader.decodeOne(frame) }
        do { _ = try FrameReader.decodeOne(frame) } catch {
            #expect(error.code == .unknownRequiredTag && error.offset == 4)
        }
    }

    /// The stream's zstd frame header: no content size, no checksum, a window of at most
    /// 128 KiB, the dictionary named; and a connection's contexts stay within their bound.
    @Test func theStreamHeaderAndMemoryStayWithinTheSpec() throws {
        let payloads = Self.payloads(count: 200, seed: 77)
        let encoder = FrameEncoder(streamingWith: FrameEncoder.Options())
        var reader = FrameReader(acceptsStreamCompression: true)
        var first: [UInt8]? = nil
        for p in payloads {
            let frame = try encoder.encode(.changes, payload: p)
            if first == nil, frame[4] == 3 { first = Array(frame[9..<(frame.count - 4)]) }
            #expect(try reader.frames(in: frame).map(\.payload) == [p])
        }
        let header = try #require(first)
        #expect(header.prefix(4) == [0x28, 0xB5, 0x2F, 0xFD])
        #expect(header[4] & 0xE4 == 0, "no content size, not single-segment, no checksum")
        #expect(header[4] & 0x03 == 3 && header[6..<10] == [0x01, 0x00, 0x48, 0x53], "the dictionary ID, 4 bytes")
        let window = (1 << (10 + Int(header[5] >> 3))) * (8 + Int(header[5] & 7)) / 8
        #expect(window <= 1 << 17)
        #expect(encoder.streamMemoryBytes > 0 && encoder.streamMemoryBytes < 1_400_000, "\(encoder.streamMemoryBytes)")
        #expect(reader.streamMemoryBytes > 0 && reader.streamMemoryBytes < 700_000, "\(reader.streamMemoryBytes)")
    }

    /// A payload over the frame limit can never enter the stream, and one whose stream piece
    /// could pass the limit is compressed on its own instead.
    @Test func largePayloadsLeaveTheStream() throws {
        var options = FrameEncoder.Options(mode: .zstd)
        options.limits.maxFramePayloadBytes = 100_000
        let encoder = FrameEncoder(streamingWith: options)
        var reader = FrameReader(limits: options.limits, acceptsStreamCompression: true)
        let big = [UInt8](repeating: 7, count: 100_000), small = Array("a small note".utf8)
        let frames = try [small, big, small].map { try encoder.encode(.changes, payload: $0) }
        let back = try reader.frames(in: frames.flatMap { $0 })
        #expect(back.map(\.compression) == [.stream, .zstd, .stream])
        #expect(back.map(\.payload) == [small, big, small])
    }

    /// The payloads of one direction, concatenated, are a zstd frame that `zstd -d` decodes as far
    /// as it goes (it then reports the frame unfinished).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/zstd")))
    func zstdToolDecodesTheConcatenatedPayloads() throws {
        let payloads = NotesCorpus.records(count: 5, seed: 9).map { $0.encoded() }
        let frames = try Self.encode(payloads, mode: .dictionary(BuiltInDictionaries.records))
        let body = frames.flatMap { $0[9..<($0.count - 4)] }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-zstd-stream-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("stream.zst")
        try Data(body).write(to: input)
        let p = ChildProcess()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/zstd")
        p.arguments = ["-q", "-d", "-c", "-D", DictionaryTrainingTests.specCopy.path, input.path]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = Pipe()
        try p.run()
        let decoded = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect([UInt8](decoded) == payloads.flatMap { $0 })
    }
}
