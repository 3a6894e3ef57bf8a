// AssetRateTests: the asset lanes keep to a configured rate — the pacer's arithmetic on given
// instants, and a fetch over real TCP that takes at least as long as its rate allows.

import Foundation
import Testing
import ShoalSamples
import ShoalSyncSamples
import ShoalSync
import ShoalWire
@testable import ShoalNet

@Suite struct RatePacerTests {
    static let start = ContinuousClock.now

    /// A stream that always sends again as soon as it may: its last bytes pass at exactly the
    /// rate's time for everything but the burst.
    @Test func aSteadyStreamKeepsToTheRate() {
        var pacer = RatePacer(bytesPerSecond: 1_000_000, burst: 100_000)
        var now = Self.start
        var waits = 0
        for _ in 0..<50 {
            let wait = pacer.pause(after: 40_000, at: now)
            if wait > .zero { waits += 1 }
            now += wait
        }
        // 2,000,000 bytes at 1 MB/s, less the 100,000-byte burst: 1.9 s.
        #expect(now - Self.start == .milliseconds(1_900))
        // The first two chunks (80,000 bytes) fit the burst; the third is the first to wait.
        #expect(waits == 48)
    }

    @Test func bytesWithinTheBurstPassAtOnce() {
        var pacer = RatePacer(bytesPerSecond: 1_000_000, burst: 100_000)
        #expect(pacer.pause(after: 60_000, at: Self.start) == .zero)
        #expect(pacer.pause(after: 40_000, at: Self.start) == .zero)
        #expect(pacer.pause(after: 1, at: Self.start) == .nanoseconds(1_000))
    }

    /// An idle spell restores the burst and no more: a long pause is not credit for a flood.
    @Test func idleTimeIsNotSavedUp() {
        var pacer = RatePacer(bytesPerSecond: 1_000_000, burst: 100_000)
        _ = pacer.pause(after: 500_000, at: Self.start)
        let later = Self.start + .seconds(60)
        #expect(pacer.pause(after: 100_000, at: later) == .zero)
        #expect(pacer.pause(after: 100_000, at: later) == .milliseconds(100))
    }

    /// The burst defaults to a tenth of a second's bytes; a rate below 1 byte/s counts as 1, and
    /// even a count far past any frame gives a wait that converts without trapping.
    @Test func defaultsAndExtremes() {
        #expect(RatePacer(bytesPerSecond: 5_000_000).burst == 500_000)
        var slow = RatePacer(bytesPerSecond: 0)
        #expect(slow.bytesPerSecond == 1)
        #expect(slow.pause(after: Int.max, at: Self.start) > .seconds(1_000_000))
        #expect(slow.pause(after: -5, at: Self.start) > .zero)
    }
}

@Suite(.serialized) struct AssetRateTests {
    static let content: [UInt8] = {
        var rng = SplitMix64(seed: 0x5A7E)
        return (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }()

    /// Fetches the 1 MiB `content` in 4 chunks of 256 KiB from a node A to a node B with those
    /// network settings; returns how long the fetch took and both nodes' traffic counters.
    ///
    /// A chunk is larger than the burst of a 2 MiB/s rate (a tenth of a second's bytes, 204.8
    /// KiB), so the lane that keeps to that rate waits after its first chunk however slowly the
    /// chunks come: with chunks below the burst it waits only when they come faster than the
    /// rate, which a full `swift test` on two cores can prevent.
    func fetch(a aNetwork: NetworkConfiguration, b bNetwork: NetworkConfiguration) async throws -> (
        Duration, TrafficCounter, TrafficCounter
    ) {
        let held = MemoryAssets(), fetched = MemoryAssets()
        let asset = held.add(Self.content, chunkSize: 256 << 10)
        let a = try await LoopbackNode.start("a", assets: held, network: aNetwork)
        let b = try await LoopbackNode.start("b", assets: fetched, network: bNetwork)
        try await a.reference(asset, sharedWith: [b])
        await LoopbackNode.trustEachOther(b, a)
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { await b.net.peers().first?.node != nil }, "B never connected to A")
        let began = ContinuousClock.now
        try await b.net.fetchAsset(asset)
        let took = ContinuousClock.now - began
        #expect(fetched.bytes(of: asset) == Self.content, "the fetched asset differs from A's")
        await a.stop()
        await b.stop()
        return (took, a.net.traffic, b.net.traffic)
    }

    /// The shortest a fetch of `content` can take at 2 MiB/s: the lane waits after each chunk,
    /// so the first 3 chunks' bytes, less the burst (a tenth of a second's bytes), pass at the
    /// rate before the last is handled: (768 KiB − 204.8 KiB) / 2 MiB ≈ 0.275 s. A lower bound
    /// only: a slow machine takes longer, never less.
    static let shortest = Duration.milliseconds(270)

