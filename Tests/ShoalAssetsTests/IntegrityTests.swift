// IntegrityTests: damaged chunk files are detected on read and healed by a refetch; dedupe after
// an edit; bounded memory while importing and exporting.

import Testing
@testable import ShoalAssets
import ShoalWire
import Foundation

@Suite struct IntegrityTests {
    /// A small-chunk store (`compression`) holding an asset of text (compressible) then random bytes.
    static func mixedAsset(_ dir: TempDirectory, compression: ChunkCompression) async throws -> (
        AssetStore, [UInt8], Asset
    ) {
        let store = try AssetStore.temporary(dir, small: true) { $0.compression = compression }
        let text = Array(String(repeating: "assets are chunked by content; ", count: 3000).utf8)
        let bytes = text + randomBytes(60_000, seed: 8)
        return (store, bytes, try await store.importBytes(bytes))
    }

    /// Damages the middle of `chunk`'s record in its segment; returns the segment's path.
    static func damageRecord(of chunk: AssetManifest.Chunk, in store: AssetStore) throws -> String {
        let location = try #require(store.chunks.segments.location(of: chunk.hash))
        try damage(location.segment.path, at: location.offset + Int64(SegmentStore.headerBytes + location.stored / 2))
        return location.segment.path
    }

    @Test(arguments: [ChunkCompression.none, .zstd(level: 3)])
    func damagedChunkIsDetectedRemovedAndHealed(compression: ChunkCompression) async throws {
        let dir = TempDirectory()
        let (store, bytes, asset) = try await Self.mixedAsset(dir, compression: compression)
        let manifest = try store.manifest(of: asset)
        let victim = manifest.chunks[1]
        let path = try Self.damageRecord(of: victim, in: store)

        let e = await expectAssetError(.assetFileModified) { _ = try await store.readAll(asset) }
        #expect(e?.hash == victim.hash && e?.path == path)
        #expect(e?.message.contains("dropped") == true)
        // The damaged record is dropped, so the asset is incomplete and the chunk is listed for a refetch.
        #expect(!store.chunks.contains(victim.hash))
        #expect(try store.isComplete(asset) == false)
        #expect(try store.missingChunks(of: asset) == [victim])
        await expectAssetError(.assetNotAvailable) { try await store.write(asset, to: dir.path + "/out") }

        // A peer sends the chunk again: verified, stored, and the asset reads back.
        try await store.insertChunks([1], of: manifest.chunks, from: bytes)
        #expect(try await store.readAll(asset) == bytes)
    }

