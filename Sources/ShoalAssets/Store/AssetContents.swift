// AssetContents: an asset's content as an AsyncSequence of chunk-sized buffers, each verified.

public import ShoalWire

/// An asset's content, one buffer per chunk (at most ``ChunkingParameters/maximumBytes``), in
/// order. Each chunk is read from disk and checked against its hash when the iterator reaches it,
/// so memory stays at about one chunk whatever the asset's size.
///
/// Obtained from ``AssetStore/contents(of:)``. Iterating fails with ``AssetError``
/// `assetFileModified` when a stored chunk no longer matches its hash (it is dropped; fetch
/// the asset's missing chunks again), `assetNotAvailable` when a chunk was removed meanwhile (an
/// asset that is neither pinned nor kept can be garbage-collected while it is read), or `io`.
public struct AssetContents: AsyncSequence, Sendable {
    /// A chunk's bytes.
    public typealias Element = [UInt8]
    /// Iteration throws only ``AssetError``.
    public typealias Failure = AssetError

    /// The manifest being read.
    public let manifest: AssetManifest
    let chunks: ChunkStore

    /// Reads the chunks one at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let manifest: AssetManifest
        let chunks: ChunkStore
        var index = 0
        var scratch: [UInt8] = []
        let decompressor = ZstdDecompressor()

        /// The next chunk's verified bytes, or nil after the last.
        public mutating func next() async throws(AssetError) -> [UInt8]? {
            try nextChunk()
        }

        /// The next chunk's verified bytes, or nil after the last.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(AssetError) -> [UInt8]? {
            try nextChunk()
        }

        mutating func nextChunk() throws(AssetError) -> [UInt8]? {
            guard index < manifest.chunks.count else { return nil }
            let chunk = manifest.chunks[index]
            index += 1
            return try chunks.read(
                chunk.hash, length: chunk.length, of: manifest.asset.hash, scratch: &scratch, decompressor: decompressor
            )
        }
    }

    /// An iterator from the first chunk.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(manifest: manifest, chunks: chunks) }
}

extension AssetStore {
    /// The asset's content as a sequence of verified chunk-sized buffers.
    ///
    /// - Throws: ``AssetError`` `assetNotAvailable` when the store lacks the manifest or any
    ///   chunk (checked before the first buffer, by file presence), `invalidArguments` or
    ///   `assetFileModified` for a damaged manifest, `io`.
    public nonisolated func contents(of asset: Asset) throws(AssetError) -> AssetContents {
        let manifest = try self.manifest(of: asset)
        if let missing = missingChunks(of: manifest).first { throw .missingChunk(missing.hash, of: asset.hash) }
        return AssetContents(manifest: manifest, chunks: chunks)
    }

    /// Writes the asset's content to a new file at `path`, replacing any file there.
    ///
    /// The content goes to a temporary file beside `path` (fsynced when ``Configuration/fsync``
    /// is on) that is renamed to `path` only once every chunk was read and verified, so `path`
    /// never holds a partial or wrong copy. Memory: one chunk.
    ///
    /// - Throws: ``AssetError`` `assetNotAvailable` (manifest or chunk missing),
    ///   `assetFileModified` (a chunk damaged on disk), `io` (cannot create or write the file).
    public nonisolated func write(_ asset: Asset, to path: String, progress: AssetProgressHandler? = nil) async throws {
        let contents = try contents(of: asset)
        let target = FileSystem.absolute(path)
        guard let slash = target.lastIndex(of: "/") else {
            throw AssetError(.io, "cannot write asset \(asset.hash) to \(path): not a path to a file", hash: asset.hash)
        }
        let folder = slash == target.startIndex ? "/" : String(target[..<slash])
        let temp =
            folder + "/." + target[target.index(after: slash)...] + "."
            + String(UInt64.random(in: 0 ... .max), radix: 36) + ".shoal-tmp"
        let file = try POSIXFile.create(temp)
        do {
            var done: Int64 = 0
            var count = 0
            for try await buffer in contents {
                try withBytes(of: buffer) { (raw) throws(AssetError) in try file.write(raw) }
                done += Int64(buffer.count)
                count += 1
                progress?(AssetProgress(completedBytes: done, totalBytes: asset.size, chunks: count))
            }
            if count == 0 { progress?(AssetProgress(completedBytes: 0, totalBytes: 0, chunks: 0)) }
            if configuration.fsync { try file.sync() }
            file.close()
            try FileSystem.rename(temp, to: target)
            if configuration.fsync { try FileSystem.syncDirectory(folder) }
        } catch {
            file.close()
            _ = try? FileSystem.remove(temp)
            throw error
        }
    }
}
