// TransferTests: what the transfer lane will do — manifest over the wire, missing chunks, verified
// inserts — and the manifest's binary form.

import Testing
@testable import ShoalAssets
import ShoalWire

@Suite struct TransferTests {
    /// Node B fetches an asset from node A: manifest, then the chunks it lacks, then the manifest is inserted.
    @Test func peerFetchesWhatItLacks() async throws {
        let da = TempDirectory(), db = TempDirectory()
        let a = try AssetStore.temporary(da, small: true), b = try AssetStore.temporary(db, small: true)
        let shared = randomBytes(100_000, seed: 50)
        let bytes = shared + randomBytes(80_000, seed: 51)
        _ = try await b.importBytes(shared)  // B already holds the first part's chunks
        let asset = try await a.importBytes(bytes)
        #expect(try b.isComplete(asset) == false)

        let wire = try a.manifest(of: asset).encoded()
        let manifest = try AssetManifest(decoding: wire)
        #expect(manifest == (try a.manifest(of: asset)))
        let missing = b.missingChunks(of: manifest)
        #expect(!missing.isEmpty && missing.count < manifest.chunks.count)

        let pin = await b.makePin()
        await expectAssetError(.assetNotAvailable) { try await b.insertManifest(manifest, pin: pin) }
        var chunksByHash: [ContentHash: [UInt8]] = [:]
        for try await chunk in try a.contents(of: asset) { chunksByHash[.sha256(chunk)] = chunk }
        for c in missing {
            try await b.insertChunk(chunksByHash[c.hash]!, hash: c.hash, pin: pin)
            // Garbage collection while the transfer is under way keeps the pinned chunks.
            try await b.collectGarbage(keeping: [])
        }
        #expect(b.missingChunks(of: manifest).isEmpty)
        try await b.insertManifest(manifest, pin: pin)
        #expect(try b.isComplete(asset))
        #expect(try await b.readAll(asset) == bytes)
        await b.unpin(pin)
        #expect(await b.pinnedCounts == (0, 0))
        try await b.insertManifest(manifest)  // already stored: nothing to do
    }

    @Test func chunksFromPeersAreVerified() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let chunk = randomBytes(5000, seed: 60)
        let wrong = ContentHash.sha256(chunk + [0])
        let e = await expectAssetError(.assetFileModified) { try await store.insertChunk(chunk, hash: wrong) }
        #expect(e?.hash == wrong && e?.message.contains("request the chunk again") == true)
        #expect(!store.chunks.contains(wrong))
        let tooLong = randomBytes(16 << 10 + 1, seed: 61)
        await expectAssetError(.limitExceeded) { try await store.insertChunk(tooLong, hash: .sha256(tooLong)) }
    }

    @Test func wrongManifestsAreRefused() async throws {
        let da = TempDirectory(), db = TempDirectory()
        let a = try AssetStore.temporary(da, small: true), b = try AssetStore.temporary(db, small: true)
        let bytes = randomBytes(60_000, seed: 70)
        let asset = try await a.importBytes(bytes)
        let good = try a.manifest(of: asset)
        try await b.insertChunks(good.chunks.indices, of: good.chunks, from: bytes)
        // A manifest claiming another asset hash: the chunks do not hash to it.
        let lie = AssetManifest(asset: Asset(hash: .sha256([9]), size: asset.size), chunks: good.chunks)
        await expectAssetError(.assetFileModified) { try await b.insertManifest(lie) }
        #expect(try b.isComplete(lie.asset) == false)
        // Sizes that do not add up, or chunks past the maximum.
        let short = AssetManifest(asset: Asset(hash: asset.hash, size: asset.size + 1), chunks: good.chunks)
        await expectAssetError(.invalidArguments) { try await b.insertManifest(short) }
        // The same content cut elsewhere: the first two chunks merged (when that stays under the
        // maximum) is not how content-defined chunking cuts it.
        let c0 = good.chunks[0], c1 = good.chunks[1]
        let merged = Array(bytes[0..<c0.length + c1.length])
        if merged.count <= smallChunks.maximumBytes {
            try await b.insertChunk(merged, hash: .sha256(merged))
            let recut = AssetManifest(
                asset: asset,
                chunks: [AssetManifest.Chunk(hash: .sha256(merged), length: merged.count)] + good.chunks.dropFirst(2))
            await expectAssetError(.invalidArguments) { try await b.insertManifest(recut) }
        }
        let over = try AssetStore.temporary(db, small: true) { $0.maxAssetBytes = 1000 }
        await expectAssetError(.limitExceeded) { try await over.insertManifest(good) }
        try await b.insertManifest(good)
        #expect(try await b.readAll(asset) == bytes)
    }

    @Test func manifestEncodingRoundTripsAndRejectsDamage() throws {
        let chunks = (0..<5).map { AssetManifest.Chunk(hash: .sha256([UInt8($0)]), length: 1000 * ($0 + 1)) }
        let m = AssetManifest(asset: Asset(hash: .sha256([1]), size: 15000), chunks: chunks)
        let bytes = m.encoded()
        #expect(bytes.count == 4 + 1 + 32 + 2 + 1 + 5 * (32 + 2) + 4)
        #expect(try AssetManifest(decoding: bytes) == m)
        let empty = AssetManifest(asset: Asset(hash: .sha256([]), size: 0), chunks: [])
        #expect(try AssetManifest(decoding: empty.encoded()) == empty)
        for i in [0, 4, 10, bytes.count - 1] {
            var bad = bytes
            bad[i] ^= 0x10
            #expect(throws: AssetError.self) { try AssetManifest(decoding: bad) }
        }
        #expect(throws: AssetError.self) { try AssetManifest(decoding: bytes + [0]) }
        #expect(throws: AssetError.self) { try AssetManifest(decoding: Array(bytes.dropLast())) }
        #expect(throws: AssetError.self) { try AssetManifest(decoding: []) }
    }
}
