// SegmentStoreTests: chunk records in segment files — found again by the scan when a store
// opens, never hidden by a damaged record, never found once discarded, and compacted by
// garbage collection without losing a live chunk.

import Testing
@testable import ShoalAssets
import ShoalWire
import ShoalSamples
import Foundation

@Suite struct SegmentStoreTests {
    /// Bytes of every segment file.
    static func segmentBytes(_ store: AssetStore) throws -> Int64 {
        let folder = store.chunks.segments.folder
        return try FileSystem.contents(of: folder).reduce(0) {
            $0 + (try FileSystem.status(folder + "/" + $1)?.size ?? 0)
        }
    }

    @Test func aReopenedStoreIndexesEverySegment() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true) { $0.segmentBytes = 40 << 10 }
        let bytes = randomBytes(400_000, seed: 31)
        let asset = try await store.importBytes(bytes)
        let files = try FileSystem.contents(of: store.chunks.segments.folder)
        #expect(files.count >= 5, "400 kB in segments of 40 KiB: \(files)")
        let reopened = try AssetStore.open(directory: store.directory, configuration: store.configuration)
        #expect(Set(reopened.chunks.segments.hashes()) == Set(store.chunks.segments.hashes()))
        #expect(try await reopened.readAll(asset) == bytes)
        // New records go to a new segment, never after what an earlier process wrote.
        _ = try await reopened.importBytes(randomBytes(30_000, seed: 32))
        #expect(try FileSystem.contents(of: store.chunks.segments.folder).count > files.count)
    }

    /// The scan that rebuilds the index looks past a record it cannot read for the next valid
    /// header, so one damaged record (here: its magic, then its length) loses only itself.
    @Test(arguments: [0, 8])
    func aDamagedRecordHidesNoRecordAfterIt(byte: Int) async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let bytes = randomBytes(200_000, seed: 33)
        let asset = try await store.importBytes(bytes)
        let chunks = try store.manifest(of: asset).chunks
        #expect(chunks.count >= 5)
        let victim = chunks[2]
        let l = try #require(store.chunks.segments.location(of: victim.hash))
        try damage(l.segment.path, at: l.offset + Int64(byte), to: 0xFF)
        let reopened = try AssetStore.open(directory: store.directory, configuration: store.configuration)
        #expect(try reopened.missingChunks(of: asset) == [victim])
        for c in chunks where c.hash != victim.hash { #expect(reopened.chunks.contains(c.hash)) }
        // A peer sends it again; the asset is whole.
        try await reopened.insertChunks([2], of: chunks, from: bytes)
        #expect(try await reopened.readAll(asset) == bytes)
    }

    /// Files in the segment folder that are not segments this store names are left alone: an
    /// upper-case spelling of a number, other names; the last possible number is refused with a
    /// message instead of overflowing.
    @Test func strayNamesInTheSegmentFolderAreIgnored() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let bytes = randomBytes(30_000, seed: 41)
        let asset = try await store.importBytes(bytes)
        let folder = store.chunks.segments.folder
        let name = try #require(try FileSystem.contents(of: folder).first)
        try Data(try readFile(folder + "/" + name)).write(to: URL(fileURLWithPath: folder + "/00000000000000AB.seg"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: folder + "/notes.txt"))
        let reopened = try AssetStore.open(directory: store.directory, configuration: store.configuration)
        #expect(try await reopened.readAll(asset) == bytes)

        try Data().write(to: URL(fileURLWithPath: folder + "/ffffffffffffffff.seg"))
        let full = try AssetStore.open(directory: store.directory, configuration: store.configuration)
        let e = await expectAssetError(.invalidArguments) {
            _ = try await full.importBytes(randomBytes(30_000, seed: 42))
        }
        #expect(e?.message.contains("no number is left") == true)
    }

    @Test func discardedRecordsAreNotFoundAgain() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let bytes = randomBytes(10_000, seed: 34)
        let hash = ContentHash.sha256(bytes)
        let kept = try withBytes(of: bytes) { (raw) throws(AssetError) in
            try store.chunks.stage(hash, raw, compressor: nil)
        }
        let other = randomBytes(10_000, seed: 35)
        let dropped = try withBytes(of: other) { (raw) throws(AssetError) in
            try store.chunks.stage(.sha256(other), raw, compressor: nil)
        }
        #expect(!store.chunks.contains(hash), "a pending record is not stored")
        try store.chunks.segments.commit([kept])
        store.chunks.segments.discard([dropped])
        #expect(store.chunks.contains(hash) && !store.chunks.contains(.sha256(other)))
        let reopened = try AssetStore.open(directory: store.directory, configuration: store.configuration)
        #expect(reopened.chunks.contains(hash))
        #expect(!reopened.chunks.contains(.sha256(other)), "the discarded record's header was zeroed")
    }

    /// Batches of records written with one aligned write — through `O_DIRECT`, and through the
    /// page cache as on file systems without direct I/O — between records appended one by one:
    /// each batch starts at a 4 KiB boundary, the gaps before and after read as zeros that the
    /// scan skips, a record dropped from a batch is never found, and a reopened store indexes
    /// exactly the committed and written records (a batch written but never committed is found
    /// by the scan, like any pending record), whether a batch went in one write or in pieces.
    @Test(arguments: [true, false])
    func batchesWrittenInOneAlignedWriteAreFoundAgain(direct: Bool) throws {
        let dir = TempDirectory()
        let folder = dir.path + "/segments"
        let segments = try SegmentStore(folder: folder, sync: true, maximumChunkBytes: 1 << 16, directWrites: direct)
        var rng = SplitMix64(seed: direct ? 61 : 62)
        func chunk() -> [UInt8] { randomBytes(Int(rng.next() % 20_000) + 1, seed: rng.next()) }
        var expected: [ContentHash: [UInt8]] = [:]
        func single() throws {
            let bytes = chunk(), hash = ContentHash.sha256(bytes)
            let p = try withBytes(of: bytes) { (raw) throws(AssetError) in
                try segments.append(hash, tag: ChunkStore.rawTag, stored: raw, length: raw.count)
            }
            try segments.commit([p])
            expected[hash] = bytes
        }
        func batch(commit: Bool) throws -> (RecordBatch, dropped: ContentHash) {
            let b = RecordBatch(capacity: 200_000)
            var hashes: [ContentHash] = []
            for _ in 0..<5 {
                let bytes = chunk(), hash = ContentHash.sha256(bytes)
                #expect(bytes.withUnsafeBytes { b.append(hash, tag: ChunkStore.rawTag, stored: $0, length: $0.count) })
                expected[hash] = bytes
                hashes.append(hash)
            }
            let dropped = hashes[2]
            #expect(b.drop(dropped))
            expected[dropped] = nil
            let placement = try segments.reserve(b)
            #expect(placement.offset % Int64(RecordBatch.alignment) == 0, "a batch starts at a 4 KiB boundary")
            #expect(
                placement.segment.directFD >= 0 || !direct || placement.segment.path.hasPrefix("/dev/shm"),
                "direct writes get their own descriptor")
            // Committed batches go in 4 KiB pieces, each made durable before the next.
            try segments.write(b, at: placement, syncEvery: commit ? 4096 : nil)
            if commit { try segments.commit(placement.records) }
            return (b, dropped)
        }
        try single()
        let (_, first) = try batch(commit: true)
        try single()
        try single()
        let (_, second) = try batch(commit: true)
        let (_, third) = try batch(commit: false)
        try single()
        for dropped in [first, second, third] { #expect(!segments.contains(dropped)) }

        let reopened = try SegmentStore(folder: folder, sync: true, maximumChunkBytes: 1 << 16)
        #expect(Set(reopened.hashes()) == Set(expected.keys), "every written record and nothing dropped")
        var buffer: [UInt8] = []
        for (hash, bytes) in expected {
            let l = try #require(reopened.location(of: hash))
            #expect(try reopened.read(hash, at: l, into: &buffer))
            #expect(Array(buffer[SegmentStore.headerBytes...]) == bytes)
        }
    }

    /// Collection drops dead chunks from the index and rewrites each segment at least half dead:
    /// the live records move (and read back, also after a reopen), the space comes back.
    @Test func compactionGivesSpaceBackAndKeepsLiveChunks() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true) { $0.segmentBytes = 64 << 10 }
        let a = randomBytes(300_000, seed: 36), b = randomBytes(300_000, seed: 37)
        let assetA = try await store.importBytes(a)
        let assetB = try await store.importBytes(b)
        // Interleave: a third asset sharing half of A's content lands in the same segments as B's tail.
        let c = Array(a.prefix(150_000)) + randomBytes(50_000, seed: 38)
        let assetC = try await store.importBytes(c)
        let before = try Self.segmentBytes(store)

        let report = try await store.collectGarbage(keeping: [assetB.hash, assetC.hash])
        #expect(report.chunksRemoved > 0 && report.segmentsCompacted > 0 && report.segmentBytesFreed > 0)
        let after = try Self.segmentBytes(store)
        #expect(before - after == report.segmentBytesFreed)
        // A's second half is gone but for at most a segment's worth of dead records left in place.
        #expect(
            after <= Int64(300_000 + 200_000 + (64 << 10) * 2), "\(after) bytes of segments for 500 kB of live chunks")
        #expect(try store.isComplete(assetA) == false)
        #expect(try await store.readAll(assetB) == b)
        #expect(try await store.readAll(assetC) == c)

        let reopened = try AssetStore.open(directory: store.directory, configuration: store.configuration)
        #expect(try await reopened.readAll(assetB) == b)
        #expect(try await reopened.readAll(assetC) == c)
        let again = try await reopened.collectGarbage(keeping: [assetB.hash, assetC.hash])
        #expect(again.chunksKept == report.chunksKept)
        #expect(try await reopened.readAll(assetB) == b)
    }

    /// Reads racing a compaction either find the chunk where it was (the old file stays open
    /// until the last reader lets go) or where it moved.
    @Test func readsDuringCompactionSeeEveryLiveChunk() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true) { $0.segmentBytes = 32 << 10 }
        let live = randomBytes(200_000, seed: 39)
        let asset = try await store.importBytes(live)
        for round in 0..<6 {
            _ = try await store.importBytes(randomBytes(200_000, seed: 40 + UInt64(round)))
            async let collected = store.collectGarbage(keeping: [asset.hash])
            for _ in 0..<3 { #expect(try await store.readAll(asset) == live, "round \(round)") }
            _ = try await collected
        }
        #expect(try await store.readAll(asset) == live)
    }

    static func readChunk(_ hash: ContentHash, in store: AssetStore) -> Result<[UInt8], AssetError> {
        var scratch: [UInt8] = []
        return Result { () throws(AssetError) -> [UInt8] in
            try store.chunks.read(hash, length: nil, of: nil, scratch: &scratch, decompressor: ZstdDecompressor())
        }
    }

    /// Segment files that are damaged at random (bytes flipped, cut short, garbage spliced in)
    /// or are garbage outright never make the open or a read trap, and a chunk is only ever
    /// served as its own bytes: every indexed chunk reads back verified or is refused as damaged.
    @Test(arguments: [UInt64(1), 2, 3])
    func damagedSegmentFilesNeverTrapOrServeWrongBytes(seed: UInt64) async throws {
        let source = TempDirectory()
        let writer = try AssetStore.temporary(source, small: true)
        _ = try await writer.importBytes(randomBytes(120_000, seed: 50 + seed))
        let folder = writer.chunks.segments.folder
        let name = try #require(try FileSystem.contents(of: folder).first)
        let original = try readFile(folder + "/" + name)
        var rng = SplitMix64(seed: seed)
        for round in 0..<25 {
            var bytes = original
            switch round % 4 {
            case 0:
                for _ in 0..<Int.random(in: 1...20, using: &rng) {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
            case 1:
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &rng)))
            case 2:
                let at = Int.random(in: 0..<bytes.count, using: &rng) / 8 * 8
                bytes.insert(
                    contentsOf: (0..<Int.random(in: 1...3000, using: &rng)).map { _ in
                        UInt8.random(in: 0...255, using: &rng)
                    }, at: at)
            default:
                // Garbage with the magic at many 8-byte boundaries.
                bytes = (0..<50_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
                for i in stride(from: 0, to: bytes.count - 4, by: 8) {
                    guard Int.random(in: 0..<4, using: &rng) == 0 else { continue }
                    bytes[i] = 0x53; bytes[i + 1] = 0x48; bytes[i + 2] = 0x53; bytes[i + 3] = 0x31
                }
            }
            let dir = TempDirectory()
            try FileSystem.createDirectories(dir.path + "/assets/chunks/segments")
            try Data(bytes).write(to: URL(fileURLWithPath: dir.path + "/assets/chunks/segments/" + name))
            let store = try AssetStore.temporary(dir, small: true)
            for hash in store.chunks.segments.hashes() {
                switch Self.readChunk(hash, in: store) {
                case .success(let chunk):
                    #expect(ContentHash.sha256(chunk) == hash, "seed \(seed) round \(round)")
                case .failure(let e):
                    #expect(e.code == .assetFileModified, "seed \(seed) round \(round): \(e)")
                    #expect(!store.chunks.contains(hash), "seed \(seed) round \(round): a refused chunk is dropped")
                }
            }
            // Collection over whatever survived does not trap either.
            _ = try await store.collectGarbage(keeping: [])
        }
    }
}
