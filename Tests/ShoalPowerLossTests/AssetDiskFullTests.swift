// AssetDiskFullTests: the asset store on a disk that fills up at a seeded write, and after space returns.

@testable import ShoalAssets
import ShoalWire
import Testing
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension PowerLossTests {
    /// Seeded: the disk below an asset store fills at a seeded write while it imports assets
    /// that share chunks. Every import returns or fails with an `io` error carrying `ENOSPC`
    /// (the façade's `quotaExceeded`) whose message names the file and says the disk is full;
    /// a refused import leaves no manifest and no chunk the store reports; once space returns the
    /// same store imports it, and after a power cut every returned import reads back.
    @Test(arguments: 1...10)
    func aFullDiskRefusesImportsWholeAndTheAssetStoreGoesOn(seed: UInt64) async throws {
        var rng = SeededRandom(state: seed &* 0xD1B5_4A32_D192_ED03)
        let fs = PageCacheFileSystem()
        var run = AssetPowerCut(seed: seed)
        let configuration = run.configuration(
            fs, segmentBytes: [16 << 10, 256 << 10][rng.below(2)], zstd: rng.chance(30))
        let store = try AssetStore.open(directory: AssetPowerCut.directory, configuration: configuration)
        var pool: [[UInt8]] = []
        for _ in 0..<4 {
            pool.append((0..<(3000 + rng.below(9000))).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
        fs.fillDisk(atWrite: UInt64(1 + rng.below(120)))
        var imported: [ContentHash: [UInt8]] = [:]
        var refused: [[UInt8]] = []
        var refusals = 0
        for step in 0..<30 {
            if step == 20 { fs.fillDisk(atWrite: 0) }  // space returns
            let bytes = run.content(pool)
            let hash = ContentHash.sha256(bytes)
            let chunksBefore = Set(store.chunks.segments.hashes())
            do {
                let asset = try await store.importBytes(bytes)
                imported[asset.hash] = bytes
            } catch let e as AssetError where e.errno == ENOSPC {
                #expect(step < 20, "seed \(seed): refused after space returned: \(e)")
                #expect(e.message.contains("full") && e.path != nil, "seed \(seed): the error says what is full: \(e)")
                // Nothing half-written: no manifest; a chunk it stored before the manifest was
                // refused is whole (garbage until collected, or used by the retry).
                if imported[hash] == nil {
                    #expect(!store.manifests.contains(hash), "seed \(seed): a refused import left its manifest")
                }
                var scratch: [UInt8] = []
                for chunk in Set(store.chunks.segments.hashes()).subtracting(chunksBefore) {
                    #expect(throws: Never.self, "seed \(seed): a refused import left a damaged chunk") {
                        try store.chunks.read(
                            chunk, length: nil, of: nil, scratch: &scratch, decompressor: ZstdDecompressor())
                    }
                }
                refused.append(bytes)
                refusals += 1
            } catch {
                Issue.record("seed \(seed): a full disk gave \(error), not ENOSPC")
            }
        }
        #expect(refusals > 0, "seed \(seed): the disk never refused a write")
        // Space is back: every refused import goes through now.
        for bytes in refused {
            let asset = try await store.importBytes(bytes)
            imported[asset.hash] = bytes
        }
        // A collection removes what refused imports left and keeps every import that returned.
        try await store.collectGarbage(keeping: Set(imported.keys))
        for (hash, bytes) in imported {
            #expect(
                try await AssetPowerCut.read(store, Asset(hash: hash, size: Int64(bytes.count))) == bytes,
                "seed \(seed)")
        }
        // After a power cut, every import that returned is there.
        fs.cutNow()
        let disk = try #require(fs.afterTheCut())
        let reopened = try AssetStore.open(
            directory: AssetPowerCut.directory,
            configuration: run.configuration(disk, segmentBytes: configuration.segmentBytes, zstd: false))
        for (hash, bytes) in imported.sorted(by: { $0.key.hex < $1.key.hex }) {
            #expect(
                try await AssetPowerCut.read(reopened, Asset(hash: hash, size: Int64(bytes.count))) == bytes,
                "seed \(seed)")
        }
    }
}
