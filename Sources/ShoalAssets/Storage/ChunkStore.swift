// ChunkStore: chunk records in segment files — one tag (raw or zstd) and the bytes, keyed by the
// SHA-256 of the raw bytes; compressed only when that pays; verified on every read. Chunk files
// of stores written before segments are still read.

import ShoalWire

/// How the chunk store keeps chunk bytes on disk.
public enum ChunkCompression: Hashable, Sendable {
    /// Raw bytes.
    case none
    /// Each chunk is trial-compressed with zstd at `level` and kept compressed only if that saves
    /// at least 1/32 (about 3 %) of its size.
    case zstd(level: Int32)
}

/// The chunks of an asset store: records in ``SegmentStore`` segments (`<assets>/chunks/segments/`),
/// and — read, listed and removed, never written — the one-file-per-chunk layout of older stores
/// (`<assets>/chunks/ab/abcdef…`, one tag byte then the bytes).
///
/// A chunk is stored with tag 0 (raw) or 1 (one zstd frame declaring its content size). Every
/// read checks it against its hash: a chunk that does not decode or hash to its name is dropped
/// (so ``AssetStore/missingChunks(of:)-(Asset)`` lists it for a refetch) and reported as
/// `assetFileModified`.
struct ChunkStore: Sendable {
    static let rawTag: UInt8 = 0
    static let zstdTag: UInt8 = 1

    let segments: SegmentStore
    /// The chunk files of a store written before segments, when its shard folders exist.
    let legacy: ObjectDirectory?
    let maximumBytes: Int
    let compression: ChunkCompression

    /// Whether the chunk is stored: indexed, or a legacy file exists (whose bytes are checked
    /// when read). A record the open's scan found is read and checked against its hash the first
    /// time it is asked about: a power cut may have torn a record that was written but never
    /// synced, and an import that found such a chunk "present" would write a manifest over a
    /// chunk it does not have (Spec/assets.md §3.5). A torn record is dropped from the index.
    func contains(_ hash: ContentHash) -> Bool {
        // A torn record dropped gives way to an earlier copy, if the scan found one: check that too.
        while let location = segments.location(of: hash) {
            if location.verified { return true }
            guard let intact = verify(hash, at: location) else { return false }
            if intact { return true }
        }
        return legacy?.contains(hash) == true
    }

    /// Reads the record at `location` and checks it holds the chunk `hash`; marks it verified if
    /// so, drops it from the index if not. Nil on an I/O error, which keeps the record indexed.
    private func verify(_ hash: ContentHash, at location: SegmentStore.Location) -> Bool? {
        var scratch: [UInt8] = []
        let readable: Bool
        do { readable = try segments.read(hash, at: location, into: &scratch) } catch { return nil }
        let intact =
            readable
            && withBytes(of: scratch) { raw in
                decoded(
                    tag: location.tag, UnsafeRawBufferPointer(rebasing: raw[SegmentStore.headerBytes...]), hash: hash,
                    length: location.length, decompressor: ZstdDecompressor()
                ) { _ in true } ?? false
            }
        if intact { segments.markVerified(hash, at: location) } else { segments.remove(hash, at: location) }
        return intact
    }

    /// Appends a chunk whose hash the caller computed (compressed if that pays) to a segment;
    /// ``SegmentStore/commit(_:)`` makes it durable and stored. `startWriteback`: see
    /// ``SegmentStore/append(_:tag:stored:length:startWriteback:)``.
    func stage(
        _ hash: ContentHash, _ bytes: UnsafeRawBufferPointer, compressor: ZstdCompressor?, startWriteback: Bool = true
    ) throws(AssetError) -> SegmentStore.Pending {
        if case .zstd(let level) = compression, let compressor, bytes.count >= 64,
            let packed = compressor.compress(
                bytes, level: level, dictionary: nil, notBelow: bytes.count &- bytes.count / 32)
        {
            return try withBytes(of: packed) { (p) throws(AssetError) -> SegmentStore.Pending in
                try segments.append(
                    hash, tag: Self.zstdTag, stored: p, length: bytes.count, startWriteback: startWriteback)
            }
        }
        return try segments.append(
            hash, tag: Self.rawTag, stored: bytes, length: bytes.count, startWriteback: startWriteback)
    }

    /// Lays out a chunk whose hash the caller computed (compressed if that pays, as
    /// ``stage(_:_:compressor:startWriteback:)`` would) as a record of `batch`; false, with the
    /// batch unchanged, when it does not fit.
    func layOut(
        _ hash: ContentHash, _ bytes: UnsafeRawBufferPointer, compressor: ZstdCompressor?, into batch: RecordBatch
    ) -> Bool {
        if case .zstd(let level) = compression, let compressor, bytes.count >= 64,
            let packed = compressor.compress(
                bytes, level: level, dictionary: nil, notBelow: bytes.count &- bytes.count / 32)
        {
            return packed.withUnsafeBytes { batch.append(hash, tag: Self.zstdTag, stored: $0, length: bytes.count) }
        }
        return batch.append(hash, tag: Self.rawTag, stored: bytes, length: bytes.count)
    }

