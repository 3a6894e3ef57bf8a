// SegmentFuzzing: the segment scan and chunk reads driven by arbitrary bytes — what Fuzz/'s
// fuzz-segment target and the tests that replay its corpus check (through ShoalSamples).

import ShoalWire

/// Entry points for fuzzing the segment format of `Spec/assets.md` §3.2. Not API: visible only to
/// `@_spi(Fuzzing) import ShoalAssets` (the fuzz checks of the nested Fuzz package and the tests).
@_spi(Fuzzing) public enum SegmentFuzzing {
    /// Writes `bytes` as the only segment file of a chunk store in `directory` (created, and
    /// emptied of segments first), opens it — the scan builds the index — and reads every chunk
    /// the scan indexed. Returns nil when every property held, or what broke:
    ///
    /// - the open fails (any bytes are a segment the scan can read past);
    /// - more records are indexed than headers fit in the input;
    /// - a read returns bytes whose SHA-256 is not the chunk's hash;
    /// - a read fails other than with `assetFileModified`;
    /// - a chunk stays indexed after more refusals than the input has records: each refusal drops
    ///   the copy read, and an earlier copy the scan found takes its place (Spec/assets.md §3.5),
    ///   so refusals run out of copies.
    ///
    /// The segment file and the folders are removed before returning.
    public static func check(_ bytes: [UInt8], directory: String) -> String? {
        let folder = directory + "/segments"
        let path = SegmentStore.path(folder, 1)
        defer {
            _ = try? FileSystem.remove(path)
            _ = try? FileSystem.removeDirectory(folder)
            _ = try? FileSystem.removeDirectory(directory)
        }
        let maximum = ChunkingParameters.standard.maximumBytes
        let chunks: ChunkStore
        do throws(AssetError) {
            try FileSystem.createDirectories(folder)
            for name in try FileSystem.contents(of: folder) { _ = try FileSystem.remove(folder + "/" + name) }
            let file = try POSIXFile.create(path)
            defer { file.close() }
            try withBytes(of: bytes) { (raw) throws(AssetError) in try file.write(raw) }
        } catch {
            return "could not write the input as a segment file (not the code under test): \(error)"
        }
        do throws(AssetError) {
            chunks = ChunkStore(
                segments: try SegmentStore(folder: folder, sync: false, maximumChunkBytes: maximum),
                legacy: nil, maximumBytes: maximum, compression: .none)
        } catch {
            return "opening a store whose only segment holds the input failed: \(error)"
        }
        let hashes = chunks.segments.hashes()
        guard hashes.count <= bytes.count / SegmentStore.headerBytes else {
            return "\(hashes.count) records indexed from \(bytes.count) bytes, more than headers fit"
        }
        var scratch: [UInt8] = []
        let decompressor = ZstdDecompressor()
        let records = bytes.count / SegmentStore.headerBytes
        for hash in hashes {
            var refusals = 0
            reading: while chunks.contains(hash) {
                do throws(AssetError) {
                    let chunk = try chunks.read(
                        hash, length: nil, of: nil, scratch: &scratch, decompressor: decompressor)
                    guard ContentHash.sha256(chunk) == hash else {
                        return "chunk \(hash) was served as \(chunk.count) bytes that hash to something else"
                    }
                    break reading
                } catch  where error.code == .assetFileModified {
                    refusals += 1
                    if refusals > records {
                        return "chunk \(hash) was refused as damaged \(refusals) times and is still indexed"
                    }
                } catch {
                    return "reading indexed chunk \(hash) failed with \(error)"
                }
            }
        }
        return nil
    }

    /// A valid segment holding `chunks`, each a raw record, then each again zstd-compressed when
    /// `zstdLevel` is given and that saves bytes: seeds for the fuzzer.
    public static func segment(of chunks: [[UInt8]], zstdLevel: Int32? = nil) -> [UInt8] {
        var out: [UInt8] = []
        func append(_ tag: UInt8, _ stored: [UInt8], _ raw: [UInt8]) {
            var header = [UInt8](repeating: 0, count: SegmentStore.headerBytes)
            header.withUnsafeMutableBytes {
                SegmentStore.encodeHeader(
                    tag: tag, stored: stored.count, length: raw.count, hash: .sha256(raw), into: $0)
            }
            out += header + stored + [UInt8](repeating: 0, count: SegmentStore.padding(stored.count))
        }
        for c in chunks { append(ChunkStore.rawTag, c, c) }
        if let zstdLevel {
            let compressor = ZstdCompressor()
            for c in chunks {
                let packed = c.withUnsafeBytes {
                    compressor.compress($0, level: zstdLevel, dictionary: nil, notBelow: c.count)
                }
                if let packed { append(ChunkStore.zstdTag, packed, c) }
            }
        }
        return out
    }
}
