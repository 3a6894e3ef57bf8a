// FuzzChecks+Frames: the frame checks — one frame, a stream in any split, and raw zstd payloads.

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
    /// given and again with every complete frame's checksum repaired.
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

    /// A frame of type `changes` around an already compressed `payload`, with a correct checksum.
    package static func wrap(_ payload: [UInt8], compression: Frame.Compression) -> [UInt8] {
        var out: [UInt8] = [FrameLayout.magic.0, FrameLayout.magic.1, FrameLayout.version, FrameType.changes.rawValue]
        var dictionaryID: UInt32? = nil
        switch compression {
        case .none: out.append(0)
        case .zstd: out.append(1)
        case .dictionary(let id): out.append(2); dictionaryID = id
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
        while out.count &- at >= FrameLayout.headerSize, out[at] == FrameLayout.magic.0, out[at &+ 1] == FrameLayout.magic.1 {
            let flags = out[at &+ FrameLayout.flagsOffset]
            var length = 0
            for k in 0..<4 { length |= Int(out[at &+ FrameLayout.lengthOffset &+ k]) << (8 * k) }
            let idBytes = flags & FrameLayout.compressionMask == 2 ? FrameLayout.dictionaryIDSize : 0
            let size = FrameLayout.headerSize &+ idBytes &+ length &+ FrameLayout.trailerSize
            guard size <= out.count &- at else { break }
            let crc = out.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[at..<(at &+ size &- 4)])) }
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
            throw Failure(target, "frame payload of \(frame.payload.count) bytes is over maxFramePayloadBytes \(limits.maxFramePayloadBytes)")
        }
        let plain = try reencode(target, frame, mode: .none, limits: limits)
        if frame.compression == .none, plain != wire {
            throw Failure(target, "not canonical: an uncompressed frame re-encodes to different bytes\n  input:   \(hex(wire))\n  encoded: \(hex(plain))")
        }
        switch frame.compression {
        case .none: break
        case .zstd: _ = try reencode(target, frame, mode: .zstd, limits: limits)
        case .dictionary(let id):
            guard id == BuiltInDictionaries.recordsID else {
                throw Failure(target, "frame decoded with dictionary \(id), which the reader does not hold")
            }
            _ = try reencode(target, frame, mode: .dictionary(BuiltInDictionaries.records), limits: limits)
        }
    }

    /// Encodes `frame` with `mode` and checks that the result decodes to the same type and payload.
    static func reencode(_ target: String, _ frame: Frame, mode: FrameEncoder.Options.Mode, limits: WireLimits) throws(Failure) -> [UInt8] {
        var options = FrameEncoder.Options(mode: mode)
        options.limits = limits
        let bytes: [UInt8]
        let back: Frame
        do {
            bytes = try FrameEncoder(options: options).encode(frame.type, payload: frame.payload)
        } catch {
            throw Failure(target, "a decoded frame (type \(frame.type), \(frame.payload.count) bytes) does not re-encode: \(error)")
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
            throw Failure(t, "split delivery yields \(split.frames.count) frame(s), whole delivery \(whole.frames.count), or different ones")
        }
        guard whole.error?.code == split.error?.code, whole.error?.offset == split.error?.offset else {
            throw Failure(t, "split delivery ends with \(split.error.map { "\($0)" } ?? "no error"), whole delivery with \(whole.error.map { "\($0)" } ?? "no error")")
        }
        // After an error the reader is failed and what it still buffers is of no consequence.
        guard whole.consumed == split.consumed, whole.error != nil || whole.buffered == split.buffered else {
            throw Failure(t, "split delivery leaves \(split.buffered) buffered / \(split.consumed) consumed, whole delivery \(whole.buffered) / \(whole.consumed)")
        }
        if let e = whole.error { try checkOffset(t, e, inputCount: bytes.count) }
        for (frame, range) in whole.frames {
            try checkFrame(t, frame, wire: Array(bytes[range]), limits: limits)
        }
    }

    /// Feeds `bytes` to one reader in pieces of the given sizes.
    static func read(_ target: String, _ bytes: [UInt8], pieces: [Int], limits: WireLimits) throws(Failure) -> StreamResult {
        var reader = FrameReader(limits: limits)
        var result = StreamResult()
        let bound = limits.maxFramePayloadBytes &+ FrameLayout.headerSize &+ FrameLayout.dictionaryIDSize &+ FrameLayout.trailerSize
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
                throw Failure(target, "reader buffers \(reader.bufferedByteCount) bytes, over one frame's bound of \(bound)")
            }
        }
        if let first = result.error {
            // A failed reader stays failed, with the same error.
            let again: WireError? = [UInt8]().withUnsafeBytes { (raw) -> WireError? in
                var input = raw
                do throws(WireError) { _ = try reader.next(from: &input); return nil } catch { return error }
            }
            guard again == first else {
                throw Failure(target, "after \(first) the reader answers \(again.map { "\($0)" } ?? "no error") instead of the same error")
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
