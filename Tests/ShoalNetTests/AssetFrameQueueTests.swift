// AssetFrameQueueTests: the asset lanes' queue hands over every frame waiting at once, in order,
// wakes a waiting lane, ends cleanly, and bounds what each connection has waiting.

import Synchronization
import Testing
import ShoalSync
import ShoalWire
@testable import ShoalNet

@Suite struct AssetFrameQueueTests {
    static func frame(_ n: UInt64) -> Frame { Frame(type: .ping, payload: PingMessage(nonce: n).encoded()) }
    static func nonces(_ items: [AssetFrameQueue.Item]?) -> [UInt64] {
        (items ?? []).compactMap { try? PingMessage(decoding: $0.frame.payload).nonce }
    }

    @Test func framesPushedWhileTheLaneIsBusyComeOutTogetherInOrder() async {
        let q = AssetFrameQueue()
        let a = ConnectionID(rawValue: 1), b = ConnectionID(rawValue: 2)
        await q.push(Self.frame(1), from: a)
        await q.push(Self.frame(2), from: b)
        await q.push(Self.frame(3), from: a)
        let batch = await q.take()
        #expect(Self.nonces(batch) == [1, 2, 3])
        #expect(batch?.map(\.connection) == [a, b, a])
        await q.push(Self.frame(4), from: b)
        #expect(Self.nonces(await q.take()) == [4])
    }

    @Test func aWaitingLaneWakesForTheNextFrame() async {
        let q = AssetFrameQueue()
        async let taken = q.take()
        // Whether the push comes before or after the taker starts waiting, it gets the frame.
        try? await Task.sleep(for: .milliseconds(20))
        await q.push(Self.frame(7), from: ConnectionID(rawValue: 1))
        #expect(Self.nonces(await taken) == [7])
    }

    @Test func finishingHandsOverWhatWaitsThenEnds() async {
        let q = AssetFrameQueue()
        await q.push(Self.frame(1), from: ConnectionID(rawValue: 1))
        q.finish()
        await q.push(Self.frame(2), from: ConnectionID(rawValue: 1))  // after the end: dropped
        #expect(Self.nonces(await q.take()) == [1])
        #expect(await q.take() == nil)
    }

    @Test func finishingWakesAWaitingLane() async {
        let q = AssetFrameQueue()
        async let taken = q.take()
        try? await Task.sleep(for: .milliseconds(20))
        q.finish()
        #expect(await taken == nil)
    }

    @Test func cancellingTheLaneEndsItsWait() async {
        let q = AssetFrameQueue()
        let lane = Task { await q.take() }
        try? await Task.sleep(for: .milliseconds(20))
        lane.cancel()
        #expect(await lane.value == nil)
    }

    // MARK: The per-connection bound

    static func chunk(_ bytes: Int) -> Frame {
        Frame(type: .assetChunk, payload: [UInt8](repeating: 0xAB, count: bytes))
    }

    /// Pushes `frames` from `connection` in a task of its own; `pushed` counts those whose push returned.
    static func pusher(_ q: AssetFrameQueue, _ frames: [Frame], from connection: ConnectionID, pushed: Counter) -> Task<
        Void, Never
    > {
        Task {
            for f in frames {
                await q.push(f, from: connection)
                pushed.increment()
            }
        }
    }

    /// Waits (bounded: 60 s) until `connection` has `bytes` waiting in `q` — the push that took it
    /// there has run — then 50 ms more, and returns `counter`: a reader that should wait has had
    /// the time to go on if it wrongly could.
    static func settle(_ q: AssetFrameQueue, _ connection: ConnectionID, at bytes: Int, _ counter: Counter) async -> Int
    {
        for _ in 0..<6_000 where q.queuedBytes(of: connection) != bytes {
            try? await Task.sleep(for: .milliseconds(10))
        }
        try? await Task.sleep(for: .milliseconds(50))
        return counter.value
    }

