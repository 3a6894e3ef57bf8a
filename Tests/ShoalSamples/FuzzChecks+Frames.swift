// FuzzChecks+Frames: the frame checks — one frame, a stream in any split, raw zstd payloads and zstd streams.

package import ShoalWire

extension FuzzChecks {
    /// The limits of `fuzz-compressed`: a 64 KiB frame limit, so that libFuzzer's
    /// `-malloc_limit_mb=1` catches any allocation the limit should have prevented.
    package static let boundedLimits: WireLimits = {
        var l = WireLimits()
        l.maxFramePayloadBytes = 64 << 10
        return l
    }()

    /// `FrameReader.decodeOne` with the built-in dictionaries, on the input as given and again
    /// with its checksum repaired (so mutations reach the payload and the decompressor).
    /// - Throws: ``Failure`` when a property breaks.
    package static func frame(_ bytes: [UInt8]) throws(Failure) {
        try decodeOne(Target.frame.rawValue, bytes, limits: .default)
        let repaired = repairingChecksums(bytes)
        if repaired != bytes { try decodeOne(Target.frame.rawValue, repaired, limits: .default) }
    }

    /// `FrameReader` fed the input in pieces whose sizes derive from the input, as a socket
    /// delivers bytes, compared with the same reader fed everything at once. Runs on the input as
    /// given and again with every complete frame's checksum repaired (compression-3 frames'
    /// chained, §13.1). The reader accepts compression 3, as after a hello that announced it.
    /// - Throws: ``Failure`` when a property breaks.
    package static func frameStream(_ bytes: [UInt8]) throws(Failure) {
        try stream(bytes)
        let repaired = repairingChecksums(bytes)
        if repaired != bytes { try stream(repaired) }
    }

    /// The input is `mode` (one byte: even for plain zstd, odd for the built-in dictionary) then
    /// a zstd frame; the check wraps it in a valid frame header and checksum and decodes it with
    /// ``boundedLimits``, so every input reaches the decompressor.
    /// - Throws: ``Failure`` when a property breaks.
    package static func compressed(_ bytes: [UInt8]) throws(Failure) {
        guard let mode = bytes.first else { return }
        let payload = Array(bytes.dropFirst())
        let compression: Frame.Compression = mode & 1 == 0 ? .zstd : .dictionary(id: BuiltInDictionaries.recordsID)
        try decodeOne(Target.compressed.rawValue, wrap(payload, compression: compression), limits: boundedLimits)
    }

    /// The input is a sequence of pieces of a zstd stream, each a 2-byte little-endian length and
    /// that many bytes (the last piece takes what is left); the check wraps each in a
    /// compression-3 frame with its chained checksum (``wrapStream(_:)``) and reads them with
    /// ``boundedLimits``, whole and in pieces, so every input reaches the stream decompressor.
    /// The payloads decoded re-encode through a streaming encoder and read back the same.
    /// - Throws: ``Failure`` when a property breaks.
    package static func compressedStream(_ bytes: [UInt8]) throws(Failure) {
        let t = Target.compressedStream.rawValue
        let wire = wrapStream(streamPieces(bytes))
        let limits = boundedLimits
        let whole = try read(t, wire, pieces: [wire.count], limits: limits)
        let split = try read(t, wire, pieces: pieceSizes(for: wire), limits: limits)
        guard whole.frames.map(\.frame) == split.frames.map(\.frame), whole.error?.code == split.error?.code,
            whole.error?.offset == split.error?.offset
        else {
            throw Failure(
                t,
                "split delivery differs from whole delivery: \(split.frames.count) against \(whole.frames.count) frame(s), \(split.error.map { "\($0)" } ?? "no error") against \(whole.error.map { "\($0)" } ?? "no error")"
            )
        }
        if let e = whole.error { try checkOffset(t, e, inputCount: wire.count) }
        let payloads = whole.frames.map(\.frame.payload)
        for p in payloads where p.count > limits.maxFramePayloadBytes {
            throw Failure(
                t, "a stream payload of \(p.count) bytes is over maxFramePayloadBytes \(limits.maxFramePayloadBytes)")
        }
        var options = FrameEncoder.Options(mode: .zstd)
        options.limits = limits
        let encoder = FrameEncoder(streamingWith: options)
        var reader = FrameReader(limits: limits, acceptsStreamCompression: true)
        let back: [Frame]
        do throws(WireError) {
            var again = [UInt8]()
            for p in payloads { again += try encoder.encode(.changes, payload: p) }
            back = try reader.frames(in: again)
        } catch {
            throw Failure(t, "decoded stream payloads do not re-encode and read back: \(error)")
        }
        guard back.map(\.payload) == payloads else {
            throw Failure(t, "decoded stream payloads re-encode to a stream that reads back differently")
        }
    }

