// Zstd: bounded one-shot zstd compression and decompression over libzstd (CZstd).

internal import CZstd

/// A zstd compression context, reused for every frame an encoder writes.
///
/// Creating a context costs far more than compressing a small payload, so a connection keeps one
/// per direction. The context is not thread-safe: one owner at a time (it is not `Sendable`).
package final class ZstdCompressor {
    let context: OpaquePointer?

    /// Creates a context; compression is skipped (payloads go out plain) if libzstd cannot allocate one.
    package init() { context = ZSTD_createCCtx() }

    deinit { if let context { ZSTD_freeCCtx(context) } }

    /// Compresses `source` into one standard zstd frame that declares its content size, or returns
    /// nil when zstd fails or the result would be at least `notBelow` bytes (not worth sending).
    package func compress(
        _ source: UnsafeRawBufferPointer, level: Int32, dictionary: ZstdDictionary?, notBelow limit: Int
    ) -> [UInt8]? {
        guard let context, let src = source.baseAddress, source.count > 0, limit > 0 else { return nil }
        let capacity = min(ZSTD_compressBound(source.count), limit)
        var failed = false
        let out = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            initialized = 0
            guard let dst = buffer.baseAddress else { failed = true; return }
            let written: Int
            if let cdict = dictionary?.compressionDictionary(level: level) {
                written = ZSTD_compress_usingCDict(context, dst, capacity, src, source.count, cdict)
            } else {
                written = ZSTD_compressCCtx(context, dst, capacity, src, source.count, level)
            }
            // A result that does not fit `capacity` is an error code: "not worth it" or a real failure.
            if ZSTD_isError(written) != 0 || written >= limit { failed = true; return }
            initialized = written
        }
        return failed ? nil : out
    }
}

