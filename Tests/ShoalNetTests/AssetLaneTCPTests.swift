// AssetLaneTCPTests: over real TCP, serving an asset never holds up a node's record changes, and
// serving one peer never holds up serving another.

import Foundation
import Synchronization
import Testing
import ShoalStore
import ShoalWire
import ShoalSync
import ShoalSamples
import ShoalSyncSamples
@testable import ShoalNet

/// A provider holding one asset whose manifest is served only once ``open()`` is called (a chunk
/// read that takes as long as the test wants); it stores nothing.
final class GatedAssets: AssetProvider {
    let held: Asset?
    private let state = Mutex<(open: Bool, asked: Int, waiting: [CheckedContinuation<Void, Never>])>((false, 0, []))

    init(holding asset: Asset?) { held = asset }

    /// How many manifest requests arrived.
    var asked: Int { state.withLock { $0.asked } }

    /// Lets every stalled and later request through.
    func open() {
        let waiting = state.withLock { s in
            s.open = true
            defer { s.waiting = [] }
            return s.waiting
        }
        for c in waiting { c.resume() }
    }

    func manifest(of asset: Asset) async -> [UInt8]? {
        guard asset == held else { return nil }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let go = state.withLock { s in
                s.asked += 1
                if !s.open { s.waiting.append(c) }
                return s.open
            }
            if go { c.resume() }
        }
        return nil  // then "unavailable": the fetch ends, which is all this test needs
    }

    func chunk(_ index: Int, of asset: Asset) async -> [UInt8]? { nil }
    func receiveManifest(_ bytes: [UInt8], for asset: Asset) async -> Int? { nil }
    func receiveChunk(_ bytes: [UInt8], index: Int, of asset: Asset) async -> Bool { false }
    func missingChunks(of asset: Asset) async -> [Int]? { nil }
    func finish(_ asset: Asset) async -> Bool { false }
    func abandon(_ asset: Asset) async {}
}

@Suite(.serialized) struct AssetLaneTCPTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["text"] = .string(name)
        return r
    }

    /// B asks A for an asset whose serving stalls on A (a slow disk, a large manifest). A change
    /// saved on A meanwhile still reaches B: asset requests are handled beside the engine that
    /// sends record changes, not in it (Spec/replication.md §3.7).
    @Test func aStalledAssetRequestDoesNotHoldUpRecordChanges() async throws {
        let asset = Asset(hash: ContentHash(bytes: [UInt8](repeating: 7, count: 32))!, size: 1 << 20)
        let served = GatedAssets(holding: asset)
        let a = try await LoopbackNode.start("a", assets: served)
        let b = try await LoopbackNode.start("b", assets: GatedAssets(holding: nil))
        try await a.createSharedZone(Self.notes, with: [b])
        try await a.reference(asset, sharedWith: [b], in: Self.notes)
        _ = try await a.store.save(note("before"))
        await LoopbackNode.trustEachOther(b, a)
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(
            await eventually { (try? await b.store.record(for: Record.ID(name: "before", zone: Self.notes))) != nil })

        let fetch = Task { try await b.net.fetchAsset(asset) }
        #expect(await eventually { served.asked >= 1 }, "A never received the manifest request")

        // A is now serving the request and stalled in it.
        _ = try await a.store.save(note("during"))
        // The default bound, as elsewhere: the whole suite shares two cores. With the request in
        // the engine the change never arrives at all, however long the wait.
        let arrived = await eventually {
            (try? await b.store.record(for: Record.ID(name: "during", zone: Self.notes))) != nil
        }
        #expect(arrived, "a change saved on A waited behind the asset request it was serving")

        served.open()
        // A answers unavailable; B has no other peer, so the fetch ends with assetNotAvailable.
        await #expect(throws: AssetFetchError.self) { try await fetch.value }
        await a.stop()
        await b.stop()
    }
    /// C asks A for an asset and A's answer stalls (a slow disk; or C stops reading, which holds
    /// the lane at its connection's chunk gate). B then fetches the same asset from A, and gets it:
    /// each connection has its own serving lane (Spec/replication.md §3.7). With one lane for
    /// every connection, B's request waited behind C's for as long as C's stalled.
    @Test func servingOnePeerNeverWaitsForAnother() async throws {
        var rng = SplitMix64(seed: 0xC0FFEE)
        let content = (0..<(256 << 10)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let held = MemoryAssets()
        let asset = held.add(content, chunkSize: 16 << 10)
        let a = try await LoopbackNode.start("a", assets: held)
        try await a.reference(asset, sharedWith: nil)  // an open zone: B and C may read it
        let c = try await LoopbackNode.start("c", assets: MemoryAssets())
        await LoopbackNode.trustEachOther(c, a)
        await c.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { await c.net.peers().first?.node != nil }, "C never connected to A")
        held.holdNextManifestCheck()
        let stalled = Task { try await c.net.fetchAsset(asset) }
        #expect(await eventually { held.aManifestCheckIsHeld }, "C's request never reached A")

        let fetched = MemoryAssets()
        let b = try await LoopbackNode.start("b", assets: fetched)
        await LoopbackNode.trustEachOther(b, a)
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { await b.net.peers().first?.node != nil }, "B never connected to A")
        let fetch = Task { try await b.net.fetchAsset(asset) }
        let served = await eventually { fetched.bytes(of: asset) == content }
        #expect(served, "B's fetch waited behind C's stalled request")

        held.releaseManifestCheck()
        try await fetch.value
        try await stalled.value
        await a.stop()
        await b.stop()
        await c.stop()
    }

    /// Over mutual TLS: X, a trusted device that is not a member of the zone whose record
    /// references an asset, asks A for it by (hash, size) and is told it is unavailable, as for
    /// an asset nobody holds; A sends it no byte of it. M, a read-only member, is served it.
    @Test func aTrustedNonMemberIsNotServedAnAssetOfAZoneItCannotRead() async throws {
        var rng = SplitMix64(seed: 0x5EC)
        let content = (0..<300_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let held = MemoryAssets(), outsider = MemoryAssets(), member = MemoryAssets()
        let asset = held.add(content, chunkSize: 16 << 10)
        let missing = MemoryAssets.asset(of: Array(content.reversed()))
        let a = try await LoopbackNode.start("a", assets: held)
        let x = try await LoopbackNode.start("x", assets: outsider)
        let m = try await LoopbackNode.start("m", assets: member)
        try await a.createSharedZone(Self.notes, with: [m], role: .readOnly)
        try await a.reference(asset, sharedWith: [m], in: Self.notes)
        await LoopbackNode.trustEachOther(a, x, m)
        await x.net.addPeer(host: "127.0.0.1", port: a.port)
        await m.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { await x.net.peers().first?.node != nil }, "X never connected to A")
        #expect(await eventually { await m.net.peers().first?.node != nil }, "M never connected to A")

        func refusal(_ asset: Asset) async -> String? {
            do {
                try await x.net.fetchAsset(asset)
                return nil
            } catch {
                return (error as? AssetFetchError)?.code.name
            }
        }
        #expect(await refusal(asset) == "assetNotAvailable")
        #expect(await refusal(missing) == "assetNotAvailable")
        #expect(outsider.bytes(of: asset) == nil)
        #expect(await a.net.sync.statistics.assetChunksSent == 0, "A sent chunks of the asset to a non-member")

        try await m.net.fetchAsset(asset)
        #expect(member.bytes(of: asset) == content)
        await a.stop()
        await x.stop()
        await m.stop()
    }
}