    /// The pieces of a `fuzz-stream` input: 2-byte little-endian length, then that many bytes.
    package static func streamPieces(_ bytes: [UInt8]) -> [[UInt8]] {
        var out = [[UInt8]]()
        var at = 0
        while at < bytes.count {
            guard bytes.count &- at >= 2 else { out.append([bytes[at]]); break }
            let n = Int(bytes[at]) | Int(bytes[at &+ 1]) << 8
            let end = min(bytes.count, at &+ 2 &+ n)
            out.append(Array(bytes[(at &+ 2)..<end]))
            at = end
        }
        return out
    }

    /// A `fuzz-stream` input holding `pieces` (the inverse of ``streamPieces(_:)``).
    package static func streamInput(_ pieces: [[UInt8]]) -> [UInt8] {
        pieces.flatMap { p in [UInt8(truncatingIfNeeded: p.count), UInt8(truncatingIfNeeded: p.count >> 8)] + p }
    }

    /// Frames of type `changes` in compression 3 around already compressed stream `pieces`, each
    /// checksum continuing the previous one's (Spec/wire-format.md §13.1).
    package static func wrapStream(_ pieces: [[UInt8]], type: FrameType = .changes) -> [UInt8] {
        var out = [UInt8]()
        var chain: UInt32 = 0
        for piece in pieces {
            var frame: [UInt8] = [FrameLayout.magic.0, FrameLayout.magic.1, FrameLayout.version, type.rawValue, 3]
            appendLittleEndian(UInt32(truncatingIfNeeded: piece.count), to: &frame)
            frame += piece
            chain = frame.withUnsafeBytes { CRC32C.checksum($0, continuing: chain) }
            appendLittleEndian(chain, to: &frame)
            out += frame
        }
        return out
    }

    /// A frame of type `changes` around an already compressed `payload`, with a correct checksum.
    package static func wrap(_ payload: [UInt8], compression: Frame.Compression) -> [UInt8] {
        var out: [UInt8] = [FrameLayout.magic.0, FrameLayout.magic.1, FrameLayout.version, FrameType.changes.rawValue]
        var dictionaryID: UInt32? = nil
        switch compression {
        case .none: out.append(0)
        case .zstd: out.append(1)
        case .dictionary(let id): out.append(2); dictionaryID = id
        case .stream: out.append(3)
        }
        appendLittleEndian(UInt32(truncatingIfNeeded: payload.count), to: &out)
        if let dictionaryID { appendLittleEndian(dictionaryID, to: &out) }
        out += payload
        appendLittleEndian(CRC32C.checksum(out), to: &out)
        return out
    }

