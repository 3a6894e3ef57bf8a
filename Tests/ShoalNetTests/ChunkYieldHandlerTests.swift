// ChunkYieldHandlerTests: record frames overtake asset chunks held while the connection has bytes
// waiting, held chunks go out in order once it is writable, one per turn of the event loop, and the
// serving lane waits while too many chunk bytes are held.

import NIOCore
import NIOEmbedded
import Synchronization
import Testing
import ShoalWire
@testable import ShoalNet

@Suite struct ChunkYieldHandlerTests {
    static func chunk(_ n: UInt8) -> Frame { Frame(type: .assetChunk, payload: [UInt8](repeating: n, count: 1000)) }
    static func record(_ n: UInt64) -> Frame { Frame(type: .ping, payload: PingMessage(nonce: n).encoded()) }

    /// Counts the writability events that reach the handlers above the yield handler.
    final class WritabilityEvents: ChannelInboundHandler {
        typealias InboundIn = Frame
        var count = 0
        func channelWritabilityChanged(context: ChannelHandlerContext) {
            count += 1
            context.fireChannelWritabilityChanged()
        }
    }

    /// Writes and flushes `frame` without waiting for it to be written (a held chunk is not).
    static func send(_ frame: Frame, on channel: EmbeddedChannel) {
        channel.write(frame, promise: nil)
        channel.flush()
    }

    /// Every frame written so far, after running the tasks the loop has waiting (the handler's
    /// turns, and the turns they schedule).
    static func written(_ channel: EmbeddedChannel) throws -> [Frame] {
        channel.embeddedEventLoop.run()
        return try writtenNow(channel)
    }

    /// The frames written so far, without running the loop's tasks.
    static func writtenNow(_ channel: EmbeddedChannel) throws -> [Frame] {
        var out = [Frame]()
        while let f = try channel.readOutbound(as: Frame.self) { out.append(f) }
        return out
    }

    @Test func recordFramesOvertakeChunksHeldWhileTheChannelIsNotWritable() throws {
        let gate = ChunkGate(limit: 10_000)
        let events = WritabilityEvents()
        let channel = EmbeddedChannel(handlers: [ChunkYieldHandler(gate: gate), events])
        Self.send(Self.chunk(1), on: channel)
        #expect(try Self.written(channel) == [Self.chunk(1)], "a chunk passes while the channel is writable")

        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        Self.send(Self.chunk(2), on: channel)
        Self.send(Self.chunk(3), on: channel)
        Self.send(Self.record(9), on: channel)
        #expect(try Self.written(channel) == [Self.record(9)], "the record frame overtakes the held chunks")
        #expect(gate.heldBytes == 2000)

        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try Self.written(channel) == [Self.chunk(2), Self.chunk(3)], "held chunks follow in order")
        #expect(gate.heldBytes == 0)
        // The writer above must never see the channel unwritable: record frames keep flowing.
        #expect(events.count == 0)
        _ = try channel.finish()
    }

    /// A chunk written while others are held waits behind them even if the channel is writable
    /// again by then, so chunks never reorder.
    @Test func chunksNeverOvertakeEachOther() throws {
        let gate = ChunkGate()
        let channel = EmbeddedChannel(handlers: [ChunkYieldHandler(gate: gate)])
        channel.isWritable = false
        Self.send(Self.chunk(1), on: channel)
        channel.isWritable = true  // no event yet
        Self.send(Self.chunk(2), on: channel)
        #expect(try Self.written(channel) == [Self.chunk(1), Self.chunk(2)])
        _ = try channel.finish()
    }

    /// Each turn of the event loop passes one chunk down; a task queued meanwhile (a record frame
    /// the node hands to the channel) runs before the next chunk, not after all of them.
    @Test func oneChunkPerTurnOfTheEventLoop() throws {
        let gate = ChunkGate()
        let channel = EmbeddedChannel(handlers: [ChunkYieldHandler(gate: gate)])
        for n in 1...3 { channel.write(Self.chunk(UInt8(n)), promise: nil) }
        channel.flush()
        #expect(try Self.writtenNow(channel).isEmpty, "chunks go down in the loop's turns, not in the caller's")
        #expect(gate.heldBytes == 3000)
        // The first turn was scheduled with the first chunk: it runs, passes one chunk, and
        // schedules the next turn behind the record frame's task.
        channel.embeddedEventLoop.execute { Self.send(Self.record(7), on: channel) }
        channel.embeddedEventLoop.run()
        #expect(try Self.writtenNow(channel) == [Self.chunk(1), Self.record(7), Self.chunk(2), Self.chunk(3)])
        #expect(gate.heldBytes == 0)
        _ = try channel.finish()
    }

    @Test func heldChunksFailWhenTheConnectionCloses() throws {
        let gate = ChunkGate()
        let channel = EmbeddedChannel(handlers: [ChunkYieldHandler(gate: gate)])
        channel.isWritable = false
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.write(Self.chunk(1), promise: promise)
        channel.flush()
        #expect(gate.heldBytes == 1000)
        let failed = Atomic<Bool>(false)
        promise.futureResult.whenFailure { _ in failed.store(true, ordering: .relaxed) }
        _ = try? channel.finish()
        let didFail = failed.load(ordering: .relaxed)
        #expect(didFail)
        #expect(gate.heldBytes == 0)
    }

    @Test func theServingLaneWaitsWhileTooManyChunkBytesAreHeld() async {
        let gate = ChunkGate(limit: 100)
        gate.hold(150)
        let through = Atomic<Bool>(false)
        let lane = Task {
            await gate.waitForRoom()
            through.store(true, ordering: .releasing)
        }
        try? await Task.sleep(for: .milliseconds(50))
        let early = through.load(ordering: .acquiring)
        #expect(!early, "over the limit: the lane waits")
        gate.release(60)  // 90 held: under the limit
        await lane.value
        let late = through.load(ordering: .acquiring)
        #expect(late)
        // Under the limit, or once the connection closed, there is no wait.
        await gate.waitForRoom()
        gate.hold(1000)
        gate.close()
        await gate.waitForRoom()
    }

    /// Asset frames skip the node's async writer (``NetworkNode/write(_:around:)``): they reach the
    /// socket side in order, flushed, on the channel's loop, and pass the yield handler as
    /// frames written through the writer do — held while the channel is not writable, overtaken by
    /// any other frame.
    @Test func assetFramesWrittenAroundTheWriterKeepTheirOrderAndAreFlushed() throws {
        let gate = ChunkGate(limit: 10_000)
        let channel = EmbeddedChannel(handlers: [ChunkYieldHandler(gate: gate)])
        let request = Frame(type: .assetRequest, payload: [7, 7, 7])
        NetworkNode.write([Self.chunk(1), request, Self.chunk(2)], around: channel)
        #expect(try Self.writtenNow(channel).isEmpty, "nothing is written outside the channel's loop")
        // The request is not a chunk: it passes at once, and the chunks follow in their turns.
        #expect(try Self.written(channel) == [request, Self.chunk(1), Self.chunk(2)])

        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        NetworkNode.write([Self.chunk(3), Self.chunk(4)], around: channel)
        #expect(try Self.written(channel).isEmpty)
        Self.send(Self.record(5), on: channel)
        #expect(
            try Self.written(channel) == [Self.record(5)], "a record frame overtakes chunks written around the writer")
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try Self.written(channel) == [Self.chunk(3), Self.chunk(4)])
        _ = try channel.finish()
    }
}
