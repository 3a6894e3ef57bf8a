// FrameVectorTests: Spec/vectors/frames.json — frames and control payloads, decoded and re-encoded.

import Foundation
import ShoalTestSupport
import Testing
import ShoalSamples
@testable import ShoalWire

/// One entry of `Spec/vectors/frames.json`.
struct FrameVector: Sendable, CustomTestStringConvertible {
    var name: String
    var kind: String
    var hex: String
    var json: [String: String]
    var error: String?
    var offset: Int?

    var testDescription: String { name }

    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Spec/vectors/frames.json")

    static func load() -> [FrameVector] {
        guard let data = try? Data(contentsOf: file),
            let list = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { return [] }
        return list.map { v in
            FrameVector(
                name: v["name"] as? String ?? "?", kind: v["kind"] as? String ?? "?", hex: v["hex"] as? String ?? "",
                json: (v["json"] as? [String: Any])?.mapValues { "\($0)" } ?? [:],
                error: v["error"] as? String, offset: v["offset"] as? Int)
        }
    }

    var bytes: [UInt8] { Hex.bytes(hex) ?? [] }
}

@Suite struct FrameVectorTests {
    static let vectors = FrameVector.load()

    @Test func vectorFileIsPresent() {
        #expect(Self.vectors.count >= 20, "Spec/vectors/frames.json is missing or short")
    }

    @Test(arguments: vectors.filter { $0.error == nil })
    func validVector(_ v: FrameVector) throws {
        switch v.kind {
        case "frame":
            let f = try FrameReader.decodeOne(v.bytes)
            #expect(String(f.type.rawValue) == v.json["type"])
            // A frame reader does not look inside payloads; the vectors still hold only payloads
            // valid for their type (wire-format §13.3), so that they contradict no other rule.
            try Self.checkPayload(of: f)
            #expect(Hex.string(f.payload) == v.json["payload"])
            #expect(FrameVectorTests.compressionName(f.compression) == v.json["compression"])
            if f.compression == .none {
                // Plain frames are fully determined: re-encoding gives the same bytes.
                let again = try FrameEncoder(options: .init(mode: .none)).encode(f.type, payload: f.payload)
                #expect(Hex.string(again) == v.hex)
            }
        case "error_message":
            let m = try ErrorMessage(decoding: v.bytes)
            #expect(m.code == v.json["code"] && m.message == v.json["message"])
            #expect(m.retryAfterMilliseconds.map(String.init) == v.json["retry_after_ms"])
            #expect(Hex.string(m.encoded()) == v.hex)
        case "ping":
            let m = try PingMessage(decoding: v.bytes)
            #expect(String(m.nonce) == v.json["nonce"])
            #expect(Hex.string(m.encoded()) == v.hex)
        case "goodbye":
            let m = try GoodbyeMessage(decoding: v.bytes)
            #expect(m.reason == v.json["reason"])
            #expect(Hex.string(m.encoded()) == v.hex)
        case "stream":
            // Frames of one connection direction, read by a reader that announced compression 3.
            var reader = FrameReader(acceptsStreamCompression: true)
            let frames = try reader.frames(in: v.bytes)
            #expect(reader.bufferedByteCount == 0)
            for f in frames { try Self.checkPayload(of: f) }
            #expect(frames.map { Hex.string($0.payload) }.joined(separator: ",") == v.json["payloads"])
            #expect(frames.map { Self.compressionName($0.compression) }.joined(separator: ",") == v.json["compression"])
        default:
            Issue.record("unknown vector kind \(v.kind)")
        }
    }

