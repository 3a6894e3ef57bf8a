// IncomingAssetTests: receiving an asset from peers — chunks in any order, nothing under its name
// before it is durable, a torn or truncated chunk left by a crash never trusted, wrong manifests.

import Foundation
import Testing
@testable import ShoalAssets
import ShoalSamples
import ShoalWire

@Suite struct IncomingAssetTests {
    /// A store with small chunks and fsync on (the batch-durability path), and an asset held by
    /// a second store to fetch from.
    static func peers(_ da: TempDirectory, _ db: TempDirectory, bytes: [UInt8], receiveBatchBytes: Int? = nil)
        async throws -> (source: AssetStore, target: AssetStore, asset: Asset, chunks: [[UInt8]])
    {
        let source = try AssetStore.temporary(da, small: true)
        let target = try AssetStore.temporary(db, small: true) { c in
            c.fsync = true
            if let receiveBatchBytes { c.receiveBatchBytes = receiveBatchBytes }
        }
        let asset = try await source.importBytes(bytes)
        var chunks: [[UInt8]] = []
        for try await chunk in try source.contents(of: asset) { chunks.append(chunk) }
        return (source, target, asset, chunks)
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func chunksInAnyOrderMakeTheAsset(seed: UInt64) async throws {
        let da = TempDirectory(), db = TempDirectory()
        let bytes = randomBytes(150_000, seed: 80 + seed)
        let (source, target, asset, chunks) = try await Self.peers(da, db, bytes: bytes)
        // The target already holds the first part (stored before the fetch: read back, verified).
        _ = try await target.importBytes(Array(bytes.prefix(40_000)))
        let manifest = try source.manifest(of: asset)
        let pin = await target.makePin()
        let incoming = try await target.beginReceiving(manifest, pin: pin)
        var order = incoming.missingIndexes
        #expect(!order.isEmpty && order.count < manifest.chunks.count)
        // Progress counts what the target held from the start, then each chunk as it arrives.
        let held = manifest.chunks.indices.filter { !order.contains($0) }
        var expected = AssetProgress(
            completedBytes: Int64(held.reduce(0) { $0 + manifest.chunks[$1].length }),
            totalBytes: asset.size, chunks: held.count)
        #expect(incoming.progress == expected, "seed \(seed)")
        var rng = SplitMix64(seed: seed)
        order.shuffle(using: &rng)
        for i in order {
            try incoming.receive(chunks[i], index: i)
            expected.completedBytes += Int64(manifest.chunks[i].length)
            expected.chunks += 1
            #expect(incoming.progress == expected, "chunk \(i), seed \(seed)")
            // Nothing is under its name before the commit makes it durable.
            if !target.chunks.contains(manifest.chunks[i].hash) { continue }
            Issue.record("chunk \(i) is under its name before the commit (seed \(seed))")
        }
        #expect(incoming.missingIndexes.isEmpty)
        #expect(
            incoming.progress
                == AssetProgress(completedBytes: asset.size, totalBytes: asset.size, chunks: manifest.chunks.count))
        #expect(try target.isComplete(asset) == false)
        #expect(try await incoming.commit() == asset)
        #expect(try target.isComplete(asset))
        #expect(try await target.readAll(asset) == bytes)
        await target.unpin(pin)
        #expect(try FileSystem.contents(of: target.temporary).isEmpty, "no temporary file left")
    }