    @Test func aReceiveRateSlowsTheFetchToIt() async throws {
        var limited = NetworkConfiguration()
        limited.assetReceiveRate = 2 << 20
        let (took, a, b) = try await fetch(a: NetworkConfiguration(), b: limited)
        #expect(took >= Self.shortest, "1 MiB at 2 MiB/s arrived in \(took)")
        #expect(b.assetPauses > 0)
        #expect(a.assetPauses == 0, "the serving side has no limit, so it never waits")
    }

    /// B fetches at 128 B/s, so its fetching lane waits about 512 s after the first 64 KiB chunk
    /// — longer than `eventually` waits (240 s). A change saved on A meanwhile still reaches B: the
    /// lane's waits hold back asset requests only, never record batches.
    @Test func recordChangesDoNotWaitForThePacedLane() async throws {
        let held = MemoryAssets(), fetched = MemoryAssets()
        let asset = held.add(Self.content, chunkSize: 64 << 10)
        var slow = NetworkConfiguration()
        slow.assetReceiveRate = 128
        let a = try await LoopbackNode.start("a", assets: held)
        let b = try await LoopbackNode.start("b", assets: fetched, network: slow)
        let notes = RecordZone.ID(name: "notes")
        try await a.createSharedZone(notes, with: [b])
        try await a.reference(asset, sharedWith: [b], in: notes)
        await LoopbackNode.trustEachOther(b, a)
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { await b.net.peers().first?.node != nil }, "B never connected to A")
        let fetch = Task { try await b.net.fetchAsset(asset) }
        #expect(await eventually { b.net.traffic.assetPauses > 0 }, "B's fetching lane never waited")

        var note = Record(recordType: "Note", id: Record.ID(name: "during", zone: notes))
        note["text"] = .string("saved while B's asset lane waits")
        _ = try await a.store.save(note)
        #expect(
            await eventually { (try? await b.store.record(for: note.id)) != nil },
            "the change waited behind the paced fetch")
        fetch.cancel()
        _ = try? await fetch.value
        await a.stop()
        await b.stop()
    }

    /// The same from the serving side: it waits after each answer it sends.
    @Test func aSendRateSlowsTheServingToIt() async throws {
        var limited = NetworkConfiguration()
        limited.assetSendRate = 2 << 20
        let (took, a, b) = try await fetch(a: limited, b: NetworkConfiguration())
        #expect(took >= Self.shortest, "1 MiB at 2 MiB/s was served in \(took)")
        #expect(a.assetPauses > 0)
        #expect(b.assetPauses == 0, "the fetching side has no limit, so it never waits")
    }
    /// The send rate holds over all peers together, though each connection has its own serving
    /// lane: two peers fetch the 1 MiB `content` from A at once, A serving at 2 MiB/s. Each answer
    /// is counted before the next goes, so at least the 2 MiB less the burst (a tenth of a second's
    /// bytes; twice, should the fetches not overlap and an idle spell restore it) and the last
    /// chunk to each peer pass at the rate: (2,048 − 409.6 − 128) KiB at 2 MiB/s ≈ 0.74 s. Separate
    /// pacers let both fetches finish in about 0.39 s (measured).
    @Test func theSendRateHoldsOverEveryPeer() async throws {
        var limited = NetworkConfiguration()
        limited.assetSendRate = 2 << 20
        let held = MemoryAssets()
        let asset = held.add(Self.content, chunkSize: 64 << 10)
        let a = try await LoopbackNode.start("a", assets: held, network: limited)
        try await a.reference(asset, sharedWith: nil)  // an open zone: every trusted device reads it
        let fetchers = [MemoryAssets(), MemoryAssets()]
        var peers: [LoopbackNode] = []
        for (i, f) in fetchers.enumerated() {
            let p = try await LoopbackNode.start("p\(i)", assets: f)
            await LoopbackNode.trustEachOther(p, a)
            await p.net.addPeer(host: "127.0.0.1", port: a.port)
            #expect(await eventually { await p.net.peers().first?.node != nil }, "peer \(i) never connected to A")
            peers.append(p)
        }
        let began = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for p in peers { group.addTask { try await p.net.fetchAsset(asset) } }
            try await group.waitForAll()
        }
        let took = ContinuousClock.now - began
        #expect(took >= .milliseconds(700), "2 MiB to two peers at 2 MiB/s took \(took)")
        for f in fetchers { #expect(f.bytes(of: asset) == Self.content) }
        await a.stop()
        for p in peers { await p.stop() }
    }
}
