// AssetStore+Transfer: what the transfer lane asks of the store — manifests, missing chunks,
// verified inserts of chunks and manifests from peers, completeness.

public import ShoalWire

extension AssetStore {
    /// The stored manifest of `asset`.
    ///
    /// - Throws: ``AssetError`` `assetNotAvailable` (no manifest, or one for a different size),
    ///   `invalidArguments` (the manifest file does not decode: damaged on disk), `io`.
    public nonisolated func manifest(of asset: Asset) throws(AssetError) -> AssetManifest {
        var bytes: [UInt8] = []
        // A manifest lists at most maxAssetBytes / minimumBytes + 1 chunks of at most 37 bytes.
        let limit = 64 + Int(configuration.maxAssetBytes / Int64(configuration.chunking.minimumBytes) + 1) * 37
        guard try manifests.read(asset.hash, into: &bytes, maxBytes: limit) else { throw .noManifest(asset.hash) }
        let manifest: AssetManifest
        do { manifest = try AssetManifest(decoding: bytes) } catch {
            throw .invalidManifest(
                asset.hash,
                "the file \(manifests.path(of: asset.hash)) was damaged on disk (\(error.message)); remove it and fetch the manifest from a peer again"
            )
        }
        guard manifest.asset.hash == asset.hash else {
            throw .invalidManifest(
                asset.hash,
                "the file \(manifests.path(of: asset.hash)) holds the manifest of \(manifest.asset.hash); remove it and fetch the manifest again"
            )
        }
        guard manifest.asset.size == asset.size else {
            throw AssetError(
                .assetNotAvailable,
                "asset \(asset.hash) is stored with \(manifest.asset.size) bytes, not the \(asset.size) this reference says; the reference is wrong",
                hash: asset.hash)
        }
        return manifest
    }

    /// The chunks of `manifest` that this store lacks, in content order, each once: what to fetch
    /// from a peer before ``insertManifest(_:pin:)``.
    public nonisolated func missingChunks(of manifest: AssetManifest) -> [AssetManifest.Chunk] {
        var seen: Set<ContentHash> = []
        return manifest.chunks.filter { seen.insert($0.hash).inserted && !chunks.contains($0.hash) }
    }

    /// The chunks of a stored asset that this store lacks (say, removed after being found
    /// damaged), in content order, each once.
    ///
    /// - Throws: ``AssetError`` `assetNotAvailable` when the store has no manifest for `asset`:
    ///   fetch the manifest from a peer and call ``missingChunks(of:)-(AssetManifest)``.
    public nonisolated func missingChunks(of asset: Asset) throws(AssetError) -> [AssetManifest.Chunk] {
        missingChunks(of: try manifest(of: asset))
    }

    /// Whether the store holds the asset's manifest and every chunk it lists (chunks are
    /// checked for presence; their bytes are verified when read).
    ///
    /// - Throws: ``AssetError`` for a damaged manifest or an I/O failure.
    public nonisolated func isComplete(_ asset: Asset) throws(AssetError) -> Bool {
        do {
            return missingChunks(of: try manifest(of: asset)).isEmpty
        } catch  where error.code == .assetNotAvailable {
            return false
        }
    }

    /// Starts receiving the asset `manifest` describes from peers: checks the manifest's sizes,
    /// pins its chunks in `pin` and notes which ones the store lacks. Feed the chunks to the
    /// returned ``IncomingAsset`` and ``IncomingAsset/commit()`` it; the store holds the asset
    /// only then. Chunks the store already has are read and verified by the commit.
    ///
    /// - Throws: ``AssetError`` `invalidArguments` (the manifest breaks the size rules),
    ///   `limitExceeded` (over ``Configuration/maxAssetBytes``).
    public nonisolated func beginReceiving(_ manifest: AssetManifest, pin: AssetPin) async throws -> IncomingAsset {
        try manifest.validate(configuration.chunking, maxAssetBytes: configuration.maxAssetBytes)
        // Pinned before checking which exist (§7's order).
        await hold(chunks: manifest.chunks.map(\.hash), in: pin)
        let wanted = Set(missingChunks(of: manifest).map(\.hash))
        return IncomingAsset(manifest: manifest, store: self, pin: pin, wanted: wanted)
    }

    /// Stores a chunk that arrived from a peer, after checking that `bytes` hash to `hash`.
    ///
    /// - Parameter pin: holds the chunk until the manifest that needs it is inserted; without
    ///   one, garbage collection may remove it again before that.
    /// - Throws: ``AssetError`` `limitExceeded` (longer than the maximum chunk),
    ///   `assetFileModified` (the bytes are not the chunk `hash` names: ask again or another peer), `io`.
    public nonisolated func insertChunk(_ bytes: [UInt8], hash: ContentHash, pin: AssetPin? = nil) async throws {
        let maximum = configuration.chunking.maximumBytes
        guard bytes.count <= maximum else {
            throw AssetError(
                .limitExceeded,
                "chunk \(hash) from a peer has \(bytes.count) bytes, over the maximum chunk size of \(maximum) (Spec/assets.md §2); the peer chunks differently — it cannot be used",
                hash: hash)
        }
        let actual = ContentHash.sha256(bytes)
        guard actual == hash else {
            throw AssetError.modified(
                "bytes received as chunk \(hash) hash to \(actual): they are not that chunk (corrupted or wrong); request the chunk again, or from another peer",
                hash: hash)
        }
        try await withPin(pin) { pin in
            await hold(chunks: [hash], in: pin)
            guard !chunks.contains(hash) else { return }
            let compressor: ZstdCompressor? =
                if case .zstd = configuration.compression { ZstdCompressor() } else { nil }
            try withBytes(of: bytes) { (raw) throws(AssetError) in try chunks.write(hash, raw, compressor: compressor) }
        }
    }