    /// `bytes` with the checksum of every complete, plausible frame recomputed.
    package static func repairingChecksums(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        var at = 0
        var chain: UInt32 = 0
        while out.count &- at >= FrameLayout.headerSize, out[at] == FrameLayout.magic.0,
            out[at &+ 1] == FrameLayout.magic.1
        {
            let flags = out[at &+ FrameLayout.flagsOffset]
            var length = 0
            for k in 0..<4 { length |= Int(out[at &+ FrameLayout.lengthOffset &+ k]) << (8 * k) }
            let idBytes = flags & FrameLayout.compressionMask == 2 ? FrameLayout.dictionaryIDSize : 0
            let size = FrameLayout.headerSize &+ idBytes &+ length &+ FrameLayout.trailerSize
            guard size <= out.count &- at else { break }
            let stream = flags & FrameLayout.compressionMask == 3
            let crc = out.withUnsafeBytes {
                CRC32C.checksum(
                    UnsafeRawBufferPointer(rebasing: $0[at..<(at &+ size &- 4)]), continuing: stream ? chain : 0)
            }
            if stream { chain = crc }
            for k in 0..<4 { out[at &+ size &- 4 &+ k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
            at &+= size
        }
        return out
    }

    static func decodeOne(_ target: String, _ bytes: [UInt8], limits: WireLimits) throws(Failure) {
        let frame: Frame
        do {
            frame = try FrameReader.decodeOne(bytes, limits: limits)
        } catch {
            try checkOffset(target, error, inputCount: bytes.count)
            return
        }
        try checkFrame(target, frame, wire: bytes, limits: limits)
    }

    /// A decoded frame is within the limit, re-encodes to its wire bytes when it travelled plain,
    /// and re-encodes (plain and in its own compression mode) to frames that decode to it.
    static func checkFrame(_ target: String, _ frame: Frame, wire: [UInt8], limits: WireLimits) throws(Failure) {
        guard frame.payload.count <= limits.maxFramePayloadBytes else {
            throw Failure(
                target,
                "frame payload of \(frame.payload.count) bytes is over maxFramePayloadBytes \(limits.maxFramePayloadBytes)"
            )
        }
        let plain = try reencode(target, frame, mode: .none, limits: limits)
        if frame.compression == .none, plain != wire {
            throw Failure(
                target,
                "not canonical: an uncompressed frame re-encodes to different bytes\n  input:   \(hex(wire))\n  encoded: \(hex(plain))"
            )
        }
        switch frame.compression {
        case .none: break
        case .zstd: _ = try reencode(target, frame, mode: .zstd, limits: limits)
        case .dictionary(let id):
            guard id == BuiltInDictionaries.recordsID else {
                throw Failure(target, "frame decoded with dictionary \(id), which the reader does not hold")
            }
            _ = try reencode(target, frame, mode: .dictionary(BuiltInDictionaries.records), limits: limits)
        case .stream:
            // A stream piece decodes only after the ones before it: `compressedStream` re-encodes
            // whole sequences.
            break
        }
    }

    /// Encodes `frame` with `mode` and checks that the result decodes to the same type and payload.
    static func reencode(_ target: String, _ frame: Frame, mode: FrameEncoder.Options.Mode, limits: WireLimits)
        throws(Failure) -> [UInt8]
    {
        var options = FrameEncoder.Options(mode: mode)
        options.limits = limits
        let bytes: [UInt8]
        let back: Frame
        do {
            bytes = try FrameEncoder(options: options).encode(frame.type, payload: frame.payload)
        } catch {
            throw Failure(
                target,
                "a decoded frame (type \(frame.type), \(frame.payload.count) bytes) does not re-encode: \(error)")
        }
        do {
            back = try FrameReader.decodeOne(bytes, limits: limits)
        } catch {
            throw Failure(target, "a re-encoded frame (mode \(mode)) does not decode: \(error)")
        }
        guard back.type == frame.type, back.payload == frame.payload else {
            throw Failure(target, "a re-encoded frame (mode \(mode)) decodes to a different type or payload")
        }
        return bytes
    }

    /// What a reader made of a stream: the frames with their wire bytes, then an error or the
    /// bytes still buffered.
    struct StreamResult {
        var frames: [(frame: Frame, range: Range<Int>)] = []
        var error: WireError? = nil
        var buffered = 0
        var consumed = 0
    }

    static func stream(_ bytes: [UInt8]) throws(Failure) {
        let t = Target.frameStream.rawValue
        let limits = WireLimits.default
        let whole = try read(t, bytes, pieces: [bytes.count], limits: limits)
        let split = try read(t, bytes, pieces: pieceSizes(for: bytes), limits: limits)
        guard whole.frames.map(\.frame) == split.frames.map(\.frame) else {
            throw Failure(
                t,
                "split delivery yields \(split.frames.count) frame(s), whole delivery \(whole.frames.count), or different ones"
            )
        }
        guard whole.error?.code == split.error?.code, whole.error?.offset == split.error?.offset else {
            throw Failure(
                t,
                "split delivery ends with \(split.error.map { "\($0)" } ?? "no error"), whole delivery with \(whole.error.map { "\($0)" } ?? "no error")"
            )
        }
        // After an error the reader is failed and what it still buffers is of no consequence.
        guard whole.consumed == split.consumed, whole.error != nil || whole.buffered == split.buffered else {
            throw Failure(
                t,
                "split delivery leaves \(split.buffered) buffered / \(split.consumed) consumed, whole delivery \(whole.buffered) / \(whole.consumed)"
            )
        }
        if let e = whole.error { try checkOffset(t, e, inputCount: bytes.count) }
        for (frame, range) in whole.frames {
            try checkFrame(t, frame, wire: Array(bytes[range]), limits: limits)
        }
    }

    /// Feeds `bytes` to one reader in pieces of the given sizes.
    static func read(_ target: String, _ bytes: [UInt8], pieces: [Int], limits: WireLimits) throws(Failure)
        -> StreamResult
    {
        var reader = FrameReader(limits: limits, acceptsStreamCompression: true)
        var result = StreamResult()
        let bound =
            limits.maxFramePayloadBytes &+ FrameLayout.headerSize &+ FrameLayout.dictionaryIDSize
            &+ FrameLayout.trailerSize
        var at = 0
        for n in pieces where result.error == nil {
            let piece = Array(bytes[at..<(at &+ n)])
            at &+= n
            piece.withUnsafeBytes { raw in
                var input = raw
                do throws(WireError) {
                    while true {
                        let before = reader.consumedByteCount
                        guard let f = try reader.next(from: &input) else { break }
                        result.frames.append((f, before..<reader.consumedByteCount))
                    }
                } catch {
                    result.error = error
                }
            }
            guard reader.bufferedByteCount <= bound else {
                throw Failure(
                    target, "reader buffers \(reader.bufferedByteCount) bytes, over one frame's bound of \(bound)")
            }
        }
        if let first = result.error {
            // A failed reader stays failed, with the same error.
            let again: WireError? = [UInt8]().withUnsafeBytes { (raw) -> WireError? in
                var input = raw
                do throws(WireError) { _ = try reader.next(from: &input); return nil } catch { return error }
            }
            guard again == first else {
                throw Failure(
                    target,
                    "after \(first) the reader answers \(again.map { "\($0)" } ?? "no error") instead of the same error"
                )
            }
        }
        result.buffered = reader.bufferedByteCount
        result.consumed = reader.consumedByteCount
        return result
    }

    /// Piece sizes covering `bytes`, drawn from a generator seeded by the bytes themselves: a
    /// mix of tiny pieces (header bytes one at a time) and large ones.
    static func pieceSizes(for bytes: [UInt8]) -> [Int] {
        var seed: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in bytes { seed = (seed ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        var rng = SplitMix64(seed: seed)
        var sizes = [Int]()
        var left = bytes.count
        while left > 0 {
            let cap = rng.next() % 2 == 0 ? 16 : max(1, bytes.count / 2)
            let n = min(left, 1 &+ Int(rng.next() % UInt64(cap)))
            sizes.append(n)
            left &-= n
        }
        return sizes
    }

    static func appendLittleEndian(_ v: UInt32, to out: inout [UInt8]) {
        for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(k)))) }
    }
}
