// AssetFrameQueueTests: the asset lanes' queue hands over every frame waiting at once, in order,
// wakes a waiting lane, and ends cleanly.

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
        q.push(Self.frame(1), from: a)
        q.push(Self.frame(2), from: b)
        q.push(Self.frame(3), from: a)
        let batch = await q.take()
        #expect(Self.nonces(batch) == [1, 2, 3])
        #expect(batch?.map(\.connection) == [a, b, a])
        q.push(Self.frame(4), from: b)
        #expect(Self.nonces(await q.take()) == [4])
    }

    @Test func aWaitingLaneWakesForTheNextFrame() async {
        let q = AssetFrameQueue()
        async let taken = q.take()
        // Whether the push comes before or after the taker starts waiting, it gets the frame.
        try? await Task.sleep(for: .milliseconds(20))
        q.push(Self.frame(7), from: ConnectionID(rawValue: 1))
        #expect(Self.nonces(await taken) == [7])
    }

    @Test func finishingHandsOverWhatWaitsThenEnds() async {
        let q = AssetFrameQueue()
        q.push(Self.frame(1), from: ConnectionID(rawValue: 1))
        q.finish()
        q.push(Self.frame(2), from: ConnectionID(rawValue: 1))  // after the end: dropped
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
}
