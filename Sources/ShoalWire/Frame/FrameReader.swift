// FrameReader: reads frames from a byte stream split anywhere, buffering at most one frame.

/// Reads frames from a stream of bytes that arrive in arbitrary pieces, as from a socket.
///
/// Feed bytes with ``next(from:)`` (or ``frames(in:)``); each call consumes input only up to the
/// end of the frame in progress, so the reader never holds more than one frame — at most
/// ``WireLimits/maxFramePayloadBytes`` plus 17 bytes of header, dictionary ID and checksum. A
/// header is checked as soon as its 9 bytes are in (magic, version, type, flags, length against
/// the limit), so a hostile length is refused before any payload is buffered; once the whole frame
/// is in, the dictionary is looked up, then the checksum checked, then the payload decompressed
/// (Spec/wire-format.md §13.2).
/// Compressed payloads are decompressed only up to the size they declare, itself bounded by the
/// limit; compression-3 payloads (the sender's zstd stream, accepted only with
/// ``acceptsStreamCompression``) only up to the limit, in order, each checksum chained to the
/// previous one's. Frames of unknown types are returned like any other; skip them.
///
/// After an error the stream is out of step: the reader stays failed and every later call
/// throws the same error. Close the connection (sending an error frame first).
public struct FrameReader {
    /// The limits; `maxFramePayloadBytes` bounds both the wire payload and its decompressed size.
    public let limits: WireLimits
    /// The dictionaries compressed frames may name.
    public let dictionaries: ZstdDictionarySet

    private var pending: [UInt8] = []
    private var frameSize: Int? = nil
    private var streamOffset = 0
    private var failure: WireError? = nil
    private let decompressor = ZstdDecompressor()
    private let stream = ZstdStreamDecompressor()

    /// Whether frames may use compression 3, the sender's zstd stream (Spec/wire-format.md
    /// §14.3). Set it once this node's `hello` has announced the capability
    /// (``HelloMessage/streamCompressionCapability``); until then compression 3 is refused as
    /// reserved (`unknownRequiredTag`), as by a reader that knows nothing of it. Default false.
    ///
    /// A reader's stream state is a reference: copies of a reader share it, so keep one reader
    /// per connection direction.
    public var acceptsStreamCompression = false

    /// Creates a reader; `acceptsStreamCompression` allows compression 3 from the start.
    public init(
        limits: WireLimits = .default, dictionaries: ZstdDictionarySet = .builtIn,
        acceptsStreamCompression: Bool = false
    ) {
        self.limits = limits
        self.dictionaries = dictionaries
        self.acceptsStreamCompression = acceptsStreamCompression
    }

    /// Bytes libzstd holds for this reader's stream context (0 until a compression-3 frame came).
    package var streamMemoryBytes: Int { stream.memoryBytes }

    /// Bytes held for the frame in progress.
    public var bufferedByteCount: Int { pending.count }

    /// Bytes of storage held for the frame in progress (at least ``bufferedByteCount``).
    package var reservedByteCount: Int { pending.capacity }

    /// Storage reserved for a frame when its header arrives: a declared length beyond this is
    /// paid for only as its bytes come in, so a peer that sends headers and stalls holds
    /// little memory (Spec/wire-format.md §13.2).
    package static let initialReservation = 64 << 10

    /// Bytes of the stream consumed by complete frames so far (error offsets count from the
    /// start of the stream).
    public var consumedByteCount: Int { streamOffset }

    /// Consumes bytes from the front of `input` up to the end of the frame in progress and
    /// returns that frame once it is complete; nil when `input` ran out first (call again with
    /// more bytes). Bytes of later frames stay in `input`.
    /// - Throws: ``WireError`` for a malformed frame; the reader then stays failed.
    public mutating func next(from input: inout UnsafeRawBufferPointer) throws(WireError) -> Frame? {
        if let failure { throw failure }
        do {
            return try step(&input)
        } catch {
            failure = error
            throw error
        }
    }

