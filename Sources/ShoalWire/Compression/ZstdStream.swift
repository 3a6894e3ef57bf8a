// ZstdStream: compression 3 — one zstd frame per connection direction, flushed after every payload.

internal import CZstd

/// The rules of a zstd stream (compression 3, Spec/wire-format.md §14.3): the payloads of one
/// connection direction's compression-3 frames, concatenated, are a prefix of one zstd frame that
/// never ends, flushed at the end of every payload so that each frame decodes on arrival.
package enum ZstdStream {
    /// The largest window a stream may declare, as a power of two: 2^17 bytes (128 KiB).
    package static let maxWindowLog: Int32 = 17
    /// zstd's block header size: a payload that ends on a flush leaves the decoder expecting one.
    static let blockHeaderSize = 3
}

/// The sending half of a zstd stream: one libzstd context that never ends its frame.
///
/// The first payload starts the zstd frame (header naming the dictionary, if any; no content
/// size, no checksum, a window of at most 2^17 bytes); every payload is followed by a flush, so
/// its output is complete blocks the receiver decodes at once. Not thread-safe (not `Sendable`):
/// it belongs to one connection direction.
package final class ZstdStreamCompressor {
    private let context: OpaquePointer?
    private var broken = false
    /// The dictionary the stream starts from (the receiver must hold it), or nil.
    package let dictionary: ZstdDictionary?
    /// The checksum of the last compression-3 frame that carried this stream, which the next
    /// one's continues (Spec/wire-format.md §13.1); 0 before the first.
    package var checksum: UInt32 = 0

    /// Makes a context at `level` over `dictionary`; an unusable stream (``isUsable`` false) if
    /// libzstd cannot allocate one or refuses a parameter.
    package init(level: Int32, dictionary: ZstdDictionary?) {
        self.dictionary = dictionary
        guard let c = ZSTD_createCCtx() else {
            context = nil
            return
        }
        var ok = true
        func set(_ p: ZSTD_cParameter, _ v: Int32) { ok = ok && ZSTD_isError(ZSTD_CCtx_setParameter(c, p, v)) == 0 }
        set(ZSTD_c_compressionLevel, level)
        set(ZSTD_c_windowLog, ZstdStream.maxWindowLog)
        // Smaller match tables than level 3's (2^17 and 2^16 entries): half the context's memory,
        // and the window they index is only 128 KiB (Spec/wire-format.md §14.3, memory).
        set(ZSTD_c_hashLog, 15)
        set(ZSTD_c_chainLog, 15)
        set(ZSTD_c_checksumFlag, 0)
        set(ZSTD_c_dictIDFlag, 1)
        if let dictionary {
            if let cdict = dictionary.compressionDictionary(level: level) {
                ok = ok && ZSTD_isError(ZSTD_CCtx_refCDict(c, cdict)) == 0
            } else {
                ok = false
            }
        }
        if ok {
            context = c
        } else {
            ZSTD_freeCCtx(c)
            context = nil
        }
    }

    deinit { if let context { ZSTD_freeCCtx(context) } }

    /// Whether the stream can carry another payload: false if libzstd could not make a context or
    /// failed once (the stream's state is then unknown, so it is never used again).
    package var isUsable: Bool { context != nil && !broken }

    /// The largest output ``flush(_:)`` can produce for `count` bytes of payload: zstd's bound,
    /// plus the frame header of the first payload (at most 18 bytes) and an empty block's header.
    package static func bound(_ count: Int) -> Int { ZSTD_compressBound(count) &+ 32 }

    /// Compresses `source` into the stream and flushes: the returned bytes, complete zstd blocks
    /// (after the frame header, for the first payload), are the payload of one compression-3
    /// frame. Nil when libzstd fails; the stream is then unusable, and its later frames must go
    /// out in another compression (the receiver has seen nothing of this payload).
    package func flush(_ source: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let context, !broken else { return nil }
        let capacity = Self.bound(source.count)
        var failed = false
        let out = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            var input = ZSTD_inBuffer(src: source.baseAddress, size: source.count, pos: 0)
            var output = ZSTD_outBuffer(dst: buffer.baseAddress, size: capacity, pos: 0)
            while true {
                let left = ZSTD_compressStream2(context, &output, &input, ZSTD_e_flush)
                if ZSTD_isError(left) != 0 { failed = true; break }
                if left == 0 { break }
                // The capacity is zstd's own bound: never reached, but a stuck loop is worse.
                if output.pos == output.size { failed = true; break }
            }
            initialized = output.pos
        }
        if failed {
            broken = true
            return nil
        }
        return out
    }

    /// Bytes libzstd holds for this context (tables, window, buffers).
    package var memoryBytes: Int { context.map { ZSTD_sizeof_CCtx($0) } ?? 0 }
}

