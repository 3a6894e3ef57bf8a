// AssetPowerLossRegressionTests: the holes the asset soak found, each by the seed that found it
// and, where one can be built, by a direct case (Spec/assets.md §3.5).

@testable import ShoalAssets
import ShoalWire
import Testing

extension PowerLossTests {
    /// Runs one seed of the asset soak and expects its checks to find nothing.
    static func assetSeedPasses(_ seed: UInt64) async -> AssetPowerCutFindings {
        var run = AssetPowerCut(seed: seed)
        return await run.run()
    }

    /// Asset soak seed 4: the store's folders (its own directory, `chunks/segments`, `manifests`,
    /// `tmp`) were created and never synced, so the cut undid their entries and every segment and
    /// manifest went with them, though each had been synced. Creating a folder now fsyncs the
    /// folder that holds it.
    @Test func assetSeed4TheStoresFoldersOutliveACut() async {
        let found = await Self.assetSeedPasses(4)
        #expect(found.failed == 0, "seed 4: \(found.failures)")
    }

    /// The same hole, directly: an asset imported into a new store survives a cut that drops
    /// every unsynced write and name.
    @Test func anAssetImportedIntoANewStoreSurvivesACutThatDropsEverythingUnsynced() async throws {
        let fs = PageCacheFileSystem(loss: .dropAll)
        let run = AssetPowerCut(seed: 1)
        let store = try AssetStore.open(
            directory: AssetPowerCut.directory,
            configuration: run.configuration(fs, segmentBytes: 64 << 10, zstd: false))
        let bytes: [UInt8] = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        let asset = try await store.importBytes(bytes)
        fs.cutNow()
        let disk = try #require(fs.afterTheCut())
        let reopened = try AssetStore.open(
            directory: AssetPowerCut.directory,
            configuration: run.configuration(disk, segmentBytes: 64 << 10, zstd: false))
        #expect(try await AssetPowerCut.read(reopened, asset) == bytes)
    }

    /// Asset soak seed 25: a record written but never synced came back torn (its header whole,
    /// its bytes not); the open's scan, which checks headers only, indexed it, and the store
    /// reported the chunk present — an import would have skipped writing it and written a
    /// manifest over bytes it did not have. A record the scan found is now read and checked
    /// against its hash the first time anything asks for the chunk; a torn one is dropped.
    @Test func assetSeed25ATornRecordIsNotReportedPresent() async {
        let found = await Self.assetSeedPasses(25)
        #expect(found.chunksBad == 0 && found.failed == 0, "seed 25: \(found.failures)")
    }

    /// The same hole, directly: a chunk whose record was written and never committed, then torn
    /// by the cut, is not reported present after reopening, and importing it again stores it.
    @Test func aTornUncommittedRecordIsNotReportedPresentAndIsWrittenAgain() async throws {
        let fs = PageCacheFileSystem(loss: .tornSectors)
        let run = AssetPowerCut(seed: 1)
        let configuration = run.configuration(fs, segmentBytes: 1 << 20, zstd: false)
        let store = try AssetStore.open(directory: AssetPowerCut.directory, configuration: configuration)
        // Records appended and not committed, as an import the cut interrupted leaves them.
        var chunks: [(ContentHash, [UInt8])] = []
        var pending: [SegmentStore.Pending] = []
        for i in 0..<24 {
            let bytes: [UInt8] = (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* (i + 3) &+ i) }
            let hash = ContentHash.sha256(bytes)
            chunks.append((hash, bytes))
            pending.append(
                try withBytes(of: bytes) { (raw) throws(AssetError) -> SegmentStore.Pending in
                    try store.chunks.stage(hash, raw, compressor: nil)
                })
        }
        fs.cutNow()
        let disk = try #require(fs.afterTheCut())
        let reopened = try AssetStore.open(
            directory: AssetPowerCut.directory,
            configuration: run.configuration(disk, segmentBytes: 1 << 20, zstd: false))
        var scratch: [UInt8] = []
        let decompressor = ZstdDecompressor()
        var torn = 0
        for (hash, bytes) in chunks {
            let indexed = reopened.chunks.segments.location(of: hash) != nil
            guard reopened.chunks.contains(hash) else {
                if indexed { torn += 1 }
                // Written again, it is stored and reads back.
                let asset = try await reopened.importBytes(bytes)
                #expect(try await AssetPowerCut.read(reopened, asset) == bytes)
                continue
            }
            #expect(
                try reopened.chunks.read(
                    hash, length: bytes.count, of: nil, scratch: &scratch, decompressor: decompressor) == bytes)
        }
        // Half the sectors are dropped: some records keep their header and lose bytes.
        #expect(torn > 0, "no record was torn with its header kept")
        _ = pending
    }

    /// Asset soak seed 214: a compaction the cut interrupted had appended a copy of a live chunk
    /// to a new segment and not yet synced it; the old segment, with the intact copy, was still
    /// there. The scan let the later, torn copy win; once the check dropped it the chunk was
    /// missing and a referenced asset was lost. The scan now keeps the earlier copies, and a
    /// dropped record gives way to the latest of them.
    @Test func assetSeed214ATornCopyGivesWayToAnIntactEarlierOne() async {
        let found = await Self.assetSeedPasses(214)
        #expect(found.failed == 0, "seed 214: \(found.failures)")
    }
}