/// A zstd decompression context, reused for every frame a reader decodes (not thread-safe).
///
/// The libzstd context is made on the first compressed frame: most readers (a connection that
/// receives only small frames, a read of an uncompressed chunk) never need one, and making one
/// costs more than decoding a small frame.
package final class ZstdDecompressor {
    private var made: OpaquePointer?
    private var tried = false

    /// The libzstd context, made on first use; nil if libzstd could not allocate one (then every
    /// compressed frame fails to decode).
    var context: OpaquePointer? {
        if !tried {
            tried = true
            made = ZSTD_createDCtx()
        }
        return made
    }

    /// A decompressor; its context is allocated when the first frame needs it.
    package init() {}

    deinit { if let made { ZSTD_freeDCtx(made) } }

    /// Decompresses exactly one zstd frame that fills `source`, allocating only the content size
    /// the frame declares, and only if that is at most `maxBytes`.
    ///
    /// - Parameters:
    ///   - base: offset of `source` in the input, for error offsets.
    ///   - dictionary: the dictionary the frame was compressed with, or nil for none.
    /// - Throws: ``WireError`` `decompressionFailed` (not exactly one standard zstd frame, no
    ///   declared size, a window larger than the content, corrupt data), `limitExceeded` (declared
    ///   size over `maxBytes`) or `unknownDictionary` (the zstd frame names another dictionary).
    ///   Spec/wire-format.md §14 gives the order of the checks.
    package func decompress(_ source: UnsafeRawBufferPointer, base: Int, maxBytes: Int, dictionary: ZstdDictionary?)
        throws(WireError) -> [UInt8]
    {
        guard let src = source.baseAddress, source.count > 0 else {
            throw WireError(
                .decompressionFailed, at: base, "compressed payload is empty; a zstd frame is at least 9 bytes")
        }
        // libzstd also reads skippable frames (no content) and, if built so, pre-RFC formats.
        guard Zstd.hasFrameMagic(source) else {
            throw WireError(
                .decompressionFailed, at: base,
                "compressed payload does not start with the zstd frame magic 28 b5 2f fd; skippable and legacy frames are not payloads"
            )
        }
        let frameSize = ZSTD_findFrameCompressedSize(src, source.count)
        guard ZSTD_isError(frameSize) == 0 else {
            throw WireError(
                .decompressionFailed, at: base, "compressed payload is not a zstd frame (\(Zstd.errorName(frameSize)))")
        }
        guard frameSize == source.count else {
            throw WireError(
                .decompressionFailed, at: base &+ frameSize,
                "compressed payload holds \(source.count &- frameSize) byte(s) after its zstd frame; a payload is exactly one frame"
            )
        }
        let declared = ZSTD_getFrameContentSize(src, source.count)
        // ZSTD_CONTENTSIZE_UNKNOWN and ZSTD_CONTENTSIZE_ERROR are the two largest UInt64 values.
        guard declared < UInt64.max &- 1 else {
            throw WireError(
                .decompressionFailed, at: base,
                "zstd frame does not declare its content size; Shoal requires it so that memory stays bounded")
        }
        guard declared <= UInt64(maxBytes) else {
            throw WireError(
                .limitExceeded, at: base,
                "compressed payload declares \(declared) bytes, over the limit of \(maxBytes) (WireLimits.maxFramePayloadBytes)"
            )
        }
        if let window = Zstd.declaredWindow(source), window > max(declared, Zstd.minimumWindow) {
            throw WireError(
                .decompressionFailed, at: base,
                "zstd frame declares a \(window)-byte window for \(declared) bytes of content; a payload's window is at most its content size, or 1 KiB"
            )
        }
        // 0: the field is absent or holds 0, which names no dictionary (the frame header's is used).
        let frameDictionary = ZSTD_getDictID_fromFrame(src, source.count)
        let expected = dictionary?.id ?? 0
        guard frameDictionary == expected || frameDictionary == 0 else {
            throw WireError(
                .unknownDictionary, at: base,
                "zstd frame was compressed with dictionary \(frameDictionary), but the frame header names \(expected)")
        }
        guard context != nil else {
            throw WireError(.decompressionFailed, at: base, "libzstd could not allocate a decompression context")
        }
        let size = Int(declared)
        if size == 0 {
            var scratch: UInt8 = 0
            let got = withUnsafeMutableBytes(of: &scratch) {
                decode(into: $0.baseAddress, capacity: 0, src: src, count: source.count, dictionary: dictionary)
            }
            guard ZSTD_isError(got) == 0, got == 0 else {
                throw WireError(.decompressionFailed, at: base, "zstd frame is corrupt (\(Zstd.errorName(got)))")
            }
            return []
        }
        var failure = 0
        let out = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = 0
            let got = decode(
                into: buffer.baseAddress.map(UnsafeMutableRawPointer.init), capacity: size, src: src,
                count: source.count, dictionary: dictionary)
            if ZSTD_isError(got) != 0 || got != size { failure = got; return }
            initialized = size
        }
        guard out.count == size else {
            let why =
                ZSTD_isError(failure) != 0 ? Zstd.errorName(failure) : "produced \(failure) of \(size) declared bytes"
            throw WireError(.decompressionFailed, at: base, "zstd frame is corrupt (\(why))")
        }
        return out
    }

    private func decode(
        into dst: UnsafeMutableRawPointer?, capacity: Int, src: UnsafeRawPointer, count: Int,
        dictionary: ZstdDictionary?
    ) -> Int {
        guard let context, let dst else { return 0 }
        if let ddict = dictionary?.decompressionDictionary {
            return ZSTD_decompress_usingDDict(context, dst, capacity, src, count, ddict)
        }
        return ZSTD_decompressDCtx(context, dst, capacity, src, count)
    }
}

/// Small helpers over libzstd that need no context.
package enum Zstd {
    /// libzstd's name for an error result.
    package static func errorName(_ code: Int) -> String {
        guard let p = ZSTD_getErrorName(code) else { return "unknown zstd error" }
        return String(cString: p)
    }

    /// The smallest window a zstd frame can declare (RFC 8878 §3.1.1.1.2): 1 KiB.
    static let minimumWindow: UInt64 = 1 << 10

    /// Whether `frame` starts with the magic number of a standard zstd frame, 0xFD2FB528.
    static func hasFrameMagic(_ frame: UnsafeRawBufferPointer) -> Bool {
        frame.count >= 4 && frame[0] == 0x28 && frame[1] == 0xB5 && frame[2] == 0x2F && frame[3] == 0xFD
    }

    /// The window size a standard zstd frame's window descriptor declares,
    /// `2^(10 + exponent)` plus `mantissa` eighths of that (RFC 8878 §3.1.1.1.2); nil when the
    /// frame has no descriptor (single-segment: its window is its content size).
    static func declaredWindow(_ frame: UnsafeRawBufferPointer) -> UInt64? {
        guard frame.count >= 6, frame[4] & 0x20 == 0 else { return nil }
        let exponent = UInt64(frame[5] >> 3), mantissa = UInt64(frame[5] & 0x07)
        let base: UInt64 = 1 << (10 &+ exponent)  // at most 2^41
        return base &+ (base >> 3) &* mantissa
    }

    /// The version of the libzstd Shoal is linked against, e.g. "1.5.4".
    package static var libraryVersion: String {
        guard let p = ZSTD_versionString() else { return "unknown" }
        return String(cString: p)
    }
}
