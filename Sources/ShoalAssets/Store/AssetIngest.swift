// AssetIngest: one import in progress — a fixed read-ahead buffer, FastCDC cuts, two SHA-256s
// in the same pass, pins, and chunk writes; then the manifest.

import ShoalWire

/// What an import did, for tests and benchmarks: proof that memory stayed bounded and that
/// known chunks were not written again.
package struct IngestStatistics: Sendable {
    /// The read-ahead buffer's size: the import's only buffer of content.
    package var bufferBytes = 0
    /// The most content bytes the buffer held at once.
    package var peakBufferedBytes = 0
    /// Chunks cut.
    package var chunks = 0
    /// Chunks written (the rest were already stored).
    package var newChunks = 0
    /// Bytes of the chunks written.
    package var newChunkBytes: Int64 = 0
    /// Times the import took the actor to pin a batch of chunks.
    package var pinBatches = 0
}

/// One import: content goes into a fixed buffer; whenever at least a maximum chunk is buffered
/// (or the content ended), chunks are cut, hashed, pinned and written, and the rest is moved to
/// the front. Not thread-safe: one task drives it.
final class AssetIngest {
    let store: AssetStore
    let chunkStore: ChunkStore
    let parameters: ChunkingParameters
    let pin: AssetPin
    let limit: Int64
    let path: String?
    let totalBytes: Int64?
    let progress: AssetProgressHandler?
    /// One per lane of ``inTwoLanes(_:_:)`` (a context serves one thread at a time); nil without compression.
    let compressors: [ZstdCompressor?]
    private let buffer: UnsafeMutableRawBufferPointer
    private var head = 0
    private var tail = 0
    private var whole = ContentHasher()
    private var size: Int64 = 0
    private var manifestChunks: [AssetManifest.Chunk] = []
    /// Chunks appended to segments (writeback started), made durable and stored together by
    /// ``finish()``: one `fdatasync` per segment for the whole import.
    private var staged: [SegmentStore.Pending] = []
    private var stagedHashes: Set<ContentHash> = []
    private(set) var statistics = IngestStatistics()

    init(store: AssetStore, pin: AssetPin, path: String?, totalBytes: Int64?, progress: AssetProgressHandler?) {
        self.store = store
        let c = store.configuration
        chunkStore = store.chunks
        parameters = c.chunking
        self.pin = pin
        limit = c.maxAssetBytes
        self.path = path
        self.totalBytes = totalBytes
        self.progress = progress
        if case .zstd = c.compression {
            compressors = [ZstdCompressor(), ZstdCompressor()]
        } else {
            compressors = [nil, nil]
        }
        buffer = .allocate(byteCount: c.readBufferBytes, alignment: 16)
        statistics.bufferBytes = c.readBufferBytes
    }

    deinit {
        chunkStore.segments.discard(staged)
        buffer.deallocate()
    }

    /// Free space at the end of the buffer, after moving unconsumed bytes to the front when the
    /// end is reached. Never empty while the buffer is not full of unconsumed bytes.
    func freeSpace() -> UnsafeMutableRawBufferPointer {
        if tail == buffer.count && head > 0 {
            let n = tail - head
            // No overlap: fewer than a maximum chunk remain, and the buffer holds at least two.
            if n > 0, let base = buffer.baseAddress { base.copyMemory(from: base + head, byteCount: n) }
            head = 0
            tail = n
        }
        return UnsafeMutableRawBufferPointer(rebasing: buffer[tail...])
    }

    /// Records that `count` bytes were written into ``freeSpace()``; cuts chunks when the buffer is full.
    func didFill(_ count: Int) async throws {
        guard count > 0 else { return }
        tail += count
        size += Int64(count)
        guard size <= limit else { throw AssetError.tooLarge(size, limit: limit, path: path) }
        statistics.peakBufferedBytes = max(statistics.peakBufferedBytes, tail - head)
        if tail == buffer.count { try await drain(final: false) }
    }