    @Test(arguments: vectors.filter { $0.error != nil })
    func invalidVector(_ v: FrameVector) {
        do throws(WireError) {
            switch v.kind {
            case "frame": _ = try FrameReader.decodeOne(v.bytes)
            case "error_message": _ = try ErrorMessage(decoding: v.bytes)
            case "ping": _ = try PingMessage(decoding: v.bytes)
            case "goodbye": _ = try GoodbyeMessage(decoding: v.bytes)
            case "stream":
                var reader = FrameReader(acceptsStreamCompression: true)
                _ = try reader.frames(in: v.bytes)
                guard reader.bufferedByteCount == 0 else {
                    throw WireError(.truncated, at: v.bytes.count, "stream ends inside a frame")
                }
            default: Issue.record("unknown vector kind \(v.kind)")
            }
            Issue.record("\(v.name): decoded, expected \(v.error ?? "")")
        } catch {
            #expect(error.code.name == v.error, "\(v.name): \(error)")
            #expect(error.offset == v.offset, "\(v.name): \(error)")
        }
    }

    /// A dictionary-compressed payload is a standard zstd frame: the zstd tool decodes it with the
    /// Spec's copy of the dictionary. Runs where the `zstd` command is installed.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/zstd")))
    func zstdToolDecodesDictionaryPayloads() throws {
        let payload = NotesCorpus.records(count: 3, seed: 5).flatMap { $0.encoded() }
        let frame = try FrameEncoder().encode(.changes, payload: payload)
        guard case .dictionary = try FrameReader.decodeOne(frame).compression else {
            Issue.record("expected the default encoder to use the built-in dictionary")
            return
        }
        let body = Array(frame[13..<(frame.count - 4)])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-zstd-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("payload.zst"), output = dir.appendingPathComponent("payload")
        try Data(body).write(to: input)
        let p = ChildProcess()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/zstd")
        p.arguments = ["-q", "-d", "-D", DictionaryTrainingTests.specCopy.path, input.path, "-o", output.path]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(try [UInt8](Data(contentsOf: output)) == payload)
    }

    /// Decodes `frame`'s payload as its type's message; frames of unassigned types carry anything.
    /// - Throws: the payload's ``WireError``.
    static func checkPayload(of frame: Frame) throws {
        let p = frame.payload
        switch frame.type {
        case .hello: _ = try HelloMessage(decoding: p)
        case .changes: _ = try ChangesMessage(decoding: p)
        case .acknowledgement: _ = try AcknowledgementMessage(decoding: p)
        case .assetChunk: _ = try AssetChunkMessage(decoding: p)
        case .error: _ = try ErrorMessage(decoding: p)
        case .ping, .pong: _ = try PingMessage(decoding: p)
        case .goodbye: _ = try GoodbyeMessage(decoding: p)
        case .subscribe: _ = try SubscribeMessage(decoding: p)
        case .zones: _ = try ZonesMessage(decoding: p)
        case .assetRequest: _ = try AssetRequestMessage(decoding: p)
        case .upstreams: _ = try UpstreamsMessage(decoding: p)
        default: #expect(!frame.type.isKnown)
        }
    }

    static func compressionName(_ c: Frame.Compression) -> String {
        switch c {
        case .none: return "none"
        case .zstd: return "zstd"
        case .dictionary(let id): return "dictionary:\(id)"
        case .stream: return "stream"
        }
    }

    // MARK: Generating the vectors

