// OutboxTests: record frames wait in order while the channel is not writable and go before held
// chunks; the peer's requests wait while too much is queued and reach the engine one at a time;
// a connection unwritable past the timeout is closed.

import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing
import ShoalWire
@testable import ShoalNet

@Suite struct OutboxTests {
    static func record(_ n: UInt64) -> Frame { Frame(type: .ping, payload: PingMessage(nonce: n).encoded()) }
    static func chunk(_ n: UInt8) -> Frame { Frame(type: .assetChunk, payload: [UInt8](repeating: n, count: 1000)) }
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A connection's outbound handlers on an embedded channel, and the gate the node would use.
    static func connection(limit: Int = 10_000, timeout: TimeAmount = .seconds(60)) throws -> (
        EmbeddedChannel, OutboundGate
    ) {
        let outbox = Outbox(limit: limit)
        let handler = OutboxHandler(outbox: outbox, unwritableTimeout: timeout, logger: quiet)
        let chunks = ChunkGate()
        let channel = EmbeddedChannel(handlers: [handler, ChunkYieldHandler(gate: chunks)])
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
        return (
            channel,
            OutboundGate(chunks: chunks, records: outbox, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
        )
    }

    static func written(_ channel: EmbeddedChannel) throws -> [Frame] {
        channel.embeddedEventLoop.run()
        var out = [Frame]()
        while let f = try channel.readOutbound(as: Frame.self) { out.append(f) }
        return out
    }

    static func setWritable(_ writable: Bool, _ channel: EmbeddedChannel) {
        channel.isWritable = writable
        channel.pipeline.fireChannelWritabilityChanged()
    }

    @Test func recordFramesWaitInOrderWhileTheChannelIsNotWritableAndGoBeforeHeldChunks() throws {
        let (channel, gate) = try Self.connection()
        gate.send([Self.record(1), Self.record(2)], thenClose: false)
        #expect(try Self.written(channel) == [Self.record(1), Self.record(2)])
        #expect(gate.records.queuedBytes == 0)

        Self.setWritable(false, channel)
        gate.send([Self.record(3)], thenClose: false)
        channel.write(Self.chunk(1), promise: nil)
        channel.flush()
        gate.send([Self.record(4)], thenClose: false)
        #expect(try Self.written(channel).isEmpty, "nothing passes while the channel is not writable")
        #expect(gate.records.queuedBytes == Self.record(3).heldCost + Self.record(4).heldCost)

        Self.setWritable(true, channel)
        #expect(
            try Self.written(channel) == [Self.record(3), Self.record(4), Self.chunk(1)],
            "records in order, then the chunk")
        #expect(gate.records.queuedBytes == 0)
        _ = try channel.finish()
    }

    @Test func aCloseWaitsForTheFramesBeforeItAndNothingAfterItGoes() throws {
        let (channel, gate) = try Self.connection()
        Self.setWritable(false, channel)
        gate.send([Self.record(1)], thenClose: true)
        gate.send([Self.record(2)], thenClose: false)
        channel.embeddedEventLoop.run()
        #expect(channel.isActive, "the close waits for the frame before it")
        Self.setWritable(true, channel)
        #expect(try Self.written(channel) == [Self.record(1)])
        #expect(!channel.isActive)
        #expect(gate.records.queuedBytes == 0, "the frame after the close is dropped and uncounted")
    }

    @Test func aConnectionUnwritablePastTheTimeoutIsClosed() throws {
        let (channel, gate) = try Self.connection(timeout: .seconds(1))
        gate.send([Self.record(1)], thenClose: false)
        _ = try Self.written(channel)
        Self.setWritable(false, channel)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(900))
        // Writable for a moment: a slow peer that reads starts the clock again.
        Self.setWritable(true, channel)
        Self.setWritable(false, channel)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(900))
        #expect(channel.isActive)
        gate.send([Self.record(2)], thenClose: false)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "unwritable for a whole second")
        #expect(gate.records.queuedBytes == 0, "what it held is dropped and uncounted")
    }

    @Test func requestsWaitWhileTooMuchIsQueuedAndReachTheEngineOneAtATime() {
        let outbox = Outbox(limit: 100)
        let delivered = Mutex<[UInt64]>([])
        outbox.start { f in
            if let m = try? PingMessage(decoding: f.payload) { delivered.withLock { $0.append(m.nonce) } }
        }
        #expect(outbox.offer(Self.record(1)))
        #expect(outbox.offer(Self.record(2)))
        #expect(delivered.withLock { $0 } == [1], "the second waits until the first is handled")
        outbox.add(500)
        outbox.handled()
        #expect(delivered.withLock { $0 } == [1], "over the limit, nothing more goes")
        #expect(outbox.offer(Self.record(3)))
        outbox.remove(450)
        #expect(delivered.withLock { $0 } == [1, 2], "under the limit again: the oldest, and only it")
        outbox.handled()
        #expect(delivered.withLock { $0 } == [1, 2, 3])
        outbox.handled()
        #expect(outbox.parkedCount == 0)
    }

    @Test func heldRequestsPastTheirLimitStopTheReaderUntilHandled() async {
        let outbox = Outbox(limit: 0, parkingLimit: 3 * Self.record(0).heldCost)
        outbox.start { _ in }
        outbox.add(1)  // over the limit: everything waits
        #expect(outbox.offer(Self.record(1)) && outbox.offer(Self.record(2)) && outbox.offer(Self.record(3)))
        #expect(!outbox.offer(Self.record(4)), "the fourth is past the parking limit")
        let resumed = Task { await outbox.waitForParkingRoom() }
        outbox.remove(1)  // room: one goes to the engine, and the reader may go on
        await resumed.value
        #expect(outbox.parkedCount == 3)
        outbox.close()
        #expect(outbox.parkedCount == 0)
    }
}
