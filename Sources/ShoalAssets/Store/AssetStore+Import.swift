// AssetStore+Import: importing a file, bytes or an async stream of buffers, in bounded memory.

public import ShoalWire

extension AssetStore {
    /// Imports the file at `path`: chunks it, stores the chunks this store lacks and the manifest,
    /// and returns the asset (SHA-256 of the whole content and size), all in one pass over the file
    /// with ``Configuration/readBufferBytes`` of memory.
    ///
    /// - Parameters:
    ///   - pin: adds the asset and its chunks to this pin (see ``AssetPin``); without one, the
    ///     asset is protected from garbage collection only while it is being imported.
    ///   - progress: called after every buffer of chunks and at the end.
    /// - Throws: ``AssetError`` `assetFileNotFound` (no such file, or not a regular file),
    ///   `limitExceeded` (larger than ``Configuration/maxAssetBytes``), `assetFileModified` (the
    ///   file changed while it was read), `io`; `CancellationError` when the calling task is
    ///   cancelled (checked before each buffer is read: no manifest is written, and the chunks
    ///   stored so far are garbage once `pin` is released).
    public nonisolated func importFile(at path: String, pin: AssetPin? = nil, progress: AssetProgressHandler? = nil)
        async throws -> Asset
    {
        try await importFileWithStatistics(at: path, pin: pin, progress: progress).asset
    }

    /// ``importFile(at:pin:progress:)``, also returning what the import did.
    package nonisolated func importFileWithStatistics(
        at path: String, pin: AssetPin? = nil, progress: AssetProgressHandler? = nil
    ) async throws -> (asset: Asset, statistics: IngestStatistics) {
        let file = try POSIXFile.openForReading(path)
        defer { file.close() }
        let before = try file.status()
        guard before.isRegular else { throw AssetError.assetFileNotFound(path, "is not a regular file") }
        guard before.size <= configuration.maxAssetBytes else {
            throw AssetError.tooLarge(before.size, limit: configuration.maxAssetBytes, path: path)
        }
        return try await withPin(pin) { pin in
            let ingest = AssetIngest(store: self, pin: pin, path: path, totalBytes: before.size, progress: progress)
            var read: Int64 = 0
            while true {
                // A cancelled import stops at the next buffer, before the manifest exists.
                if Task.isCancelled { throw CancellationError() }
                let n = try file.read(into: ingest.freeSpace())
                if n == 0 { break }
                read += Int64(n)
                try await ingest.didFill(n)
            }
            guard read == before.size, try file.status() == before else {
                throw AssetError.modified(
                    "\(path) changed while it was being imported (size or modification time differs from when the import began); import it again once it is no longer being written",
                    hash: nil, path: path)
            }
            return (try await ingest.finish(), ingest.statistics)
        }
    }

    /// Imports `bytes` as an asset.
    ///
    /// - Throws: ``AssetError`` `limitExceeded` (larger than ``Configuration/maxAssetBytes``), `io`.
    public nonisolated func importBytes(_ bytes: [UInt8], pin: AssetPin? = nil, progress: AssetProgressHandler? = nil)
        async throws -> Asset
    {
        guard Int64(bytes.count) <= configuration.maxAssetBytes else {
            throw AssetError.tooLarge(Int64(bytes.count), limit: configuration.maxAssetBytes, path: nil)
        }
        return try await withPin(pin) { pin in
            let ingest = AssetIngest(
                store: self, pin: pin, path: nil, totalBytes: Int64(bytes.count), progress: progress)
            try await ingest.append(bytes)
            return try await ingest.finish()
        }
    }

    /// Imports the concatenation of the buffers `source` yields, whatever their sizes, holding
    /// at most ``Configuration/readBufferBytes`` of content (plus the buffer being copied in).
    ///
    /// - Throws: ``AssetError`` `limitExceeded` (more than ``Configuration/maxAssetBytes`` bytes;
    ///   the import stops there), `io`, or whatever `source` throws.
    public nonisolated func importStream<Source: AsyncSequence>(
        _ source: Source, pin: AssetPin? = nil, progress: AssetProgressHandler? = nil
    ) async throws -> Asset
    where Source.Element == [UInt8] {
        try await withPin(pin) { pin in
            let ingest = AssetIngest(store: self, pin: pin, path: nil, totalBytes: nil, progress: progress)
            for try await buffer in source {
                try await ingest.append(buffer)
            }
            return try await ingest.finish()
        }
    }

    /// Pins the manifest's asset and writes the manifest unless the store already has it. The
    /// caller has stored (made durable) every chunk it lists.
    nonisolated func storeManifest(_ manifest: AssetManifest, pin: AssetPin) async throws {
        await hold(chunks: [], asset: manifest.asset.hash, in: pin)
        guard !manifests.contains(manifest.asset.hash) else { return }
        let shard = try withBytes(of: manifest.encoded()) { (bytes) throws(AssetError) -> String in
            try manifests.write(manifest.asset.hash, parts: [bytes])
        }
        try manifests.syncShards([shard])
    }
}