    /// The compression-3 vectors (wire-format §14.3): streams of frames that decode only in
    /// order, with and without the dictionary, and the ways a stream is refused.
    static func streamVectors(_ payloads: [[UInt8]]) throws -> [[String: Any]] {
        var out = [[String: Any]]()
        func valid(_ name: String, _ frames: [[UInt8]]) throws {
            var reader = FrameReader(acceptsStreamCompression: true)
            let decoded = try reader.frames(in: frames.flatMap { $0 })
            out.append([
                "name": name, "kind": "stream", "hex": Hex.string(frames.flatMap { $0 }),
                "json": [
                    "payloads": decoded.map { Hex.string($0.payload) }.joined(separator: ","),
                    "compression": decoded.map { compressionName($0.compression) }.joined(separator: ",")
                ]
            ])
        }
        func invalid(_ name: String, _ bytes: [UInt8], kind: String = "stream") {
            var error: WireError? = nil
            do {
                if kind == "frame" {
                    _ = try FrameReader.decodeOne(bytes)
                } else {
                    var reader = FrameReader(acceptsStreamCompression: true)
                    _ = try reader.frames(in: bytes)
                }
            } catch let e { error = e }
            guard let error else { Issue.record("\(name) decoded"); return }
            out.append([
                "name": name, "kind": kind, "hex": Hex.string(bytes), "error": error.code.name, "offset": error.offset,
                "detail": error.detail
            ])
        }
        let dictionary = FrameEncoder(streamingWith: FrameEncoder.Options())
        // `changes`, `acknowledgement`, `changes`.
        let types: [FrameType] = [.changes, .acknowledgement, .changes]
        let withDictionary = try zip(types, payloads).map { try dictionary.encode($0, payload: $1) }
        let plainZstd = FrameEncoder(streamingWith: FrameEncoder.Options(mode: .zstd))
        let withoutDictionary = try zip(types, payloads).map { try plainZstd.encode($0, payload: $1) }
        try valid("stream-dictionary", withDictionary)
        try valid("stream-no-dictionary", withoutDictionary)
        // A plain frame between two stream frames: the stream simply goes on after it.
        let mixed = FrameEncoder(streamingWith: FrameEncoder.Options())
        try valid(
            "stream-with-plain-frame-between",
            [
                try mixed.encode(.changes, payload: payloads[0]),
                try mixed.encode(Frame(type: .ping, payload: PingMessage(nonce: 5).encoded(), mayCompress: false)),
                try mixed.encode(.changes, payload: payloads[2])
            ])
        // Written by hand: window 128 KiB (descriptor 0x38), no dictionary, one raw block "abc".
        let abc: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x38, 0x18, 0x00, 0x00, 0x61, 0x62, 0x63]
        try valid(
            "stream-hand-written",
            [FuzzChecks.wrapStream([abc, [0x18, 0x00, 0x00, 0x64, 0x65, 0x66]], type: FrameType(rawValue: 0x7F))])
        // Only in order: the second frame first, or alone, fails its chained checksum.
        invalid("stream-out-of-order", withDictionary[1] + withDictionary[0] + withDictionary[2])
        invalid("stream-first-frame-missing", withDictionary[1] + withDictionary[2])
        invalid("stream-not-announced", withDictionary[0], kind: "frame")
        let unassigned = FrameType(rawValue: 0x7F)
        // The first piece of `withoutDictionary` cut short by one byte, inside its last block.
        let first = Array(withoutDictionary[0][9..<(withoutDictionary[0].count - 5)])
        invalid("stream-piece-ends-inside-a-block", FuzzChecks.wrapStream([first]))
        invalid("stream-empty-piece", FuzzChecks.wrapStream([[]], type: unassigned))
        // 4 MiB + 1 zero bytes in one flushed piece of a few hundred bytes.
        let bomb = ZstdStreamCompressor(level: 3, dictionary: nil)
        let over = try #require([UInt8](repeating: 0, count: (4 << 20) + 1).withUnsafeBytes { bomb.flush($0) })
        invalid("stream-piece-over-limit", FuzzChecks.wrapStream([over], type: unassigned))
        invalid(
            "stream-window-over-128k",
            FuzzChecks.wrapStream(
                [[0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x40, 0x18, 0x00, 0x00, 0x61, 0x62, 0x63]], type: unassigned))
        invalid(
            "stream-declares-content-size",
            FuzzChecks.wrapStream(
                [[0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x03, 0x18, 0x00, 0x00, 0x61, 0x62, 0x63]], type: unassigned))
        invalid(
            "stream-content-checksum",
            FuzzChecks.wrapStream(
                [[0x28, 0xB5, 0x2F, 0xFD, 0x04, 0x38, 0x18, 0x00, 0x00, 0x61, 0x62, 0x63]], type: unassigned))
        invalid(
            "stream-unknown-dictionary",
            FuzzChecks.wrapStream(
                [[0x28, 0xB5, 0x2F, 0xFD, 0x03, 0x38, 0x39, 0x30, 0x00, 0x00, 0x18, 0x00, 0x00, 0x61, 0x62, 0x63]],
                type: unassigned))
        // A last block ends the zstd frame: a stream's frame never ends.
        invalid(
            "stream-ends-its-frame",
            FuzzChecks.wrapStream(
                [[0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x38, 0x19, 0x00, 0x00, 0x61, 0x62, 0x63]], type: unassigned))
        return out
    }

    /// Writes Spec/vectors/frames.json when SHOAL_WRITE_VECTORS=1.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SHOAL_WRITE_VECTORS"] == "1"))
    func writeFrameVectors() throws {
        var out = [[String: Any]]()
        func frame(_ name: String, _ type: FrameType, _ payload: [UInt8], _ mode: FrameEncoder.Options.Mode) throws {
            let bytes = try FrameEncoder(options: .init(mode: mode)).encode(type, payload: payload)
            let f = try FrameReader.decodeOne(bytes)
            out.append([
                "name": name, "kind": "frame", "hex": Hex.string(bytes),
                "json": [
                    "type": Int(type.rawValue), "compression": Self.compressionName(f.compression),
                    "payload": Hex.string(payload)
                ]
            ])
        }
        func invalid(_ name: String, _ kind: String, _ bytes: [UInt8]) {
            var error: WireError? = nil
            do {
                switch kind {
                case "frame": _ = try FrameReader.decodeOne(bytes)
                case "error_message": _ = try ErrorMessage(decoding: bytes)
                case "ping": _ = try PingMessage(decoding: bytes)
                default: _ = try GoodbyeMessage(decoding: bytes)
                }
            } catch let e { error = e }
            guard let error else { Issue.record("\(name) decoded"); return }
            out.append([
                "name": name, "kind": kind, "hex": Hex.string(bytes), "error": error.code.name, "offset": error.offset,
                "detail": error.detail
            ])
        }
        func compressedFrame(_ name: String, _ type: FrameType, _ zstd: [UInt8], _ compression: Frame.Compression)
            throws
        {
            let dictionaryID: UInt32? = if case .dictionary(let id) = compression { id } else { nil }
            let bytes = FrameTests.frame(
                type.rawValue, flags: compression.bits, payload: zstd, dictionaryID: dictionaryID)
            let f = try FrameReader.decodeOne(bytes)
            out.append([
                "name": name, "kind": "frame", "hex": Hex.string(bytes),
                "json": [
                    "type": Int(type.rawValue), "compression": Self.compressionName(f.compression),
                    "payload": Hex.string(f.payload)
                ]
            ])
        }
        // `changes` payloads around the notes corpus: one record, and a batch of eight.
        func changes(_ records: [Record]) -> [UInt8] {
            let incarnation = NodeID(high: 0x5EED_0000_0000_0001, low: 0x1111_1111_1111_1111)
            let token = ChangeToken(
                .init(
                    kind: .zone, incarnation: incarnation,
                    vector: records.reduce(VersionVector()) { $0.union($1.versionVector) }))
            return ChangesMessage(
                zone: NotesCorpus.zone, incarnation: incarnation, batch: 1, isCaughtUp: true, token: token,
                records: records
            ).encoded()
        }
        let record = changes([NotesCorpus.records(count: 1, seed: 11)[0]])
        let batch = changes(NotesCorpus.records(count: 8, seed: 12))
        let acknowledgement = AcknowledgementMessage(
            zone: NotesCorpus.zone, incarnation: NodeID(high: 0x5EED_0000_0000_0001, low: 0x1111_1111_1111_1111),
            batch: 1
        ).encoded()
        let hello = HelloMessage(
            node: NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111), name: "node-a", capabilities: 3,
            zones: [
                ZoneAnnouncement(
                    zone: NotesCorpus.zone, incarnation: NodeID(high: 0x5EED_0000_0000_0001, low: 0x1111_1111_1111_1111)
                )
            ]
        ).encoded()
        // Framing-only vectors use unassigned types (0x0D–0xFF), whose payloads are anything.
        let unassigned = FrameType(rawValue: 0x7F)
        try frame("hello-plain", .hello, hello, .none)
        try frame("ping-plain", .ping, PingMessage(nonce: 1).encoded(), .none)
        try frame("empty-payload", FrameType(rawValue: 0xFF), [], .none)
        try frame("unknown-type-plain", unassigned, [0xDE, 0xAD], .none)
        try frame("record-plain", .changes, record, .none)
        try frame("record-zstd", .changes, batch, .zstd)
        try frame("record-dictionary", .changes, record, .dictionary(BuiltInDictionaries.records))
        try frame("batch-dictionary", .changes, batch, .dictionary(BuiltInDictionaries.records))
        try frame("below-threshold-stays-plain", .acknowledgement, acknowledgement, .zstd)
        // A zstd frame whose own dictionary ID field is present and zero names no dictionary:
        // the frame header's decodes it.
        var zeroID = try #require(
            batch.withUnsafeBytes {
                ZstdCompressor().compress($0, level: 3, dictionary: BuiltInDictionaries.records, notBelow: batch.count)
            })
        let idAt = ZstdPayloadTests.dictionaryIDOffset(zeroID)
        for k in 0..<4 { zeroID[idAt + k] = 0 }
        try compressedFrame(
            "dictionary-zstd-id-field-zero", .changes, zeroID, .dictionary(id: BuiltInDictionaries.recordsID))
        // A hand-written zstd frame with a window descriptor: 1,280 bytes of content, a window of
        // 1 KiB + 2/8 = 1,280 bytes (the largest allowed for this content).
        let raw = [UInt8](repeating: 0x61, count: 1280)
        try compressedFrame(
            "zstd-window-equal-to-content", unassigned, ZstdPayloadTests.rawFrame(content: raw, window: 0x02), .zstd)
        let e = ErrorMessage(
            code: "requestRateLimited", retryAfterMilliseconds: 2500, message: "too many batches; retry later")
        out.append([
            "name": "error-with-retry", "kind": "error_message", "hex": Hex.string(e.encoded()),
            "json": ["code": e.code, "retry_after_ms": "2500", "message": e.message]
        ])
        let e2 = ErrorMessage(code: "zoneNotFound", message: "zone \"notes\" does not exist on this node")
        out.append([
            "name": "error-without-retry", "kind": "error_message", "hex": Hex.string(e2.encoded()),
            "json": ["code": e2.code, "message": e2.message]
        ])
        out.append([
            "name": "ping-max-nonce", "kind": "ping", "hex": Hex.string(PingMessage(nonce: .max).encoded()),
            "json": ["nonce": String(UInt64.max)]
        ])
        out.append([
            "name": "goodbye", "kind": "goodbye", "hex": Hex.string(GoodbyeMessage(reason: "shutting down").encoded()),
            "json": ["reason": "shutting down"]
        ])
        out.append([
            "name": "goodbye-empty-reason", "kind": "goodbye", "hex": Hex.string(GoodbyeMessage(reason: "").encoded()),
            "json": ["reason": ""]
        ])

        let good = FrameTests.frame(payload: [42])
        var b = good; b[0] = 0x47
        invalid("bad-magic", "frame", b)
        b = good; b[2] = 2
        invalid("unsupported-version", "frame", b)
        invalid("reserved-type-zero", "frame", FrameTests.frame(0, payload: [42]))
        invalid("reserved-flag-bit", "frame", FrameTests.frame(flags: 0x04, payload: [42]))
        invalid("reserved-compression-3", "frame", FrameTests.frame(flags: 0x03, payload: [42]))
        b = good; b[9] ^= 1
        invalid("checksum-mismatch", "frame", b)
        invalid("truncated-header", "frame", Array(good.prefix(5)))
        invalid("truncated-payload", "frame", Array(good.dropLast()))
        // Nothing is checked before the 9 header bytes are in, not even the magic.
        invalid("truncated-header-bad-magic", "frame", [0x47, 0x48, 0x01])
        invalid("trailing-bytes", "frame", good + [0])
        invalid("length-over-limit", "frame", FrameTests.frame(payload: [], length: (4 << 20) + 1))
        // The header is checked before the rest of the frame arrives: an over-limit length is
        // reported for 9 bytes, and its checksum is never read.
        invalid(
            "length-over-limit-header-only", "frame",
            Array(FrameTests.frame(payload: [], length: 0xFFFF_FFFF).prefix(9)))
        invalid("unknown-dictionary", "frame", FrameTests.frame(flags: 2, payload: [1, 2, 3], dictionaryID: 12345))
        // The dictionary ID is looked up before the checksum is compared.
        b = FrameTests.frame(flags: 2, payload: [1, 2, 3], dictionaryID: 12345); b[b.count - 1] ^= 0xFF
        invalid("unknown-dictionary-before-checksum", "frame", b)
        invalid("not-a-zstd-frame", "frame", FrameTests.frame(flags: 1, payload: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))
        // The checksum is compared before the payload is decompressed.
        b = FrameTests.frame(flags: 1, payload: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]); b[b.count - 1] ^= 0xFF
        invalid("checksum-before-decompression", "frame", b)
        let bomb = try #require(
            [UInt8](repeating: 0, count: 8 << 20).withUnsafeBytes {
                ZstdCompressor().compress($0, level: 19, dictionary: nil, notBelow: 1 << 20)
            })
        invalid("decompression-bomb", "frame", FrameTests.frame(flags: 1, payload: bomb))
        let z = try #require(
            batch.withUnsafeBytes { ZstdCompressor().compress($0, level: 3, dictionary: nil, notBelow: batch.count) })
        invalid("zstd-then-garbage", "frame", FrameTests.frame(flags: 1, payload: z + [0]))
        invalid(
            "zstd-skippable-frame", "frame",
            FrameTests.frame(flags: 1, payload: [0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 0x61, 0x62, 0x63]))
        // Frame header descriptor 0x00: no content size field (and a 1 KiB window), one raw block "abc".
        invalid(
            "zstd-without-content-size", "frame",
            FrameTests.frame(
                flags: 1, payload: [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x00, 0x19, 0x00, 0x00, 0x61, 0x62, 0x63]))
        invalid(
            "zstd-window-over-content", "frame",
            FrameTests.frame(0x7F, flags: 1, payload: ZstdPayloadTests.rawFrame(content: raw, window: 0x03)))
        // A single-segment frame: its content size field follows the descriptor; change its low byte.
        #expect(z[4] & 0x20 != 0)
        var lying = z
        lying[5] ^= 0x10
        invalid("zstd-content-size-wrong", "frame", FrameTests.frame(flags: 1, payload: lying))
        let named = try #require(
            batch.withUnsafeBytes {
                ZstdCompressor().compress($0, level: 3, dictionary: BuiltInDictionaries.records, notBelow: batch.count)
            })
        invalid("zstd-names-a-dictionary-in-compression-1", "frame", FrameTests.frame(flags: 1, payload: named))
        var otherID = named
        otherID[ZstdPayloadTests.dictionaryIDOffset(named)] ^= 0x03
        invalid(
            "zstd-dictionary-id-differs-from-header", "frame",
            FrameTests.frame(flags: 2, payload: otherID, dictionaryID: BuiltInDictionaries.recordsID))
        invalid("error-reserved-flag", "error_message", [1, 0x61, 2, 0])
        invalid("error-code-not-identifier", "error_message", [1, 0x31, 0, 0])
        invalid("error-empty-code", "error_message", [0, 0, 0])
        invalid(
            "error-code-over-maxNameBytes", "error_message",
            [0x80, 0x02] + [UInt8](repeating: 0x61, count: 256) + [0, 0])
        invalid("error-retry-after-missing", "error_message", [1, 0x61, 1])
        invalid("error-message-not-utf8", "error_message", [1, 0x61, 0, 1, 0xC0])
        invalid("ping-overlong-varint", "ping", [0x80, 0x00])
        invalid("ping-empty", "ping", [])
        invalid("goodbye-empty-payload", "goodbye", [])
        invalid("goodbye-trailing-byte", "goodbye", [1, 0x61, 0])
        invalid("goodbye-invalid-utf8", "goodbye", [1, 0xFF])
        out += try Self.streamVectors([record, acknowledgement, changes([NotesCorpus.records(count: 2, seed: 13)[1]])])
        let data = try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: FrameVector.file)
    }
}