/// The receiving half of a zstd stream: decodes each compression-3 payload in order, each on its
/// own flush boundary, producing at most `maxBytes` per payload (Spec/wire-format.md §14.3).
///
/// The libzstd context is made on the first payload. Not thread-safe (not `Sendable`).
package final class ZstdStreamDecompressor {
    private var context: OpaquePointer? = nil
    private var started = false
    private var scratch: UnsafeMutableRawBufferPointer? = nil
    /// Output is gathered through this many bytes at a time.
    private static let scratchSize = 16 << 10

    /// The checksum of the last compression-3 frame that carried this stream, which the next
    /// one's continues (Spec/wire-format.md §13.1); 0 before the first.
    package var checksum: UInt32 = 0

    /// A decompressor; its libzstd context is made by the first payload.
    package init() {}

    deinit {
        if let context { ZSTD_freeDCtx(context) }
        scratch?.deallocate()
    }

    /// The ID of the dictionary the stream started from (0: none); nil before the first payload.
    package private(set) var dictionaryID: UInt32? = nil

    /// Decodes the next payload of the stream.
    ///
    /// - Parameters:
    ///   - base: offset of `source` in the input, for error offsets (every error is reported there).
    ///   - maxBytes: the most bytes this payload may decode to (`maxFramePayloadBytes`).
    ///   - dictionaries: the dictionaries the first payload's zstd frame header may name.
    /// - Throws: ``WireError`` `decompressionFailed` (an empty payload; a first payload that is not
    ///   a zstd frame header as §14.3 requires; corrupt data; a payload that does not end on a
    ///   flush, or ends the zstd frame), `limitExceeded` (more than `maxBytes` of output) or
    ///   `unknownDictionary` (the header names a dictionary not in `dictionaries`).
    package func decompress(_ source: UnsafeRawBufferPointer, base: Int, maxBytes: Int, dictionaries: ZstdDictionarySet)
        throws(WireError) -> [UInt8]
    {
        guard source.count > 0 else {
            throw WireError(
                .decompressionFailed, at: base,
                "compression-3 payload is empty; a flushed zstd stream payload holds at least one block")
        }
        if !started {
            started = true
            try start(source, base: base, dictionaries: dictionaries)
        }
        guard let context else {
            throw WireError(.decompressionFailed, at: base, "libzstd could not allocate a stream decompression context")
        }
        if scratch == nil {
            scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.scratchSize, alignment: 16)
        }
        guard let scratch, let dst = scratch.baseAddress else {
            throw WireError(.decompressionFailed, at: base, "no output buffer")
        }
        var out = [UInt8]()
        var input = ZSTD_inBuffer(src: source.baseAddress, size: source.count, pos: 0)
        var hint = 0
        while true {
            var output = ZSTD_outBuffer(dst: dst, size: scratch.count, pos: 0)
            let before = input.pos
            let r = ZSTD_decompressStream(context, &output, &input)
            if ZSTD_isError(r) != 0 {
                throw WireError(.decompressionFailed, at: base, "zstd stream is corrupt (\(Zstd.errorName(r)))")
            }
            if output.pos > 0 {
                guard output.pos <= maxBytes &- out.count else {
                    throw WireError(
                        .limitExceeded, at: base,
                        "compression-3 payload decodes to more than \(maxBytes) bytes (WireLimits.maxFramePayloadBytes)"
                    )
                }
                out.append(contentsOf: UnsafeRawBufferPointer(start: dst, count: output.pos))
            }
            if r == 0 {
                throw WireError(
                    .decompressionFailed, at: base,
                    "compression-3 payload ends the zstd frame; a stream's frame never ends")
            }
            // Done when the input is used up and the output did not fill: nothing more is pending.
            if input.pos == input.size, output.pos < output.size { hint = r; break }
            if input.pos == before, output.pos == 0 {
                throw WireError(.decompressionFailed, at: base, "zstd stream made no progress")
            }
        }
        // Every byte taken and nothing held: the decoder waits for a block header, and holds none of it.
        guard hint == ZstdStream.blockHeaderSize else {
            throw WireError(
                .decompressionFailed, at: base,
                "compression-3 payload does not end on a flush: it ends inside a zstd block, which would need the next payload"
            )
        }
        return out
    }

    /// Checks the first payload's zstd frame header (§14.3) and prepares the context for it.
    private func start(_ source: UnsafeRawBufferPointer, base: Int, dictionaries: ZstdDictionarySet) throws(WireError) {
        guard Zstd.hasFrameMagic(source) else {
            throw WireError(
                .decompressionFailed, at: base,
                "the first compression-3 payload does not start with the zstd frame magic 28 b5 2f fd")
        }
        guard source.count >= 6 else {
            throw WireError(
                .decompressionFailed, at: base,
                "the first compression-3 payload does not hold the whole zstd frame header")
        }
        let descriptor = source[4]
        guard descriptor & 0x08 == 0 else {
            throw WireError(.decompressionFailed, at: base, "zstd frame header descriptor sets its reserved bit")
        }
        guard descriptor & 0x20 == 0, descriptor >> 6 == 0 else {
            throw WireError(
                .decompressionFailed, at: base,
                "zstd stream declares a content size (or is single-segment); a stream's size is unknown and its window declared"
            )
        }
        guard descriptor & 0x04 == 0 else {
            throw WireError(
                .decompressionFailed, at: base,
                "zstd stream sets the content checksum flag; a stream never ends, so it has none (frames carry CRC-32C)"
            )
        }
        if let window = Zstd.declaredWindow(source), window > UInt64(1) << UInt64(ZstdStream.maxWindowLog) {
            throw WireError(
                .decompressionFailed, at: base,
                "zstd stream declares a \(window)-byte window; a stream's window is at most \(1 << ZstdStream.maxWindowLog) bytes"
            )
        }
        let idSize = [0, 1, 2, 4][Int(descriptor & 0x03)]
        guard source.count >= 6 &+ idSize else {
            throw WireError(
                .decompressionFailed, at: base,
                "the first compression-3 payload does not hold the whole zstd frame header")
        }
        var id: UInt32 = 0
        for k in 0..<idSize { id |= UInt32(source[6 &+ k]) << (8 * UInt32(k)) }
        var dictionary: ZstdDictionary? = nil
        if id != 0 {
            guard let d = dictionaries[id] else {
                throw WireError(
                    .unknownDictionary, at: base,
                    "zstd stream starts from dictionary \(id), which this node does not hold (it holds \(dictionaries.byID.keys.sorted()))"
                )
            }
            dictionary = d
        }
        dictionaryID = id
        guard let c = ZSTD_createDCtx() else {
            throw WireError(.decompressionFailed, at: base, "libzstd could not allocate a stream decompression context")
        }
        context = c
        var ok = ZSTD_isError(ZSTD_DCtx_setParameter(c, ZSTD_d_windowLogMax, ZstdStream.maxWindowLog)) == 0
        if let dictionary {
            if let ddict = dictionary.decompressionDictionary {
                ok = ok && ZSTD_isError(ZSTD_DCtx_refDDict(c, ddict)) == 0
            } else {
                ok = false
            }
        }
        guard ok else {
            throw WireError(.decompressionFailed, at: base, "libzstd refused the stream's parameters")
        }
    }

    /// Bytes libzstd holds for this context (window and buffers), 0 before the first payload.
    package var memoryBytes: Int { context.map { ZSTD_sizeof_DCtx($0) } ?? 0 }
}
