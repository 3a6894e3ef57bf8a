// FrameEncoder: writes frames, compressing a payload only when it is large enough and it pays.

/// Writes frames: header, payload (compressed when worthwhile), CRC-32C.
///
/// A payload is compressed only when it is at least ``Options/threshold`` bytes and compression
/// saves at least ``Options/minimumSavingsPercent`` percent (counting the dictionary ID); otherwise
/// it goes out plain. The encoder keeps one zstd context for all its frames, so it belongs to one
/// connection direction or one file writer at a time (it is not `Sendable`).
///
/// An encoder made with ``init(streamingWith:)`` instead sends every compressible payload of
/// ``Options/streamThreshold`` to ``Options/streamMaximum`` bytes as the next piece of one zstd stream (compression 3,
/// Spec/wire-format.md §14.3), which compresses small payloads against the ones before them. Use
/// it only on a connection whose peer announced ``HelloMessage/streamCompressionCapability``.
public struct FrameEncoder {
    /// How an encoder compresses.
    public struct Options: Sendable {
        /// Which compression to try.
        public enum Mode: Sendable {
            /// Never compress.
            case none
            /// zstd without a dictionary.
            case zstd
            /// zstd with a dictionary the peer also holds.
            case dictionary(ZstdDictionary)
        }

        /// Which compression to try. Default: the built-in records dictionary, which the
        /// benchmark chose (Spec/wire-format.md, "Compression", has the numbers).
        public var mode: Mode = .dictionary(BuiltInDictionaries.records)
        /// zstd level, 1 (fast) to 19 (small). Default 3.
        public var level: Int32 = 3
        /// Payloads smaller than this many bytes go plain. Default 64.
        public var threshold: Int = 64
        /// Compressed output must save at least this percentage to be used. Default 3.
        public var minimumSavingsPercent: Int = 3
        /// In a streaming encoder, payloads smaller than this many bytes go plain and leave the
        /// stream untouched; the others all go into the stream, without a savings test (once in
        /// the stream's history a payload must be sent compressed). Default 1: every non-empty
        /// payload (Spec/wire-format.md §14.3 has the measurement).
        public var streamThreshold: Int = 1
        /// In a streaming encoder, payloads larger than this many bytes are compressed on their
        /// own (compression 1 or 2, with the threshold and savings rules above) and leave the
        /// stream untouched: a large batch compresses better alone with the dictionary and
        /// level 3's full tables than in the stream's 128 KiB window. Default 64 KiB.
        public var streamMaximum: Int = 64 << 10
        /// The limits; a payload over `maxFramePayloadBytes` is refused.
        public var limits: WireLimits = .default

        /// The default options.
        public init() {}

        /// Default options with `mode`.
        public init(mode: Mode) { self.mode = mode }
    }

    /// The options in use.
    public let options: Options
    private let compressor: ZstdCompressor
    private let stream: ZstdStreamCompressor?

    /// Creates an encoder.
    public init(options: Options = Options()) {
        self.options = options
        self.compressor = ZstdCompressor()
        self.stream = nil
    }

    /// Creates an encoder that sends compressible payloads as one zstd stream (compression 3),
    /// started from the dictionary of `options.mode` (none for `.zstd`; mode `.none` never
    /// compresses). Payloads too large for a stream piece to stay within the frame limit are
    /// compressed on their own, as ``init(options:)`` does. Use it only towards a peer that
    /// announced ``HelloMessage/streamCompressionCapability``, and only for that peer's
    /// connection: its frames must arrive in order.
    public init(streamingWith options: Options) {
        self.options = options
        self.compressor = ZstdCompressor()
        switch options.mode {
        case .none: stream = nil
        case .zstd: stream = ZstdStreamCompressor(level: options.level, dictionary: nil)
        case .dictionary(let d): stream = ZstdStreamCompressor(level: options.level, dictionary: d)
        }
    }

    /// Bytes libzstd holds for this encoder's stream context (0 without a stream).
    package var streamMemoryBytes: Int { stream?.memoryBytes ?? 0 }

    /// Encodes a frame of `type` carrying `payload`.
    /// - Throws: ``WireError`` `limitExceeded` when the payload is over
    ///   `options.limits.maxFramePayloadBytes`; split it (changes batches are chunked by count and bytes).
    public func encode(_ type: FrameType, payload: [UInt8]) throws(WireError) -> [UInt8] {
        try Borrowed.bytes(of: payload) { (raw) throws(WireError) -> [UInt8] in try encode(type, payload: raw) }
    }

    /// Encodes `frame` (its ``Frame/compression`` is ignored; the options decide, and a frame
    /// whose ``Frame/mayCompress`` is false goes out plain).
    /// - Throws: ``WireError`` `limitExceeded` for an oversized payload.
    public func encode(_ frame: Frame) throws(WireError) -> [UInt8] {
        try Borrowed.bytes(of: frame.payload) { (raw) throws(WireError) -> [UInt8] in
            try encode(frame.type, payload: raw, mayCompress: frame.mayCompress)
        }
    }

    /// Encodes a frame from borrowed payload bytes; `mayCompress: false` skips compression.
    /// - Throws: ``WireError`` `limitExceeded` for an oversized payload.
    public func encode(_ type: FrameType, payload: UnsafeRawBufferPointer, mayCompress: Bool = true) throws(WireError)
        -> [UInt8]
    {
        try encode(type, payload: payload, mayCompress: mayCompress) { size, write in
            [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                write(UnsafeMutableRawBufferPointer(buffer))
                initialized = size
            }
        }
    }

