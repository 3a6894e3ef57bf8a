// CompressionBenchmark: the `compression` suite — frame compression choices on the notes corpus.

import CZstdStreaming
import ShoalSamples
import ShoalWire

/// Sends the ShoalWire-encoded notes corpus (10,000 records, seed 1) as frames, compressed in
/// each way Shoal could, and measures bytes on the wire and framing throughput.
///
/// Records are encoded once beforehand: the timed work is framing plus compression (encode) and
/// `FrameReader` plus decompression (decode). MB/s are counted on the uncompressed ShoalWire
/// bytes of the corpus. `ratio` is the case's bytes over the uncompressed frames of the same
/// granularity (`record-none` or `batch100-none`).
///
/// `record-stream` keeps one zstd streaming context per connection (one per direction) and
/// flushes it after every record (`ZSTD_e_flush`), so later records refer back to earlier ones;
/// each flushed chunk travels in a plain frame, with libzstd's default parameters for level 3.
/// `record-compression3` and `batch100-compression3` are the same idea as Shoal sends it:
/// compression-3 frames from `FrameEncoder(streamingWith:)`, started from the built-in dictionary
/// (windowLog 17, hashLog and chainLog 15, chained checksums; Spec/wire-format.md §14.3).
enum CompressionBenchmark: BenchmarkSuite {
    static let name = "compression"
    static let summary = "frame compression: none, zstd, built-in dictionary, streaming; per record and per 100"

    static let recordCount = 10_000
    static let batchSize = 100

    struct Case {
        var name: String
        var baseline: String
        var frames: Int
        var bytes: Int
        var timed: [TimedCase]
    }

    static func run() throws {
        let records = NotesCorpus.records(count: recordCount, seed: 1).map { $0.encoded() }
        let corpusBytes = records.reduce(0) { $0 + $1.count }
        let batches = stride(from: 0, to: records.count, by: batchSize).map {
            Array(records[$0..<min($0 + batchSize, records.count)].joined())
        }
        let dictionary = BuiltInDictionaries.records
        let cases = [
            try framed("record-none", baseline: "record-none", records, .init(mode: .none)),
            try framed("record-zstd", baseline: "record-none", records, .init(mode: .zstd)),
            try framed("record-dict", baseline: "record-none", records, .init(mode: .dictionary(dictionary))),
            try streamed("record-stream", baseline: "record-none", records),
            try framed(
                "record-compression3", baseline: "record-none", records, .init(mode: .dictionary(dictionary)),
                streaming: true),
            try framed("batch100-none", baseline: "batch100-none", batches, .init(mode: .none)),
            try framed("batch100-zstd", baseline: "batch100-none", batches, .init(mode: .zstd)),
            try framed("batch100-dict", baseline: "batch100-none", batches, .init(mode: .dictionary(dictionary))),
            try framed(
                "batch100-compression3", baseline: "batch100-none", batches, .init(mode: .dictionary(dictionary)),
                streaming: true)
        ]
        printNote(
            "\(recordCount) NotesCorpus records (seed 1), \(corpusBytes) bytes as ShoalWire; zstd level 3 (FrameEncoder's default); best of \(Harness.runs) runs of at least \(Harness.minimumSeconds) s"
        )
        let seconds = try Harness.bestSecondsPerIteration(cases.flatMap(\.timed))
        for (i, c) in cases.enumerated() {
            let base = cases.first { $0.name == c.baseline }?.bytes ?? c.bytes
            print(
                "compression case=\(c.name) frames=\(c.frames) bytes=\(c.bytes) ratio=\(fixed(Double(c.bytes) / Double(base), 3)) encode_MBps=\(fixed(Harness.megabytesPerSecond(corpusBytes, seconds[2 * i]), 1)) decode_MBps=\(fixed(Harness.megabytesPerSecond(corpusBytes, seconds[2 * i + 1]), 1))"
            )
        }
    }

    /// Each payload as one frame through `FrameEncoder(options:)` (or `streamingWith:`), read back
    /// with `FrameReader`.
    static func framed(
        _ name: String, baseline: String, _ payloads: [[UInt8]], _ options: FrameEncoder.Options,
        streaming: Bool = false
    ) throws -> Case {
        func encoder() -> FrameEncoder {
            streaming ? FrameEncoder(streamingWith: options) : FrameEncoder(options: options)
        }
        func encodeAll() throws -> [[UInt8]] {
            let encoder = encoder()
            return try payloads.map { p throws(WireError) in try encoder.encode(.changes, payload: p) }
        }
        let frames = try encodeAll()
        let stream = Array(frames.joined())
        var check = FrameReader(acceptsStreamCompression: streaming)
        guard try check.frames(in: stream).map(\.payload) == payloads else {
            throw BenchmarkError("\(name): frames do not decode to their payloads")
        }
        let encode = TimedCase(label: "\(name) encode") {
            let encoder = encoder()
            var n = 0
            for p in payloads { n &+= try encoder.encode(.changes, payload: p).count }
            return n
        }
        let decode = TimedCase(label: "\(name) decode") {
            var reader = FrameReader(acceptsStreamCompression: streaming)
            var n = 0
            try stream.withUnsafeBytes { raw in
                var input = raw
                while let f = try reader.next(from: &input) { n &+= f.payload.count }
            }
            return n
        }
        return Case(name: name, baseline: baseline, frames: frames.count, bytes: stream.count, timed: [encode, decode])
    }