    @Test func damagedRecordHeadersAreDamage() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let bytes = randomBytes(50_000, seed: 12)
        let asset = try await store.importBytes(bytes)
        let chunks = try store.manifest(of: asset).chunks
        // The header's CRC, its tag (7 is no tag) and its hash.
        for (c, byte) in zip(chunks.prefix(3), [48, 4, 20]) {
            let l = try #require(store.chunks.segments.location(of: c.hash))
            try damage(l.segment.path, at: l.offset + Int64(byte))
        }
        var scratch: [UInt8] = []
        for c in chunks.prefix(3) {
            await expectAssetError(.assetFileModified) {
                _ = try store.chunks.read(
                    c.hash, length: c.length, of: asset.hash, scratch: &scratch, decompressor: ZstdDecompressor())
            }
        }
        #expect(try store.missingChunks(of: asset).map(\.hash) == chunks.prefix(3).map(\.hash))
    }

    /// A store written before segments keeps one file per chunk (`chunks/ab/<hash>`, a tag byte
    /// then the bytes): still read, verified and collected.
    @Test func chunkFilesOfOlderStoresAreReadCheckedAndCollected() async throws {
        let source = TempDirectory(), dir = TempDirectory()
        let writer = try AssetStore.temporary(source, small: true)
        let bytes = randomBytes(90_000, seed: 14)
        let asset = try await writer.importBytes(bytes)
        let chunks = try writer.manifest(of: asset).chunks
        // Lay the asset out as an older store did.
        let old = try ObjectDirectory(
            root: dir.path + "/assets/chunks", temporary: dir.path + "/assets/tmp", sync: false)
        var offset = 0
        for c in chunks {
            try withBytes(of: [ChunkStore.rawTag] + bytes[offset..<offset + c.length]) { (raw) throws(AssetError) in
                _ = try old.write(c.hash, parts: [raw])
            }
            offset += c.length
        }
        let manifests = try ObjectDirectory(
            root: dir.path + "/assets/manifests", temporary: dir.path + "/assets/tmp", sync: false)
        try withBytes(of: try writer.manifest(of: asset).encoded()) { (raw) throws(AssetError) in
            _ = try manifests.write(asset.hash, parts: [raw])
        }

        let store = try AssetStore.temporary(dir, small: true)
        #expect(store.chunks.legacy != nil && store.chunks.segments.hashes().isEmpty)
        #expect(try store.isComplete(asset))
        #expect(try await store.readAll(asset) == bytes)
        // Truncated, an unknown tag byte, and an empty file.
        var a = try readFile(old.path(of: chunks[0].hash)); a.removeLast()
        try Data(a).write(to: URL(fileURLWithPath: old.path(of: chunks[0].hash)))
        try damage(old.path(of: chunks[1].hash), at: 0, to: 7)
        try Data().write(to: URL(fileURLWithPath: old.path(of: chunks[2].hash)))
        var scratch: [UInt8] = []
        for c in chunks.prefix(3) {
            let e = await expectAssetError(.assetFileModified) {
                _ = try store.chunks.read(
                    c.hash, length: c.length, of: asset.hash, scratch: &scratch, decompressor: ZstdDecompressor())
            }
            #expect(e?.path == old.path(of: c.hash))
        }
        #expect(try store.missingChunks(of: asset).map(\.hash) == chunks.prefix(3).map(\.hash))
        // Refetched chunks go to a segment; collection removes the old files with the asset.
        try await store.insertChunks(0..<3, of: chunks, from: bytes)
        #expect(try await store.readAll(asset) == bytes)
        let report = try await store.collectGarbage(keeping: [])
        #expect(report.chunksRemoved == chunks.count && report.chunksKept == 0)
        #expect(try old.allHashes().isEmpty && store.chunks.segments.hashes().isEmpty)
    }

    @Test func damagedManifestIsReported() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let asset = try await store.importBytes(randomBytes(30_000, seed: 13))
        let path = store.manifests.path(of: asset.hash)
        var m = try readFile(path); m[40] ^= 1
        try Data(m).write(to: URL(fileURLWithPath: path))
        let e = await expectAssetError(.invalidArguments) { _ = try store.manifest(of: asset) }
        #expect(e?.message.contains(path) == true && e?.message.contains("damaged") == true)
    }

    /// Editing 1 MiB in the middle of a 16 MiB file re-uses all but a few chunks.
    @Test func editInTheMiddleReusesAlmostEveryChunk() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir)
        var bytes = randomBytes(16 << 20, seed: 21)
        let first = try await store.importFileWithStatistics(at: try dir.file("v1", bytes))
        let middle = (8 << 20) - (1 << 19)
        let edit = randomBytes(1 << 20, seed: 22)
        bytes.replaceSubrange(middle..<middle + (1 << 20), with: edit)
        let second = try await store.importFileWithStatistics(at: try dir.file("v2", bytes))
        #expect(second.asset == assetOf(bytes) && second.asset != first.asset)
        let s = second.statistics
        #expect(s.newChunkBytes >= 1 << 20)
        #expect(s.newChunkBytes <= 2 << 20, "new chunks hold \(s.newChunkBytes) bytes")
        #expect(s.newChunks <= 20 && s.chunks - s.newChunks >= first.statistics.chunks - 20)
        // Re-importing the same file writes nothing.
        let third = try await store.importFileWithStatistics(at: dir.path + "/v2")
        #expect(third.statistics.newChunks == 0 && third.asset == second.asset)
    }

    /// Importing 24 MiB holds one 1 MiB buffer; exporting hands out chunk-sized buffers.
    @Test func memoryStaysBounded() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir)
        let size = 24 << 20
        let path = try dir.file("big", randomBytes(size, seed: 31))
        let (asset, stats) = try await store.importFileWithStatistics(at: path)
        #expect(stats.bufferBytes == 1 << 20)
        #expect(stats.peakBufferedBytes <= 1 << 20)
        #expect(stats.chunks > 200)
        // The actor is taken once per buffer of chunks, not per chunk.
        #expect(stats.pinBatches <= size / (768 << 10) + 2)
        var count = 0, largest = 0, total = 0
        for try await buffer in try store.contents(of: asset) {
            count += 1
            largest = max(largest, buffer.count)
            total += buffer.count
        }
        #expect(count == stats.chunks && total == size && largest <= 256 << 10)

        // A stream of 5 MiB buffers still goes through the same 1 MiB buffer.
        let big = randomBytes(5 << 20, seed: 32)
        let ingest = AssetIngest(store: store, pin: await store.makePin(), path: nil, totalBytes: nil, progress: nil)
        for _ in 0..<4 { try await ingest.append(big) }
        _ = try await ingest.finish()
        #expect(ingest.statistics.bufferBytes == 1 << 20 && ingest.statistics.peakBufferedBytes <= 1 << 20)
    }

    @Test func fileChangedDuringImportIsDetected() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let path = try dir.file("growing", randomBytes(400_000, seed: 40))
        let e = await expectAssetError(.assetFileModified) {
            _ = try await store.importFile(
                at: path,
                progress: { p in
                    // Append to the file while it is being read (once, early).
                    if p.chunks > 0 && p.completedBytes < 100_000, let h = FileHandle(forWritingAtPath: path) {
                        h.seekToEndOfFile(); h.write(Data([1, 2, 3])); h.closeFile()
                    }
                })
        }
        #expect(e?.path == path && e?.message.contains("changed while") == true)
    }

    /// Serving reads a chunk in place (``AssetStore/withChunkBytes(_:of:verify:scratch:_:)``): the
    /// same bytes ``AssetStore/chunkBytes(_:of:verify:)`` returns, from raw and compressed records
    /// alike, and the same error — with `body` never called — for a damaged one.
    @Test(arguments: [ChunkCompression.none, .zstd(level: 3)])
    func borrowedChunkReadsGiveTheBytesAndRefuseDamage(compression: ChunkCompression) async throws {
        let dir = TempDirectory()
        let (store, bytes, asset) = try await Self.mixedAsset(dir, compression: compression)
        let chunks = try store.manifest(of: asset).chunks
        #expect(chunks.count > 2)
        var scratch: [UInt8] = []
        var offset = 0
        for c in chunks {
            for verify in [true, false] {
                let borrowed = try store.withChunkBytes(c, of: asset, verify: verify, scratch: &scratch) { Array($0) }
                let copied = try store.chunkBytes(c, of: asset, verify: verify)
                #expect(borrowed == Array(bytes[offset..<(offset + c.length)]))
                #expect(borrowed == copied)
            }
            offset += c.length
        }

        let victim = chunks[1]
        _ = try Self.damageRecord(of: victim, in: store)
        var called = false
        let e = await expectAssetError(.assetFileModified) {
            _ = try store.withChunkBytes(victim, of: asset, verify: true, scratch: &scratch) { _ in called = true }
        }
        #expect(e?.hash == victim.hash)
        #expect(!called)
        #expect(!store.chunks.contains(victim.hash))
    }
}