    @Test func aConnectionOverItsLimitWaitsUntilTheLaneTakesAndOthersDoNot() async {
        let q = AssetFrameQueue(limit: 5_000)
        let a = ConnectionID(rawValue: 1), b = ConnectionID(rawValue: 2)
        let fromA = Counter(), fromB = Counter()
        // A's third 2,000-byte frame takes it to 6,000 > 5,000: that push is made, then waits.
        let pa = Self.pusher(q, (0..<4).map { _ in Self.chunk(2_000) }, from: a, pushed: fromA)
        #expect(await Self.settle(q, a, at: 6_000, fromA) == 2, "A's reader went on over its limit")
        // B is not held back by A's backlog.
        let pb = Self.pusher(q, [Self.chunk(1_000), Self.chunk(1_000)], from: b, pushed: fromB)
        #expect(
            await Self.settle(q, b, at: 2 * AssetFrameQueue.minimumFrameCost, fromB) == 2,
            "a frame under 1 KiB counts 1 KiB")
        // The lane takes everything: A goes on with its fourth frame.
        #expect(await q.take()?.count == 5)
        #expect(q.queuedBytes(of: a) == 0 && q.queuedBytes(of: b) == 0)
        await pa.value
        await pb.value
        #expect(fromA.value == 4)
        #expect(q.queuedBytes(of: a) == 2_000)
        q.finish()  // so that a wrong count fails instead of waiting
        #expect(await q.take()?.count == 1)
    }

    /// A flood of empty frames is bounded too: each counts 1 KiB.
    @Test func smallFramesCountAtLeastTheMinimum() async {
        let q = AssetFrameQueue(limit: 4 * AssetFrameQueue.minimumFrameCost)
        let a = ConnectionID(rawValue: 1)
        let pushed = Counter()
        let p = Self.pusher(q, (0..<6).map { _ in Self.frame(0) }, from: a, pushed: pushed)
        #expect(
            await Self.settle(q, a, at: 5 * AssetFrameQueue.minimumFrameCost, pushed) == 4,
            "the fifth push is over the limit and waits")
        #expect(await q.take()?.count == 5)
        await p.value
        q.finish()  // so that a wrong count fails instead of waiting
        #expect(await q.take()?.count == 1)
    }

    /// A frame handed straight to a waiting lane never counts against its connection.
    @Test func aFrameForAWaitingLaneDoesNotCount() async {
        let q = AssetFrameQueue(limit: 1_024)
        let a = ConnectionID(rawValue: 1)
        async let taken = q.take()
        try? await Task.sleep(for: .milliseconds(20))
        await q.push(Self.chunk(50_000), from: a)
        #expect(await taken?.count == 1)
        #expect(q.queuedBytes(of: a) == 0)
    }

    @Test func finishingOrCancellingLetsAWaitingReaderGo() async {
        for cancel in [false, true] {
            let q = AssetFrameQueue(limit: 1_024)
            let pushed = Counter()
            let a = ConnectionID(rawValue: 1)
            let p = Self.pusher(q, [Self.chunk(4_000), Self.chunk(4_000)], from: a, pushed: pushed)
            #expect(
                await Self.settle(q, a, at: 4_000, pushed) == 0, "cancel \(cancel): the first push is over the limit")
            if cancel { p.cancel() } else { q.finish() }
            await p.value
            #expect(pushed.value == 2, "cancel \(cancel)")
        }
    }

    /// The event loop's side: `offer` never waits and says when the connection went over;
    /// `whenRoom` calls back at once when there is room, else once the lane has taken enough, or
    /// when the connection is released or the queue finished.
    @Test func offersSayWhenToStopAndRoomCallsBack() async {
        let q = AssetFrameQueue(limit: 3_000)
        let a = ConnectionID(rawValue: 1), b = ConnectionID(rawValue: 2)
        let calls = Counter()
        #expect(!q.offer(Self.chunk(2_000), from: a))
        q.whenRoom(for: a) { calls.increment() }
        #expect(calls.value == 1, "under the limit: at once")
        #expect(q.offer(Self.chunk(2_000), from: a), "4,000 > 3,000")
        q.whenRoom(for: a) { calls.increment() }
        #expect(calls.value == 1, "over the limit: not yet")
        #expect(await q.take()?.count == 2)
        #expect(calls.value == 2, "the lane took: called back")
        #expect(q.offer(Self.chunk(4_000), from: b))
        q.whenRoom(for: b) { calls.increment() }
        q.release(b)
        #expect(calls.value == 3, "released: called back, frames still queued")
        #expect(q.queuedBytes(of: b) == 4_000)
        #expect(q.offer(Self.chunk(4_000), from: a))
        q.whenRoom(for: a) { calls.increment() }
        q.finish()
        #expect(calls.value == 4, "finished: called back")
    }
}

/// A count several tasks bump.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
