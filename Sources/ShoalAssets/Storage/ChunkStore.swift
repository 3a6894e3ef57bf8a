// ChunkStore: chunk files — one tag byte (raw or zstd) and the bytes, named by the SHA-256 of
// the raw bytes; compressed only when that pays; verified on every read.

import ShoalWire

/// How the chunk store keeps chunk bytes on disk.
public enum ChunkCompression: Hashable, Sendable {
    /// Raw bytes.
    case none
    /// Each chunk is trial-compressed with zstd at `level` and kept compressed only if that saves
    /// at least 1/32 (about 3 %) of its size.
    case zstd(level: Int32)
}

/// The chunk files of an asset store (`<assets>/chunks/ab/abcdef…`).
///
/// A chunk file is one tag byte, 0 (raw) or 1 (one zstd frame declaring its content size), then
/// the bytes. The name is the SHA-256 of the raw bytes, and every read checks it: a file that
/// does not decode or hash to its name is removed (so ``AssetStore/missingChunks(of:)-(Asset)``
/// lists it for a refetch) and reported as `assetFileModified`.
struct ChunkStore: Sendable {
    static let rawTag: UInt8 = 0
    static let zstdTag: UInt8 = 1

    let objects: ObjectDirectory
    let maximumBytes: Int
    let compression: ChunkCompression

    /// Whether the chunk is stored (its file exists; its bytes are checked when read).
    func contains(_ hash: ContentHash) -> Bool { objects.contains(hash) }

    /// Writes a chunk whose hash the caller computed into a temporary file (compressed if that
    /// pays); ``ObjectDirectory/publish(_:)`` puts it under its name.
    func stage(_ hash: ContentHash, _ bytes: UnsafeRawBufferPointer, compressor: ZstdCompressor?) throws(AssetError) -> ObjectDirectory.StagedFile {
        if case .zstd(let level) = compression, let compressor, bytes.count >= 64,
           let packed = compressor.compress(bytes, level: level, dictionary: nil, notBelow: bytes.count &- bytes.count / 32) {
            return try withBytes(of: [Self.zstdTag]) { (tag) throws(AssetError) -> ObjectDirectory.StagedFile in
                try withBytes(of: packed) { (p) throws(AssetError) -> ObjectDirectory.StagedFile in try objects.stage(hash, parts: [tag, p]) }
            }
        }
        return try withBytes(of: [Self.rawTag]) { (tag) throws(AssetError) -> ObjectDirectory.StagedFile in try objects.stage(hash, parts: [tag, bytes]) }
    }

    /// Writes a chunk under its name; returns the shard folder to fsync.
    func write(_ hash: ContentHash, _ bytes: UnsafeRawBufferPointer, compressor: ZstdCompressor?) throws(AssetError) -> String {
        try objects.publish(try stage(hash, bytes, compressor: compressor))
    }

    /// Reads a chunk and checks it against `hash` (and `length`, when known).
    ///
    /// - Parameter scratch: reused for compressed files.
    /// - Throws: ``AssetError`` `assetNotAvailable` (no such chunk), `assetFileModified` (the file
    ///   does not decode or does not match its hash; it has been removed), or `io`.
    /// - Parameter verify: false skips the hash check (for bytes sent to a peer, which checks
    ///   them itself); the length and the file's format are still checked.
    func read(_ hash: ContentHash, length: Int?, of asset: ContentHash?, scratch: inout [UInt8], decompressor: ZstdDecompressor,
              verify: Bool = true) throws(AssetError) -> [UInt8] {
        let path = objects.path(of: hash)
        guard try objects.read(hash, into: &scratch, maxBytes: maximumBytes &+ 1) else { throw .missingChunk(hash, of: asset) }
        guard let bytes = decode(scratch, hash: hash, length: length, decompressor: decompressor, verify: verify) else {
            _ = try? objects.remove(hash)
            let of = asset.map { " (part of asset \($0))" } ?? ""
            throw .modified("chunk file \(path)\(of) does not hold the chunk its name says — it was changed or damaged on disk; it has been removed: fetch the asset's missing chunks from a peer or import it again", hash: hash, path: path)
        }
        return bytes
    }

    /// The chunk's bytes from the contents of a chunk file, or nil when they are not the chunk
    /// `hash` (unknown tag, a frame that does not decode, a wrong length, or — when `verify` —
    /// a different SHA-256).
    func decode(_ file: [UInt8], hash: ContentHash, length: Int?, decompressor: ZstdDecompressor, verify: Bool = true) -> [UInt8]? {
        let scratch = file
        var bytes: [UInt8] = []
        var valid = false
        switch scratch.first {
        case Self.rawTag?:
            bytes = Array(scratch[1...])
            valid = true
        case Self.zstdTag?:
            do throws(WireError) {
                bytes = try withBytes(of: scratch) { (raw) throws(WireError) -> [UInt8] in
                    try decompressor.decompress(UnsafeRawBufferPointer(rebasing: raw[1...]), base: 1, maxBytes: maximumBytes, dictionary: nil)
                }
                valid = true
            } catch {}
        default:
            break
        }
        guard valid, length == nil || bytes.count == length, !verify || ContentHash.sha256(bytes) == hash else { return nil }
        return bytes
    }
}
