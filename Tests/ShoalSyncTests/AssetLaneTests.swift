// AssetLaneTests: fetching assets between simulated nodes — round trips, verification and failover,
// resumption after a lost connection, unavailability, eager fetch.

import Foundation
import Synchronization
import Testing
import ShoalSamples
import ShoalSyncSamples
@testable import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct AssetLaneTests {
    static let notes = RecordZone.ID(name: "notes")

    /// A simulation whose nodes each have a MemoryAssets.
    /// With `batched`, asset frames in flight together are handed over together, as the TCP
    /// transport's lanes do (``SyncNode/receiveAssetFrames(_:)``).
    static func simulation(
        seed: UInt64, nodes: Int, configuration: SyncConfiguration = SyncConfiguration(),
        batched: Bool = false
    ) async throws -> (Simulation, [MemoryAssets]) {
        let sim = try await Simulation(seed: seed, nodes: nodes, configuration: configuration)
        sim.batchAssetFrames = batched
        var stores = [MemoryAssets]()
        for i in sim.nodes.indices {
            let m = MemoryAssets()
            stores.append(m)
            sim.nodes[i].sync = SyncNode(store: sim.nodes[i].store, configuration: configuration, assets: m)
        }
        return (sim, stores)
    }

    static func content(_ n: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    /// Starts a fetch on node `n` and runs the network until it is quiet; the result of waiting.
    static func fetch(_ asset: Asset, on n: Int, in sim: Simulation) async throws -> Result<Void, any Error> {
        try await sim.route(await sim.nodes[n].sync.fetchAsset(asset), from: n)
        _ = try await sim.runUntilQuiet()
        do { try await sim.nodes[n].sync.waitForAsset(asset); return .success(()) } catch { return .failure(error) }
    }

    @Test(arguments: [0, 1, 1000, 4096, 40_000], [false, true])
    func assetsOfEverySizeRoundTrip(_ size: Int, batched: Bool) async throws {
        let (sim, assets) = try await Self.simulation(seed: 21, nodes: 2, batched: batched)
        let bytes = Self.content(size, seed: UInt64(size))
        let asset = assets[0].add(bytes, chunkSize: 4096)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let result = try await Self.fetch(asset, on: 1, in: sim)
        #expect((try? result.get()) != nil, "\(result)")
        #expect(assets[1].bytes(of: asset) == bytes, "size \(size)")
        #expect(await sim.nodes[1].sync.statistics.assetsFetched == 1)
        // 10 chunks, all in the first window: their answers arrive together when batched.
        if size == 40_000 { #expect((sim.largestAssetBatch > 1) == batched, "largest batch \(sim.largestAssetBatch)") }
    }

    @Test(arguments: [false, true])
    func aCorruptedChunkIsRejectedAndFetchedElsewhere(batched: Bool) async throws {
        let (sim, assets) = try await Self.simulation(seed: 22, nodes: 3, batched: batched)
        let bytes = Self.content(50_000, seed: 3)
        let asset = assets[0].add(bytes, chunkSize: 4096)
        assets[2].add(bytes, chunkSize: 4096)
        assets[0].setCorrupt(5)
        try await sim.connect(1, 0)
        try await sim.connect(1, 2)
        #expect(try await sim.runUntilQuiet())
        let result = try await Self.fetch(asset, on: 1, in: sim)
        #expect((try? result.get()) != nil, "\(result)")
        #expect(assets[1].bytes(of: asset) == bytes)
        // Node 0 was asked first (the lower connection) and served the bad chunk; node 2 finished.
        #expect(await sim.nodes[0].sync.statistics.assetChunksSent > 0)
        #expect(await sim.nodes[2].sync.statistics.assetChunksSent > 0)
    }

    /// A peer whose hello says it reads frames of at most 3,000 payload bytes is never sent a
    /// 4 KiB chunk: the server answers `unavailable` and the fetch fails there, instead of the
    /// peer's reader refusing the frame and closing the connection. (Sent anyway, the chunks fail
    /// the peer's decoder, the connection closes, reopens and fails again; the fetch never ends.)
    @Test(.timeLimit(.minutes(5))) func noChunkFrameIsLargerThanThePeerReads() async throws {
        let (sim, assets) = try await Self.simulation(seed: 27, nodes: 2)
        var small = SyncConfiguration()
        small.limits.maxFramePayloadBytes = 3_000
        sim.nodes[1].sync = SyncNode(store: sim.nodes[1].store, configuration: small, assets: assets[1])
        let bytes = Self.content(40_000, seed: 7)
        let asset = assets[0].add(bytes, chunkSize: 4096)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let result = try await Self.fetch(asset, on: 1, in: sim)
        #expect((try? result.get()) == nil, "the fetch cannot succeed: every chunk is over the peer's limit")
        #expect(assets[1].bytes(of: asset) == nil)
        #expect(await sim.nodes[0].sync.statistics.assetChunksSent == 0)
        #expect(await sim.nodes[0].sync.statistics.assetPartsTooLargeForPeer > 0)
        #expect(sim.log.isEmpty, "no connection closed with an error: \(sim.log)")
    }

    @Test func aChunkLostBeforeTheFinalCheckIsFetchedAgainFromTheSamePeer() async throws {
        let (sim, assets) = try await Self.simulation(seed: 26, nodes: 2)
        let bytes = Self.content(40_000, seed: 6)
        let asset = assets[0].add(bytes, chunkSize: 4096)  // 10 chunks
        assets[1].loseAtFinish(3)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let result = try await Self.fetch(asset, on: 1, in: sim)
        #expect((try? result.get()) != nil, "\(result)")
        #expect(assets[1].bytes(of: asset) == bytes)
        #expect(await sim.nodes[1].sync.statistics.assetChunksReceived == 11, "only the lost chunk twice")
    }

    @Test(arguments: [false, true])
    func aLostConnectionResumesFromTheFirstMissingChunk(batched: Bool) async throws {
        var configuration = SyncConfiguration()
        configuration.assetWindow = 2
        let (sim, assets) = try await Self.simulation(
            seed: 23, nodes: 3, configuration: configuration, batched: batched)
        let bytes = Self.content(100_000, seed: 4)
        let asset = assets[0].add(bytes, chunkSize: 4096)  // 25 chunks
        assets[2].add(bytes, chunkSize: 4096)
        try await sim.connect(1, 0)
        #expect(try await sim.runUntilQuiet())
        try await sim.route(await sim.nodes[1].sync.fetchAsset(asset), from: 1)
        // Deliver until node 1 has some chunks, then cut the link to node 0.
        var steps = 0
        while await sim.nodes[1].sync.statistics.assetChunksReceived < 10, steps < 10_000 {
            steps += 1
            guard let l = sim.links.first else { break }
            try await sim.deliver(link: 0, toB: l.toB.inFlight.isEmpty ? false : true)
        }
        let before = await sim.nodes[1].sync.statistics.assetChunksReceived
        #expect(before >= 10 && before < 25)
        await sim.reset(0)
        try await sim.connect(1, 2)
        _ = try await sim.runUntilQuiet()
        try await sim.nodes[1].sync.waitForAsset(asset)
        #expect(assets[1].bytes(of: asset) == bytes)
        #expect(await sim.nodes[1].sync.statistics.assetChunksReceived == 25, "no chunk fetched twice")
    }

    // MARK: Chunks that arrive together

    /// Node 1 fetching a 10-chunk asset from node 0 with a window of 8, stopped once node 1 has
    /// the manifest and has requested the first window (chunks 0–7): the chunks, and node 1's
    /// connection.
    static func fetchAwaitingChunks(seed: UInt64) async throws -> (Simulation, Asset, [[UInt8]], ConnectionID) {
        var configuration = SyncConfiguration()
        configuration.assetWindow = 8
        let (sim, assets) = try await simulation(seed: seed, nodes: 2, configuration: configuration)
        let bytes = content(40_000, seed: seed)
        let asset = assets[0].add(bytes, chunkSize: 4096)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        try await sim.route(await sim.nodes[1].sync.fetchAsset(asset), from: 1)
        try await sim.deliver(link: 0, toB: false)  // the manifest request, to node 0
        try await sim.deliver(link: 0, toB: true)  // the manifest, to node 1, which asks for chunks
        #expect(await sim.nodes[1].sync.assetTransfers()[asset] == 10)
        let chunks = stride(from: 0, to: bytes.count, by: 4096).map { Array(bytes[$0..<min(bytes.count, $0 + 4096)]) }
        return (sim, asset, chunks, sim.links[0].connB)
    }

    static func chunkFrame(_ asset: Asset, _ index: Int, _ bytes: [UInt8]) -> Frame {
        Frame(
            type: .assetChunk,
            payload: AssetChunkMessage(asset: asset, part: .chunk(index: UInt64(index), bytes: bytes)).encoded())
    }

    /// The chunk runs that `out` asks for on `id`.
    static func requestedRuns(_ out: [ConnectionID: [SyncOutput]], on id: ConnectionID) -> [Range<UInt64>] {
        (out[id] ?? []).compactMap { o -> Range<UInt64>? in
            guard case .send(let f) = o, f.type == .assetRequest, let m = try? AssetRequestMessage(decoding: f.payload),
                case let .chunks(first, count) = m.part
            else { return nil }
            return first..<first + count
        }
    }

    @Test func chunksThatArriveTogetherAreStoredAndTheWindowRefilledOnce() async throws {
        let (sim, asset, chunks, conn) = try await Self.fetchAwaitingChunks(seed: 27)
        let node = sim.nodes[1].sync
        let out = await node.receiveAssetFrames((0..<3).map { (conn, Self.chunkFrame(asset, $0, chunks[$0])) })
        #expect(await node.statistics.assetChunksReceived == 3)
        // Three window places came free together: one request for the two chunks left.
        #expect(Self.requestedRuns(out, on: conn) == [8..<10])
        #expect(await node.assetTransfers()[asset] == 7)
    }

    @Test func aChunkTwiceInOneBatchClosesTheConnection() async throws {
        let (sim, asset, chunks, conn) = try await Self.fetchAwaitingChunks(seed: 28)
        let node = sim.nodes[1].sync
        let out = await node.receiveAssetFrames([
            (conn, Self.chunkFrame(asset, 0, chunks[0])), (conn, Self.chunkFrame(asset, 1, chunks[1])),
            (conn, Self.chunkFrame(asset, 1, chunks[1]))
        ])
        let closed = (out[conn] ?? []).compactMap { o -> ErrorMessage? in if case .close(let e) = o { e } else { nil } }
        #expect(closed.map(\.code) == ["protocolViolation"], "\(out)")
        #expect(await node.statistics.assetChunksReceived == 0, "none of the batch is used")
    }

    /// A batch's chunk frames are decoded together: one that does not decode closes the
    /// connection, and none of the batch is used, not even the frames before it.
    @Test func aMalformedChunkFrameInABatchClosesTheConnection() async throws {
        let (sim, asset, chunks, conn) = try await Self.fetchAwaitingChunks(seed: 30)
        let node = sim.nodes[1].sync
        let good = Self.chunkFrame(asset, 1, chunks[1])
        let truncated = Frame(type: .assetChunk, payload: Array(good.payload.dropLast(7)))
        let out = await node.receiveAssetFrames([
            (conn, Self.chunkFrame(asset, 0, chunks[0])), (conn, truncated),
            (conn, Self.chunkFrame(asset, 2, chunks[2]))
        ])
        let closed = (out[conn] ?? []).compactMap { o -> ErrorMessage? in if case .close(let e) = o { e } else { nil } }
        #expect(closed.map(\.code) == ["invalidArguments"], "\(out)")
        #expect(await node.statistics.assetChunksReceived == 0, "none of the batch is used")
    }

    @Test func aBadChunkInABatchKeepsTheChunksBeforeItAndRefusesThePeer() async throws {
        let (sim, asset, chunks, conn) = try await Self.fetchAwaitingChunks(seed: 29)
        let node = sim.nodes[1].sync
        var bad = chunks[4]
        bad[100] ^= 0xFF
        let frames = (2..<7).map { (conn, Self.chunkFrame(asset, $0, $0 == 4 ? bad : chunks[$0])) }
        _ = await node.receiveAssetFrames(frames)
        // Chunks 2 and 3 were stored; chunk 4 failed its hash, so node 0 is refused and, with no
        // other peer, the fetch fails.
        #expect(await node.statistics.assetChunksReceived == 2)
        #expect(await node.assetTransfers()[asset] == nil)
        await #expect(throws: AssetFetchError.self) { try await node.waitForAsset(asset) }
    }

    /// Regression: the check a waiter makes before it registers can be delayed past the end of
    /// the fetch (it runs on the asset lane, which the transfer keeps busy). The waiter used to
    /// register for a fetch that had finished, and nobody ever resumed it.
    @Test func aWaiterWhoseCheckIsOvertakenByTheFetchStillReturns() async throws {
        let (sim, assets) = try await Self.simulation(seed: 27, nodes: 2)
        let bytes = Self.content(40_000, seed: 7)
        let asset = assets[0].add(bytes, chunkSize: 4096)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        try await sim.route(await sim.nodes[1].sync.fetchAsset(asset), from: 1)
        // The waiter's check sees the asset missing, then stays suspended while the fetch finishes.
        assets[1].holdNextManifestCheck()
        let returned = Atomic<Bool>(false)
        let node = sim.nodes[1].sync
        let waiter = Task {
            try await node.waitForAsset(asset)
            returned.store(true, ordering: .releasing)
        }
        for _ in 0..<1_000 where !assets[1].aManifestCheckIsHeld { try await Task.sleep(for: .milliseconds(5)) }
        #expect(assets[1].aManifestCheckIsHeld)
        _ = try await sim.runUntilQuiet()
        #expect(assets[1].bytes(of: asset) == bytes, "the fetch finished while the waiter's check was held")
        assets[1].releaseManifestCheck()
        for _ in 0..<1_000 where !returned.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
        let didReturn = returned.load(ordering: .acquiring)
        #expect(didReturn, "waitForAsset did not return within 5 s for an asset that is held")
        waiter.cancel()
        _ = try? await waiter.value
        #expect(await node.assetTransfers().isEmpty, "no transfer is left behind for a held asset")
    }

    @Test func anAssetNoPeerHoldsIsNotAvailable() async throws {
        let (sim, _) = try await Self.simulation(seed: 24, nodes: 2)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let missing = MemoryAssets.asset(of: [1, 2, 3])
        let result = try await Self.fetch(missing, on: 1, in: sim)
        guard case .failure(let e as AssetFetchError) = result else {
            Issue.record("expected assetNotAvailable, got \(result)"); return
        }
        #expect(e.code == .assetNotAvailable)
    }

    /// Node 0 saves a photo record whose asset (30 KB) only it holds, then nodes 0 and 1 connect
    /// and the network runs until it is quiet.
    static func photoReplicated(seed: UInt64, content: UInt64, configuration: SyncConfiguration = SyncConfiguration())
        async throws
        -> (sim: Simulation, assets: [MemoryAssets], bytes: [UInt8], asset: Asset, record: Record.ID)
    {
        let (sim, assets) = try await Self.simulation(seed: seed, nodes: 2, configuration: configuration)
        let bytes = Self.content(30_000, seed: content)
        let asset = assets[0].add(bytes, chunkSize: 4096)
        try await sim.nodes[0].store.createZone(Self.notes)
        var r = Record(recordType: "Photo", id: Record.ID(name: "p1", zone: Self.notes))
        r["image"] = .asset(asset)
        _ = try await sim.nodes[0].store.save(r)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        return (sim, assets, bytes, asset, r.id)
    }

    /// A lazy zone (the default) replicates the record and leaves its asset where it is until the
    /// application asks for it; then the asset comes over, whole and verified.
    @Test func lazyZonesFetchAnAssetOnlyWhenAsked() async throws {
        let (sim, assets, bytes, asset, id) = try await Self.photoReplicated(seed: 26, content: 6)
        #expect(try await sim.nodes[1].store.record(for: id)["image"] == .asset(asset))
        #expect(assets[1].bytes(of: asset)?.count == nil, "the asset came over before anyone asked for it")
        #expect(await sim.nodes[1].sync.assetTransfers().isEmpty)

        let result = try await Self.fetch(asset, on: 1, in: sim)
        #expect(throws: Never.self) { try result.get() }
        #expect(assets[1].bytes(of: asset) == bytes)
    }

    @Test func eagerZonesFetchTheAssetsOfArrivingRecords() async throws {
        var configuration = SyncConfiguration()
        configuration.assetFetch = [Self.notes: .eager]
        let (_, assets, bytes, asset, _) = try await Self.photoReplicated(
            seed: 25, content: 5, configuration: configuration)
        #expect(assets[1].bytes(of: asset) == bytes)
    }
}
