// AssetFrameRouterTests: a connection's asset frames go from its event loop straight to their
// lanes once the node has named the connection, other frames pass on, and a connection over its
// queue's limit stops reading until the lane takes.

import NIOCore
import NIOEmbedded
import Testing
import ShoalSync
import ShoalWire
@testable import ShoalNet

@Suite struct AssetFrameRouterTests {
    static func chunk(_ bytes: Int) -> Frame {
        Frame(type: .assetChunk, payload: [UInt8](repeating: 0xCD, count: bytes))
    }
    static let request = Frame(type: .assetRequest, payload: [1, 2, 3])
    static let ping = Frame(type: .ping, payload: PingMessage(nonce: 9).encoded())

    /// Counts the reads that get past the router towards the socket.
    final class Reads: ChannelOutboundHandler {
        typealias OutboundIn = Frame
        var count = 0
        func read(context: ChannelHandlerContext) {
            count += 1
            context.read()
        }
    }

    /// A channel with the reads counter, the router and nothing else; its inbound frames are what
    /// the node's reader would get. The connection is named `id` unless it is nil.
    struct Rig {
        let channel = EmbeddedChannel()
        let reads = Reads()
        let requests = AssetFrameQueue()
        let chunks: AssetFrameQueue
        let router: AssetFrameRouter

        init(chunkLimit: Int = NetworkConfiguration().assetQueueBytes, named id: ConnectionID?) throws {
            chunks = AssetFrameQueue(limit: chunkLimit)
            router = AssetFrameRouter(requests: requests, chunks: chunks)
            try channel.pipeline.syncOperations.addHandler(reads)
            try channel.pipeline.syncOperations.addHandler(router)
            router.binding.connection = id
        }
    }

    static func passedOn(_ channel: EmbeddedChannel) throws -> [FrameType] {
        var out = [FrameType]()
        while let f = try channel.readInbound(as: Frame.self) { out.append(f.type) }
        return out
    }

    @Test func assetFramesGoToTheirLanesOnceTheConnectionIsNamed() async throws {
        let rig = try Rig(named: nil)
        let channel = rig.channel
        // Not named yet: everything passes on, for the reader to route.
        try channel.writeInbound(Self.chunk(100))
        #expect(try Self.passedOn(channel) == [.assetChunk])
        let id = ConnectionID(rawValue: 7)
        rig.router.binding.connection = id
        try channel.writeInbound(Self.chunk(2_000))
        try channel.writeInbound(Self.ping)
        try channel.writeInbound(Self.request)
        try channel.writeInbound(Self.chunk(3_000))
        #expect(try Self.passedOn(channel) == [.ping], "only the record-path frame reaches the reader")
        #expect(rig.chunks.queuedBytes(of: id) == 5_000)
        #expect(rig.requests.queuedBytes(of: id) == AssetFrameQueue.minimumFrameCost)
        let taken = await rig.chunks.take()
        #expect(taken?.map(\.frame.payload.count) == [2_000, 3_000])
        #expect(taken?.allSatisfy { $0.connection == id } == true)
        #expect(await rig.requests.take()?.map(\.frame.type) == [.assetRequest])
        _ = try channel.finish()
    }

    @Test func aConnectionOverItsLimitStopsReadingUntilTheLaneTakes() async throws {
        let rig = try Rig(chunkLimit: 5_000, named: ConnectionID(rawValue: 3))
        let (channel, reads) = (rig.channel, rig.reads)
        channel.read()
        #expect(reads.count == 1, "under the limit, reads go through")
        for _ in 0..<3 { try channel.writeInbound(Self.chunk(2_000)) }  // 6,000 > 5,000
        channel.read()
        channel.read()
        #expect(reads.count == 1, "over the limit, reads are held")
        // Record frames already read still pass on.
        try channel.writeInbound(Self.ping)
        #expect(try Self.passedOn(channel) == [.ping])
        #expect(await rig.chunks.take()?.count == 3)
        channel.embeddedEventLoop.run()
        #expect(reads.count == 2, "once the lane has taken, one held read goes ahead")
        channel.read()
        #expect(reads.count == 3)
        _ = try channel.finish()
    }

    @Test func closingTheConnectionLetsItsReaderGo() async throws {
        let id = ConnectionID(rawValue: 4)
        let rig = try Rig(chunkLimit: 1_000, named: id)
        try rig.channel.writeInbound(Self.chunk(2_000))
        rig.channel.read()
        #expect(rig.reads.count == 0)
        // A reader task blocked on the same connection (frames before the naming) goes on too.
        let chunks = rig.chunks
        let pushed = Task { await chunks.push(Self.chunk(10), from: id) }
        try await Task.sleep(for: .milliseconds(20))
        _ = try rig.channel.finish()
        await pushed.value
        #expect(
            chunks.queuedBytes(of: id) == 2_000 + AssetFrameQueue.minimumFrameCost,
            "the frames stay queued for the lane")
    }
}