    /// Each record through one zstd stream per connection, flushed per record, in plain frames.
    static func streamed(_ name: String, baseline: String, _ records: [[UInt8]]) throws -> Case {
        func encodeAll() throws -> [[UInt8]] {
            let encoder = FrameEncoder(options: .init(mode: .none))
            let stream = try ZstdStream.Compressor(level: 3)
            return try records.map { r in
                try stream.flush(r) { chunk throws(WireError) in try encoder.encode(.changes, payload: chunk) }
            }
        }
        func decodeAll(_ stream: [UInt8], _ body: ([UInt8]) -> Void) throws {
            var reader = FrameReader()
            let decompressor = try ZstdStream.Decompressor()
            try stream.withUnsafeBytes { raw in
                var input = raw
                while let f = try reader.next(from: &input) { body(try decompressor.decompress(f.payload)) }
            }
        }
        let frames = try encodeAll()
        let stream = Array(frames.joined())
        var decoded = [[UInt8]]()
        try decodeAll(stream) { decoded.append($0) }
        guard decoded == records else { throw BenchmarkError("\(name): the stream does not decode to its records") }
        let encode = TimedCase(label: "\(name) encode") {
            try encodeAll().reduce(0) { $0 &+ $1.count }
        }
        let decode = TimedCase(label: "\(name) decode") {
            var n = 0
            try decodeAll(stream) { n &+= $0.count }
            return n
        }
        return Case(name: name, baseline: baseline, frames: frames.count, bytes: stream.count, timed: [encode, decode])
    }
}

/// libzstd's streaming API: one context per connection direction, flushed after every message.
enum ZstdStream {
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ code: Int) { description = "zstd: " + String(cString: ZSTD_getErrorName(code)) }
        init(_ text: String) { description = text }
    }

    /// The sending side: compresses each message and flushes, so the peer can decode it at once.
    final class Compressor {
        let context: OpaquePointer
        var scratch: [UInt8]

        init(level: Int32) throws {
            guard let c = ZSTD_createCCtx() else { throw Failure("zstd: cannot allocate a compression context") }
            context = c
            let r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)
            if ZSTD_isError(r) != 0 { throw Failure(r) }
            scratch = [UInt8](repeating: 0, count: ZSTD_CStreamOutSize())
        }

        deinit { ZSTD_freeCCtx(context) }

        /// Compresses `message`, flushes, and hands the flushed bytes to `body`.
        func flush<T>(_ message: [UInt8], _ body: (UnsafeRawBufferPointer) throws(WireError) -> T) throws -> T {
            let ctx = context
            let written: Int = try message.withUnsafeBytes { src in
                try scratch.withUnsafeMutableBytes { dst in
                    var input = ZSTD_inBuffer(src: src.baseAddress, size: src.count, pos: 0)
                    var output = ZSTD_outBuffer(dst: dst.baseAddress, size: dst.count, pos: 0)
                    while true {
                        let remaining = ZSTD_compressStream2(ctx, &output, &input, ZSTD_e_flush)
                        if ZSTD_isError(remaining) != 0 { throw Failure(remaining) }
                        if remaining == 0 { return output.pos }
                        if output.pos == output.size {
                            throw Failure("zstd: a flushed message exceeds the scratch buffer")
                        }
                    }
                }
            }
            return try scratch.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<written])) }
        }
    }

    /// The receiving side: decompresses each flushed chunk into a new array.
    final class Decompressor {
        let context: OpaquePointer
        var scratch: [UInt8]

        init() throws {
            guard let d = ZSTD_createDCtx() else { throw Failure("zstd: cannot allocate a decompression context") }
            context = d
            scratch = [UInt8](repeating: 0, count: 1 << 20)
        }

        deinit { ZSTD_freeDCtx(context) }

        func decompress(_ chunk: [UInt8]) throws -> [UInt8] {
            let ctx = context
            let produced: Int = try chunk.withUnsafeBytes { src in
                try scratch.withUnsafeMutableBytes { dst in
                    var input = ZSTD_inBuffer(src: src.baseAddress, size: src.count, pos: 0)
                    var output = ZSTD_outBuffer(dst: dst.baseAddress, size: dst.count, pos: 0)
                    while input.pos < input.size {
                        let r = ZSTD_decompressStream(ctx, &output, &input)
                        if ZSTD_isError(r) != 0 { throw Failure(r) }
                        if output.pos == output.size { throw Failure("zstd: a message exceeds the scratch buffer") }
                    }
                    return output.pos
                }
            }
            return Array(scratch[0..<produced])
        }
    }
}