    /// Stores a manifest that arrived from a peer, once every chunk it lists is here: reads the
    /// chunks in order, checks each against its hash and the chunking rules, and checks that
    /// together they hash to the manifest's asset. Does nothing if the manifest is already stored.
    ///
    /// - Parameter pin: also holds the asset; without one, only the keep set of the next garbage
    ///   collection protects it.
    /// - Throws: ``AssetError`` `assetNotAvailable` (a chunk is missing: fetch
    ///   ``missingChunks(of:)-(AssetManifest)`` first), `invalidArguments` (sizes or chunk
    ///   boundaries break the rules), `limitExceeded` (over ``Configuration/maxAssetBytes``),
    ///   `assetFileModified` (the chunks do not make up the asset, or one is damaged), `io`.
    public nonisolated func insertManifest(_ manifest: AssetManifest, pin: AssetPin? = nil) async throws {
        let asset = manifest.asset
        let parameters = configuration.chunking
        try manifest.validate(parameters, maxAssetBytes: configuration.maxAssetBytes)
        try await withPin(pin) { pin in
            await hold(chunks: manifest.chunks.map(\.hash), asset: asset.hash, in: pin)
            if manifests.contains(asset.hash) { return }
            let missing = missingChunks(of: manifest)
            if let first = missing.first {
                throw AssetError(
                    .assetNotAvailable,
                    "\(missing.count) of the \(manifest.chunks.count) chunks of asset \(asset.hash) are not in this store (first: \(first.hash)); insert the chunks missingChunks(of:) lists before the manifest",
                    hash: asset.hash)
            }
            var whole = ContentHasher()
            var scratch: [UInt8] = []
            let decompressor = ZstdDecompressor()
            for (i, c) in manifest.chunks.enumerated() {
                let bytes = try chunks.read(
                    c.hash, length: c.length, of: asset.hash, scratch: &scratch, decompressor: decompressor)
                try withBytes(of: bytes) { (raw) throws(AssetError) in
                    guard parameters.isCanonical(raw, last: i == manifest.chunks.count - 1) else {
                        throw .invalidManifest(
                            asset.hash,
                            "chunk \(i) (\(c.hash)) does not end where content-defined chunking cuts (Spec/assets.md §2); the peer chunks differently"
                        )
                    }
                    whole.update(raw)
                }
            }
            let actual = whole.finalize()
            guard actual == asset.hash else {
                throw AssetError.modified(
                    "the chunks of the manifest for asset \(asset.hash) hash to \(actual) together: the manifest is wrong; fetch it again or from another peer",
                    hash: asset.hash)
            }
            try await storeManifest(manifest, pin: pin)
        }
    }

    /// The bytes of chunk `index` (in manifest order) of a stored asset, verified: what a peer
    /// asking for that chunk is sent.
    ///
    /// - Throws: ``AssetError`` `assetNotAvailable` (no manifest, or the chunk is missing),
    ///   `invalidArguments` (no such index), `assetFileModified` (the chunk is damaged on disk; it
    ///   has been removed), `io`.
    public nonisolated func chunkBytes(_ index: Int, of asset: Asset) throws(AssetError) -> [UInt8] {
        let manifest = try manifest(of: asset)
        guard index >= 0, index < manifest.chunks.count else {
            throw AssetError(
                .invalidArguments,
                "asset \(asset.hash) has \(manifest.chunks.count) chunks; there is no chunk \(index)", hash: asset.hash)
        }
        return try chunkBytes(manifest.chunks[index], of: asset)
    }

    /// The bytes of one chunk of a manifest the caller already holds (no manifest read).
    ///
    /// - Parameter verify: false skips the SHA-256 check, for bytes sent to a peer that checks
    ///   them on arrival (the asset lane does); the length is still checked.
    /// - Throws: ``AssetError`` `assetNotAvailable` (the chunk is missing), `assetFileModified`
    ///   (damaged; removed), `io`.
    public nonisolated func chunkBytes(_ chunk: AssetManifest.Chunk, of asset: Asset, verify: Bool = true)
        throws(AssetError) -> [UInt8]
    {
        var scratch: [UInt8] = []
        return try chunks.read(
            chunk.hash, length: chunk.length, of: asset.hash, scratch: &scratch, decompressor: ZstdDecompressor(),
            verify: verify)
    }

    /// Reads one chunk of a manifest the caller holds, like ``chunkBytes(_:of:verify:)``, and
    /// passes its bytes to `body` where they were read (no copy for a chunk stored raw); `scratch`
    /// is reused between calls. Serving a run of chunks, the asset lane lays each one out in its
    /// frame's payload this way. Throws as ``chunkBytes(_:of:verify:)``.
    package nonisolated func withChunkBytes<R>(
        _ chunk: AssetManifest.Chunk, of asset: Asset, verify: Bool = true, scratch: inout [UInt8],
        _ body: (UnsafeRawBufferPointer) -> R
    ) throws(AssetError) -> R {
        try chunks.withChunk(
            chunk.hash, length: chunk.length, of: asset.hash, scratch: &scratch, decompressor: ZstdDecompressor(),
            verify: verify, body)
    }
}