    /// Consumes all of `bytes` and returns every frame they complete, in order.
    /// - Throws: ``WireError`` for a malformed frame; the reader then stays failed.
    public mutating func frames(in bytes: [UInt8]) throws(WireError) -> [Frame] {
        try Borrowed.bytes(of: bytes) { (raw) throws(WireError) -> [Frame] in
            var input = raw
            var out = [Frame]()
            while let f = try next(from: &input) { out.append(f) }
            return out
        }
    }

    /// Decodes `bytes` as exactly one frame.
    /// - Throws: ``WireError`` for a malformed frame, `truncated` when it is incomplete and
    ///   `trailingBytes` when bytes follow it.
    public static func decodeOne(
        _ bytes: [UInt8], limits: WireLimits = .default, dictionaries: ZstdDictionarySet = .builtIn
    ) throws(WireError) -> Frame {
        var reader = FrameReader(limits: limits, dictionaries: dictionaries)
        return try Borrowed.bytes(of: bytes) { (raw) throws(WireError) -> Frame in
            var input = raw
            guard let frame = try reader.next(from: &input) else {
                throw WireError(
                    .truncated, at: bytes.count,
                    "frame is incomplete: \(bytes.count) byte(s) given, \(reader.frameSize.map { "\($0) needed" } ?? "at least \(FrameLayout.headerSize) needed")"
                )
            }
            guard input.isEmpty else {
                throw WireError(
                    .trailingBytes, at: reader.streamOffset, "\(input.count) byte(s) after the end of the frame")
            }
            return frame
        }
    }

    private mutating func step(_ input: inout UnsafeRawBufferPointer) throws(WireError) -> Frame? {
        // Fast path: nothing buffered and the whole frame is in `input`: decode in place.
        if pending.isEmpty, input.count >= FrameLayout.headerSize {
            let size = try checkHeader(UnsafeRawBufferPointer(rebasing: input[0..<FrameLayout.headerSize]))
            if input.count >= size {
                let frame = try decodeFrame(UnsafeRawBufferPointer(rebasing: input[0..<size]))
                input = UnsafeRawBufferPointer(rebasing: input[size...])
                streamOffset &+= size
                return frame
            }
        }
        // Slow path: gather the header, then the rest of the frame, into `pending`.
        if frameSize == nil {
            take(FrameLayout.headerSize &- pending.count, from: &input)
            guard pending.count == FrameLayout.headerSize else { return nil }
            let header = try Borrowed.bytes(of: pending) { (h) throws(WireError) -> Int in try checkHeader(h) }
            frameSize = header
            pending.reserveCapacity(min(header, Self.initialReservation))
        }
        guard let size = frameSize else { return nil }
        take(size &- pending.count, from: &input)
        guard pending.count == size else { return nil }
        let frame = try Borrowed.bytes(of: pending) { (raw) throws(WireError) -> Frame in try decodeFrame(raw) }
        streamOffset &+= size
        pending = []
        frameSize = nil
        return frame
    }