    /// A chunk that occurs twice in an asset is received once and counts twice toward its size;
    /// progress first asked for half way through counts what came before.
    @Test func progressCountsEveryOccurrenceOfAChunk() async throws {
        let da = TempDirectory(), db = TempDirectory()
        let part = randomBytes(60_000, seed: 91)
        let bytes = part + part + randomBytes(5_000, seed: 92)
        let (source, target, asset, chunks) = try await Self.peers(da, db, bytes: bytes)
        let manifest = try source.manifest(of: asset)
        #expect(Set(manifest.chunks.map(\.hash)).count < manifest.chunks.count, "the content should repeat a chunk")
        let pin = await target.makePin()
        let incoming = try await target.beginReceiving(manifest, pin: pin)
        let missing = incoming.missingIndexes
        for i in missing.prefix(missing.count / 2) { try incoming.receive(chunks[i], index: i) }
        let left = Set(missing.dropFirst(missing.count / 2).map { manifest.chunks[$0].hash })
        let leftChunks = manifest.chunks.filter { left.contains($0.hash) }
        #expect(
            incoming.progress
                == AssetProgress(
                    completedBytes: asset.size - Int64(leftChunks.reduce(0) { $0 + $1.length }),
                    totalBytes: asset.size, chunks: manifest.chunks.count - leftChunks.count))
        for i in missing.dropFirst(missing.count / 2) { try incoming.receive(chunks[i], index: i) }
        #expect(
            incoming.progress
                == AssetProgress(completedBytes: asset.size, totalBytes: asset.size, chunks: manifest.chunks.count))
        #expect(try await incoming.commit() == asset)
        await target.unpin(pin)
    }

    /// Chunks in a shuffled order with batches of about two chunks: batches are made durable
    /// while most chunks are still out of order, so feeding the whole-asset hash reads many back
    /// (verified) — stored, pending, or in the batch in flight; the asset comes out whole and
    /// nothing is left in `tmp/`.
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func shuffledChunksWithSmallBatchesMakeTheAsset(seed: UInt64) async throws {
        let da = TempDirectory(), db = TempDirectory()
        let bytes = randomBytes(300_000, seed: 120 + seed)
        let (source, target, asset, chunks) = try await Self.peers(da, db, bytes: bytes, receiveBatchBytes: 20_000)
        let manifest = try source.manifest(of: asset)
        let pin = await target.makePin()
        let incoming = try await target.beginReceiving(manifest, pin: pin)
        var order = Array(manifest.chunks.indices)
        var rng = SplitMix64(seed: seed)
        order.shuffle(using: &rng)
        for i in order { try incoming.receive(chunks[i], index: i) }
        #expect(incoming.missingIndexes.isEmpty, "seed \(seed)")
        #expect(try target.isComplete(asset) == false, "seed \(seed): no manifest before the commit")
        #expect(try await incoming.commit() == asset, "seed \(seed)")
        #expect(try await target.readAll(asset) == bytes, "seed \(seed)")
        await target.unpin(pin)
        #expect(try FileSystem.contents(of: target.temporary).isEmpty, "seed \(seed): no temporary file left")
    }

    /// With a receive batch smaller than the asset, chunks are stored batch by batch — each
    /// durable first, on another thread, without waiting for the commit — while the manifest
    /// still waits for the commit; a batch under a byte is refused when the store opens.
    @Test func batchesMakeChunksDurableBeforeTheCommit() async throws {
        let da = TempDirectory(), db = TempDirectory()
        let bytes = randomBytes(150_000, seed: 95)
        let (source, target, asset, chunks) = try await Self.peers(da, db, bytes: bytes, receiveBatchBytes: 30_000)
        let manifest = try source.manifest(of: asset)
        #expect(manifest.chunks.count >= 4, "small chunking cuts 150 kB into several chunks")
        let pin = await target.makePin()
        let incoming = try await target.beginReceiving(manifest, pin: pin)
        var received = 0
        var crossed = false
        for i in manifest.chunks.indices {
            try incoming.receive(chunks[i], index: i)
            received += chunks[i].count
            let stored = { manifest.chunks.prefix(i + 1).filter { target.chunks.contains($0.hash) }.count }
            if !crossed && received < 30_000 {
                #expect(stored() == 0, "chunk \(i) is stored before its batch was durable")
            } else if !crossed {
                // The first batch: nothing was in flight, so it is being made durable now.
                crossed = true
                let deadline = ContinuousClock.now + .seconds(60)  // a bound; the pool is shared by every suite
                while stored() < i + 1 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
                #expect(stored() == i + 1, "the first batch (chunks 0...\(i)) is stored without a commit")
            }
        }
        #expect(crossed)
        #expect(try target.isComplete(asset) == false, "no manifest before the commit")
        #expect(try await incoming.commit() == asset)
        #expect(try await target.readAll(asset) == bytes)
        await target.unpin(pin)

        let dc = TempDirectory()
        let e = await expectAssetError(.invalidArguments) {
            _ = try AssetStore.temporary(dc) { $0.receiveBatchBytes = 0 }
        }
        #expect(e?.message.contains("receiveBatchBytes") == true)
    }

    /// A crash mid-transfer leaves records appended and never committed: whole ones, and — after a
    /// power cut — torn ones, whose header survived and bytes did not. The scan indexes both
    /// unverified; the resumed fetch asks whether each chunk is stored, which reads and checks an
    /// unverified record (Spec/assets.md §3.5): the whole one counts as stored, the torn one is
    /// dropped and fetched again; the asset is only stored once every chunk verifies.
    @Test func aTornChunkLeftByACrashIsFetchedAgain() async throws {
        let da = TempDirectory(), db = TempDirectory()
        let bytes = randomBytes(120_000, seed: 90)
        let (source, target, asset, chunks) = try await Self.peers(da, db, bytes: bytes)
        let manifest = try source.manifest(of: asset)

        // Before the crash: chunk 0 appended and never committed; chunk 2's record torn (its
        // header written, the second half of its bytes not).
        _ = try withBytes(of: chunks[0]) { (raw) throws(AssetError) in
            try target.chunks.stage(manifest.chunks[0].hash, raw, compressor: nil)
        }
        var torn = chunks[2]
        for i in torn.count / 2..<torn.count { torn[i] = 0 }
        _ = try withBytes(of: torn) { (raw) throws(AssetError) in
            try target.chunks.stage(manifest.chunks[2].hash, raw, compressor: nil)
        }

        // After the restart: the open scans the segments, makes them durable and indexes both.
        let reopened = try AssetStore.open(directory: target.directory, configuration: target.configuration)
        let pin = await reopened.makePin()
        let incoming = try await reopened.beginReceiving(manifest, pin: pin)
        #expect(!incoming.missingIndexes.contains(0), "a complete record found by the scan is stored")
        #expect(incoming.missingIndexes.contains(2), "the torn record is checked when first asked about, and missing")
        #expect(!reopened.chunks.contains(manifest.chunks[2].hash), "the torn record is dropped, never served")
        #expect(try reopened.isComplete(asset) == false)
        for i in incoming.missingIndexes { try incoming.receive(chunks[i], index: i) }
        try await incoming.commit()
        #expect(try await reopened.readAll(asset) == bytes)
        await reopened.unpin(pin)

        // And again: the refetched record is later in the segments than the torn one, so it wins.
        let third = try AssetStore.open(directory: target.directory, configuration: target.configuration)
        #expect(try await third.readAll(asset) == bytes)
    }

    @Test func wrongChunksAndManifestsAreRefused() async throws {
        let da = TempDirectory(), db = TempDirectory()
        let bytes = randomBytes(60_000, seed: 95)
        let (source, target, asset, chunks) = try await Self.peers(da, db, bytes: bytes)
        let good = try source.manifest(of: asset)
        let pin = await target.makePin()

        let incoming = try await target.beginReceiving(good, pin: pin)
        var wrong = chunks[1]
        wrong[0] ^= 1
        await expectAssetError(.assetFileModified) { try incoming.receive(wrong, index: 1) }
        await expectAssetError(.assetFileModified) { try incoming.receive(chunks[0], index: 1) }
        await expectAssetError(.invalidArguments) { try incoming.receive(chunks[0], index: good.chunks.count) }
        incoming.discard()

        // A manifest whose chunks are genuine but do not make up the asset it names.
        let other = Asset(hash: .sha256([1, 2, 3]), size: asset.size)
        let lie = try await target.beginReceiving(AssetManifest(asset: other, chunks: good.chunks), pin: pin)
        for (i, c) in chunks.enumerated() { try lie.receive(c, index: i) }
        await expectAssetError(.assetFileModified) { try await lie.commit() }
        #expect(try target.isComplete(other) == false)
        lie.discard()

        // Two chunks merged into one: genuine bytes, but not where chunking cuts.
        let merged = chunks[0] + chunks[1]
        if merged.count <= smallChunks.maximumBytes {
            let recut = AssetManifest(
                asset: asset,
                chunks: [AssetManifest.Chunk(hash: .sha256(merged), length: merged.count)] + good.chunks.dropFirst(2))
            let r = try await target.beginReceiving(recut, pin: pin)
            await expectAssetError(.invalidArguments) { try r.receive(merged, index: 0) }
            r.discard()
        }
        await target.unpin(pin)
    }
}