    /// Encodes `frame` straight into storage of the caller's, such as a socket's send buffer, so
    /// that its bytes are written once: `output` receives the encoded size and a function that
    /// writes the whole frame into the first that many bytes of a buffer (a smaller one traps);
    /// it calls that function once and returns what holds the bytes. (`encode(_ frame:)` is this with an array for storage.)
    /// - Throws: ``WireError`` `limitExceeded` for an oversized payload (`output` is not called).
    public func encode<Output>(
        _ frame: Frame, output: (_ size: Int, _ write: (UnsafeMutableRawBufferPointer) -> Void) -> Output
    ) throws(WireError) -> Output {
        try Borrowed.bytes(of: frame.payload) { (raw) throws(WireError) -> Output in
            try encode(frame.type, payload: raw, mayCompress: frame.mayCompress, output: output)
        }
    }

    private func encode<Output>(
        _ type: FrameType, payload: UnsafeRawBufferPointer, mayCompress: Bool,
        output: (Int, (UnsafeMutableRawBufferPointer) -> Void) -> Output
    ) throws(WireError) -> Output {
        let limit = options.limits.maxFramePayloadBytes
        guard payload.count <= limit else {
            throw WireError(
                .limitExceeded, at: 0,
                "frame payload is \(payload.count) bytes, over the limit of \(limit) (WireLimits.maxFramePayloadBytes); send it in smaller pieces"
            )
        }
        guard type.rawValue != 0 else {
            throw WireError(.invalidValue, at: 0, "frame type 0 is reserved")
        }
        if mayCompress, let stream, stream.isUsable, payload.count >= max(options.streamThreshold, 1),
            payload.count <= options.streamMaximum
        {
            // A piece must fit the frame limit whatever zstd makes of it; larger payloads (near
            // the limit, so compressed well on their own) skip the stream.
            if ZstdStreamCompressor.bound(payload.count) <= limit, let piece = stream.flush(payload) {
                return piece.withUnsafeBytes { body in
                    output(Self.size(compression: .stream, body: body.count)) {
                        stream.checksum = assemble(
                            type, compression: .stream, body: body, continuing: stream.checksum, into: $0)
                    }
                }
            }
        }
        if mayCompress, let (compressed, compression) = compress(payload) {
            return compressed.withUnsafeBytes { body in
                output(Self.size(compression: compression, body: body.count)) {
                    assemble(type, compression: compression, body: body, into: $0)
                }
            }
        }
        return output(Self.size(compression: .none, body: payload.count)) {
            assemble(type, compression: .none, body: payload, into: $0)
        }
    }

    private func compress(_ payload: UnsafeRawBufferPointer) -> ([UInt8], Frame.Compression)? {
        guard payload.count >= options.threshold, payload.count > 0 else { return nil }
        let dictionary: ZstdDictionary?
        switch options.mode {
        case .none: return nil
        case .zstd: dictionary = nil
        case .dictionary(let d): dictionary = d
        }
        // Worth it only if the output plus any dictionary ID is at most (100 - p)% of the input.
        let extra = dictionary == nil ? 0 : FrameLayout.dictionaryIDSize
        let budget = payload.count &* (100 &- options.minimumSavingsPercent) / 100 &- extra
        guard budget > 0,
            let out = compressor.compress(payload, level: options.level, dictionary: dictionary, notBelow: budget &+ 1)
        else {
            return nil
        }
        return (out, dictionary.map { .dictionary(id: $0.id) } ?? .zstd)
    }

    /// The encoded size of a frame whose (possibly compressed) payload is `body` bytes.
    private static func size(compression: Frame.Compression, body: Int) -> Int {
        var dictionaryBytes = 0
        if case .dictionary = compression { dictionaryBytes = FrameLayout.dictionaryIDSize }
        return FrameLayout.headerSize &+ dictionaryBytes &+ body &+ FrameLayout.trailerSize
    }

    /// Writes header, body and checksum into the first ``size(compression:body:)`` bytes of `out`,
    /// and returns the checksum: CRC-32C of the bytes written, continuing `previous` (a
    /// compression-3 frame continues the previous one's, Spec/wire-format.md §13.1).
    @discardableResult
    private func assemble(
        _ type: FrameType, compression: Frame.Compression, body: UnsafeRawBufferPointer,
        continuing previous: UInt32 = 0,
        into out: UnsafeMutableRawBufferPointer
    ) -> UInt32 {
        let size = Self.size(compression: compression, body: body.count)
        precondition(out.count >= size, "FrameEncoder: the output buffer is smaller than the frame")
        guard let start = out.baseAddress else { return previous }
        var w = WireWriter(start: start, count: size)
        w.writeByte(FrameLayout.magic.0)
        w.writeByte(FrameLayout.magic.1)
        w.writeByte(FrameLayout.version)
        w.writeByte(type.rawValue)
        w.writeByte(compression.bits)
        w.writeFixed32(UInt32(truncatingIfNeeded: body.count))
        if case .dictionary(let id) = compression { w.writeFixed32(id) }
        w.writeRaw(body)
        let checksum = w.checksumOfWritten(continuing: previous)
        w.writeFixed32(checksum)
        return checksum
    }
}