    /// Stores a chunk durably (``stage(_:_:compressor:)`` then commit).
    func write(_ hash: ContentHash, _ bytes: UnsafeRawBufferPointer, compressor: ZstdCompressor?) throws(AssetError) {
        let pending = try stage(hash, bytes, compressor: compressor)
        do throws(AssetError) { try segments.commit([pending]) } catch {
            segments.discard([pending])
            throw error
        }
    }

    /// Reads a chunk and checks it against `hash` (and `length`, when known).
    ///
    /// - Parameters:
    ///   - at: a record not yet committed (a fetch reading back what it wrote); nil reads the
    ///     stored chunk.
    ///   - scratch: reused between reads.
    ///   - verify: false skips the hash check (for bytes sent to a peer, which checks them
    ///     itself); the length and the record's format are still checked.
    /// - Throws: ``AssetError`` `assetNotAvailable` (no such chunk), `assetFileModified` (the
    ///   record or file does not decode or does not match its hash; it has been dropped), or `io`.
    func read(
        _ hash: ContentHash, length: Int?, of asset: ContentHash?, at pending: SegmentStore.Location? = nil,
        scratch: inout [UInt8],
        decompressor: ZstdDecompressor, verify: Bool = true
    ) throws(AssetError) -> [UInt8] {
        try withChunk(
            hash, length: length, of: asset, at: pending, scratch: &scratch, decompressor: decompressor, verify: verify
        ) { Array($0) }
    }

    /// Reads a chunk as ``read(_:length:of:at:scratch:decompressor:verify:)`` does and passes its
    /// bytes to `body` where they lie — in `scratch` for a raw record — without copying them out
    /// (the asset lane lays a served chunk straight into its frame's payload). Throws as `read` does.
    func withChunk<R>(
        _ hash: ContentHash, length: Int?, of asset: ContentHash?, at pending: SegmentStore.Location? = nil,
        scratch: inout [UInt8],
        decompressor: ZstdDecompressor, verify: Bool = true, _ body: (UnsafeRawBufferPointer) -> R
    ) throws(AssetError) -> R {
        let of = asset.map { " (part of asset \($0))" } ?? ""
        if let location = pending ?? segments.location(of: hash) {
            let result: R? =
                if try segments.read(hash, at: location, into: &scratch) {
                    withBytes(of: scratch) {
                        decoded(
                            tag: location.tag, UnsafeRawBufferPointer(rebasing: $0[SegmentStore.headerBytes...]),
                            hash: hash, length: length, decompressor: decompressor, verify: verify, body)
                    }
                } else { nil }
            guard let result else {
                if pending == nil { segments.remove(hash, at: location) }
                let path = location.segment.path
                throw .modified(
                    "the record of chunk \(hash)\(of) at offset \(location.offset) of segment \(path) does not hold that chunk — it was changed or damaged on disk; it has been dropped from the store: fetch the asset's missing chunks from a peer or import it again",
                    hash: hash, path: path)
            }
            return result
        }
        guard let legacy else { throw .missingChunk(hash, of: asset) }
        let path = legacy.path(of: hash)
        guard try legacy.read(hash, into: &scratch, maxBytes: maximumBytes &+ 1) else {
            throw .missingChunk(hash, of: asset)
        }
        let result: R? = withBytes(of: scratch) { file in
            file.isEmpty
                ? nil
                : decoded(
                    tag: file[0], UnsafeRawBufferPointer(rebasing: file[1...]), hash: hash, length: length,
                    decompressor: decompressor, verify: verify, body)
        }
        guard let result else {
            _ = try? legacy.remove(hash)
            throw .modified(
                "chunk file \(path)\(of) does not hold the chunk its name says — it was changed or damaged on disk; it has been removed: fetch the asset's missing chunks from a peer or import it again",
                hash: hash, path: path)
        }
        return result
    }

    /// The chunk's bytes from a stored form, or nil when they are not the chunk `hash` (unknown
    /// tag, a frame that does not decode, a wrong length, or — when `verify` — a different SHA-256).
    func decode(
        tag: UInt8, _ stored: UnsafeRawBufferPointer, hash: ContentHash, length: Int?, decompressor: ZstdDecompressor,
        verify: Bool = true
    ) -> [UInt8]? {
        decoded(tag: tag, stored, hash: hash, length: length, decompressor: decompressor, verify: verify) { Array($0) }
    }

    /// `body` of the chunk's bytes from a stored form (`stored` itself for a raw record), or nil
    /// when they are not the chunk `hash`, as ``decode(tag:_:hash:length:decompressor:verify:)``.
    func decoded<R>(
        tag: UInt8, _ stored: UnsafeRawBufferPointer, hash: ContentHash, length: Int?, decompressor: ZstdDecompressor,
        verify: Bool = true, _ body: (UnsafeRawBufferPointer) -> R
    ) -> R? {
        func checked(_ bytes: UnsafeRawBufferPointer) -> R? {
            guard length == nil || bytes.count == length, !verify || ContentHash.sha256(bytes) == hash else {
                return nil
            }
            return body(bytes)
        }
        switch tag {
        case Self.rawTag:
            return checked(stored)
        case Self.zstdTag:
            let bytes: [UInt8]
            do throws(WireError) {
                bytes = try decompressor.decompress(stored, base: 0, maxBytes: maximumBytes, dictionary: nil)
            } catch { return nil }
            return withBytes(of: bytes) { checked($0) }
        default:
            return nil
        }
    }
}