    private mutating func take(_ wanted: Int, from input: inout UnsafeRawBufferPointer) {
        let n = min(max(wanted, 0), input.count)
        guard n > 0 else { return }
        pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[0..<n]))
        input = UnsafeRawBufferPointer(rebasing: input[n...])
    }

    /// Checks the 9 header bytes and returns the whole frame's size.
    private func checkHeader(_ h: UnsafeRawBufferPointer) throws(WireError) -> Int {
        var r = WireReader(h, limits: limits, base: streamOffset)
        let m0 = try r.readByte("frame magic"), m1 = try r.readByte("frame magic")
        guard m0 == FrameLayout.magic.0, m1 == FrameLayout.magic.1 else {
            throw WireError(
                .badMagic, at: streamOffset,
                "a frame starts with \"SH\" (0x53 0x48), found 0x\(Hex.string([m0])) 0x\(Hex.string([m1])); is the peer speaking Shoal?"
            )
        }
        let version = try r.readByte("frame version")
        guard version == FrameLayout.version else {
            throw WireError(
                .unsupportedVersion, at: streamOffset &+ 2,
                "frame protocol version \(version); this Shoal speaks version \(FrameLayout.version)")
        }
        let type = try r.readByte("frame type")
        guard type != 0 else {
            throw WireError(.invalidValue, at: streamOffset &+ 3, "frame type 0 is reserved")
        }
        let flags = try r.readByte("frame flags")
        guard flags & ~FrameLayout.compressionMask == 0 else {
            throw WireError(
                .unknownRequiredTag, at: streamOffset &+ 4,
                "frame flags 0x\(Hex.string([flags])) use reserved bits; this frame needs a newer Shoal")
        }
        guard flags & FrameLayout.compressionMask != 3 || acceptsStreamCompression else {
            throw WireError(
                .unknownRequiredTag, at: streamOffset &+ 4,
                "frame flags 0x\(Hex.string([flags])) use compression 3 (a zstd stream), which this reader did not announce in its hello (capability bit 3)"
            )
        }
        let length = try r.readFixed32("frame payload length")
        guard length <= UInt32(clamping: limits.maxFramePayloadBytes) else {
            throw WireError(
                .limitExceeded, at: streamOffset &+ 5,
                "frame payload is \(length) bytes, over the limit of \(limits.maxFramePayloadBytes) (WireLimits.maxFramePayloadBytes)"
            )
        }
        let dictionaryBytes = flags & FrameLayout.compressionMask == 2 ? FrameLayout.dictionaryIDSize : 0
        return FrameLayout.headerSize &+ dictionaryBytes &+ Int(length) &+ FrameLayout.trailerSize
    }

    /// Decodes one complete frame whose header `checkHeader` accepted.
    private func decodeFrame(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Frame {
        let bodyEnd = bytes.count &- FrameLayout.trailerSize
        var r = WireReader(bytes, limits: limits, base: streamOffset)
        r.position = FrameLayout.typeOffset
        let type = FrameType(rawValue: try r.readByte("frame type"))
        let flags = try r.readByte("frame flags")
        let length = Int(try r.readFixed32("frame payload length"))
        var compression = Frame.Compression.none
        var dictionary: ZstdDictionary? = nil
        switch flags & FrameLayout.compressionMask {
        case 1: compression = .zstd
        case 3: compression = .stream
        case 2:
            let at = r.offset
            let id = try r.readFixed32("dictionary ID")
            guard let d = dictionaries[id] else {
                throw WireError(
                    .unknownDictionary, at: at,
                    "frame is compressed with dictionary \(id), which this node does not hold (it holds \(dictionaries.byID.keys.sorted()))"
                )
            }
            dictionary = d
            compression = .dictionary(id: id)
        default: break
        }
        let body = try r.readRaw(length, "frame payload")
        let crcAt = r.offset
        let stored = try r.readFixed32("frame checksum")
        // A compression-3 frame's checksum continues the previous one's (§13.1): a stream frame
        // lost, repeated or reordered fails here, before its payload reaches the decompressor.
        let chained = compression == .stream
        let computed = CRC32C.checksum(
            UnsafeRawBufferPointer(rebasing: bytes[0..<bodyEnd]), continuing: chained ? stream.checksum : 0)
        guard stored == computed else {
            let why =
                chained
                ? "the frame was corrupted in transit, or a compression-3 frame before it was lost or reordered"
                : "the frame was corrupted in transit"
            throw WireError(
                .checksumMismatch, at: crcAt,
                "frame checksum is 0x\(Hex.string(UInt64(stored)).suffix(8)) but its bytes give 0x\(Hex.string(UInt64(computed)).suffix(8)); \(why)"
            )
        }
        let payload: [UInt8]
        if compression == .none {
            payload = [UInt8](body)
        } else if chained {
            stream.checksum = stored
            payload = try stream.decompress(
                body, base: crcAt &- length, maxBytes: limits.maxFramePayloadBytes, dictionaries: dictionaries)
        } else {
            payload = try decompressor.decompress(
                body, base: crcAt &- length, maxBytes: limits.maxFramePayloadBytes, dictionary: dictionary)
        }
        return Frame(type: type, payload: payload, compression: compression)
    }
}