    /// Copies `bytes` in, cutting chunks whenever the buffer fills.
    func append(_ bytes: [UInt8]) async throws {
        var offset = 0
        while offset < bytes.count {
            let space = freeSpace()
            let n = min(space.count, bytes.count - offset)
            bytes.withUnsafeBytes { src in
                if let dst = space.baseAddress, let s = src.baseAddress {
                    dst.copyMemory(from: s + offset, byteCount: n)
                }
            }
            offset += n
            try await didFill(n)
        }
    }

    /// Cuts every chunk that can be cut now (all of them when `final`), pins them, writes the new ones.
    private func drain(final: Bool) async throws {
        let batch = cut(final: final)
        guard !batch.isEmpty else { return }
        statistics.pinBatches += 1
        await store.hold(chunks: batch.map(\.chunk.hash), in: pin)
        try write(batch)
        manifestChunks.append(contentsOf: batch.map(\.chunk))
        statistics.chunks = manifestChunks.count
        progress?(
            AssetProgress(
                completedBytes: size - Int64(tail - head), totalBytes: totalBytes, chunks: manifestChunks.count))
    }

    /// Cuts and hashes the chunks the buffer holds completely (all of them when `final`),
    /// feeding the whole-content hash; returns each chunk with its offset in the buffer.
    private func cut(final: Bool) -> [(offset: Int, chunk: AssetManifest.Chunk)] {
        var batch: [(offset: Int, chunk: AssetManifest.Chunk)] = []
        let need = final ? 1 : parameters.maximumBytes
        while tail - head >= need {
            let data = UnsafeRawBufferPointer(rebasing: buffer[head..<tail])
            let length = parameters.cutPoint(in: data)
            let bytes = UnsafeRawBufferPointer(rebasing: data[..<length])
            batch.append((head, AssetManifest.Chunk(hash: whole.updateHashing(bytes), length: length)))
            head += length
        }
        return batch
    }

    /// Appends the chunks of `batch` the store lacks to segments (two at a time).
    private func write(_ batch: [(offset: Int, chunk: AssetManifest.Chunk)]) throws(AssetError) {
        var fresh: [(offset: Int, chunk: AssetManifest.Chunk)] = []
        for item in batch where !stagedHashes.contains(item.chunk.hash) && !chunkStore.contains(item.chunk.hash) {
            stagedHashes.insert(item.chunk.hash)
            fresh.append(item)
        }
        let chunkStore = chunkStore, shared = LaneSlots((buffer, compressors)), work = fresh
        let stage: @Sendable (Int, Int) -> Result<SegmentStore.Pending, AssetError> = { i, lane in
            let (offset, chunk) = work[i]
            let bytes = UnsafeRawBufferPointer(rebasing: shared.slots.0[offset..<offset + chunk.length])
            return Result { () throws(AssetError) in
                try chunkStore.stage(chunk.hash, bytes, compressor: shared.slots.1[lane])
            }
        }
        let results =
            store.configuration.importsInOneLane ? work.indices.map { stage($0, 0) } : inTwoLanes(work.count, stage)
        var failure: AssetError?
        for (result, item) in zip(results, fresh) {
            switch result {
            case .success(let file):
                staged.append(file)
                statistics.newChunks += 1
                statistics.newChunkBytes += Int64(item.chunk.length)
            case .failure(let error):
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }

    /// Cuts the last chunks, makes them durable, pins the asset and writes its manifest.
    func finish() async throws -> Asset {
        try await drain(final: true)
        try chunkStore.segments.commit(staged)
        staged = []
        let asset = Asset(hash: whole.finalize(), size: size)
        if manifestChunks.isEmpty { progress?(AssetProgress(completedBytes: 0, totalBytes: totalBytes, chunks: 0)) }
        try await store.storeManifest(AssetManifest(asset: asset, chunks: manifestChunks), pin: pin)
        return asset
    }
}
