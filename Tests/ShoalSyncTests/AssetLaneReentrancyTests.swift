// AssetLaneReentrancyTests: what happens to a fetch while it chooses its peer — the node takes other
// calls while the asset store says which chunks are missing, and none of them may be lost.

import Testing
import ShoalSyncSamples
@testable import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct AssetLaneReentrancyTests {
    /// Waits (bounded: 10,000 turns of the scheduler, no sleeping) until `condition` holds.
    static func until(_ condition: () async -> Bool) async -> Bool {
        for _ in 0..<10_000 {
            if await condition() { return true }
            await Task.yield()
        }
        return await condition()
    }

    /// Regression: a waiter that registered while the fetch was asking the store for the missing
    /// chunks was erased when the fetch wrote its copy of the transfer back. The fetch then
    /// finished without it and the waiter never returned, not even when cancelled (`shoal asset
    /// get` hung in CommandLineTests.assetsTravelBetweenDaemons, a few runs in a hundred).
    @Test func aWaiterThatArrivesWhileThePeerIsChosenIsKept() async throws {
        let (sim, assets) = try await AssetLaneTests.simulation(seed: 41, nodes: 2)
        let bytes = AssetLaneTests.content(40_000, seed: 41)
        let asset = assets[0].add(bytes, chunkSize: 4096)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let node = sim.nodes[1].sync

        assets[1].holdNextMissingChunksCheck()
        let asking = Task { await node.fetchAsset(asset) }
        await assets[1].missingChunksCheckHeld()
        let waiter = Task { try await node.waitForAsset(asset) }
        try #require(
            await Self.until { await node.assetTransfer(asset)?.waiters.count == 1 },
            "the waiter registers while the peer is chosen")
        assets[1].releaseMissingChunksCheck()
        let out = await asking.value

        // Checked before waiting for it: a waiter dropped here would never return.
        try #require(
            await node.assetTransfer(asset)?.waiters.count == 1, "the waiter is still there once the peer is asked")
        try await sim.route(out, from: 1)
        #expect(try await sim.runUntilQuiet())
        let fetched = assets[1].bytes(of: asset) == bytes
        #expect(fetched)
        try await waiter.value
        #expect(await node.assetTransfers().isEmpty)
    }

    /// Two connections to one peer (both dialled); the fetch picks the first, and that one closes
    /// while the store says what is missing: the close parks the transfer and it moves to the other
    /// connection, where it completes. The fetch used to write its copy back afterwards, putting
    /// the transfer on the closed connection, where no answer could reach it.
    @Test func aFetchWhoseConnectionClosesWhileThePeerIsChosenCompletesOnTheOther() async throws {
        var configuration = SyncConfiguration()
        configuration.assetWindow = 2
        let (sim, assets) = try await AssetLaneTests.simulation(seed: 42, nodes: 2, configuration: configuration)
        let bytes = AssetLaneTests.content(40_000, seed: 42)
        let asset = assets[0].add(bytes, chunkSize: 4096)  // 10 chunks
        try await sim.connect(1, 0)
        try await sim.connect(0, 1, duplicate: true)
        #expect(try await sim.runUntilQuiet())
        try #require(sim.links.count == 2)
        let node = sim.nodes[1].sync
        let first = sim.links[0].connA, second = sim.links[1].connB
        #expect(first.rawValue < second.rawValue, "the fetch asks node 1's first connection")

        assets[1].holdNextMissingChunksCheck()
        let asking = Task { await node.fetchAsset(asset) }
        await assets[1].missingChunksCheckHeld()
        // The first connection breaks; the transport parks its transfers and resumes them on
        // another connection (NetworkNode's closed event).
        await sim.reset(0)
        let moved = await node.resumeAssetTransfers()
        #expect(
            moved.keys.sorted { $0.rawValue < $1.rawValue } == [second],
            "the manifest is asked for on the remaining connection")
        try await sim.route(moved, from: 1)
        assets[1].releaseMissingChunksCheck()
        let out = await asking.value
        #expect(out[first] == nil, "nothing goes to the closed connection")
        #expect(await node.assetTransfer(asset)?.connection == second)

        try await sim.route(out, from: 1)
        #expect(try await sim.runUntilQuiet())
        let fetched = assets[1].bytes(of: asset) == bytes
        #expect(fetched, "the fetch completed on the remaining connection")
        #expect(await node.assetTransfers().isEmpty)
        if fetched { try await node.waitForAsset(asset) }
        #expect(await node.statistics.assetChunksReceived == 10, "no chunk fetched twice")
    }
}
