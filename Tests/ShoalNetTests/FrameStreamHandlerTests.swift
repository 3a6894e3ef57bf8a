// FrameStreamHandlerTests: the frame handlers negotiate compression 3 through the two hellos —
// announced in ours, used only towards a peer that announced it, read only after ours said so.

import NIOCore
import NIOEmbedded
import Testing
import ShoalSamples
import ShoalWire
@testable import ShoalNet

@Suite struct FrameStreamHandlerTests {
    static let text = FrameCodecHandlerTests.text

    /// A connection's two frame handlers, the encoder streaming when `stream`.
    static func pipeline(stream: Bool = true, traffic: TrafficCounter = TrafficCounter()) throws -> EmbeddedChannel {
        let peer = HelloCompression()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            FrameEncodingHandler(options: FrameEncoder.Options(), stream: stream, traffic: traffic, peer: peer))
        try channel.pipeline.syncOperations.addHandler(
            FrameDecodingHandler(limits: .default, traffic: traffic, peer: peer))
        return channel
    }

    static func hello(capabilities: UInt64) -> Frame {
        Frame(
            type: .hello,
            payload: HelloMessage(node: NodeID(high: 7, low: 9), capabilities: capabilities, zones: []).encoded())
    }

    /// Writes `frames` and returns the bytes that went out.
    static func written(_ frames: [Frame], on channel: EmbeddedChannel) throws -> [UInt8] {
        var out = [UInt8]()
        for f in frames {
            try channel.writeOutbound(f)
            while let b = try channel.readOutbound(as: ByteBuffer.self) { out += Array(b.readableBytesView) }
        }
        return out
    }

    @Test(arguments: [true, false])
    func ourHelloAnnouncesTheStreamWhenEnabled(stream: Bool) throws {
        let channel = try Self.pipeline(stream: stream)
        let bytes = try Self.written([Self.hello(capabilities: 1)], on: channel)
        let hello = try HelloMessage(decoding: try FrameReader.decodeOne(bytes).payload)
        #expect(hello.capabilities == (stream ? 1 | HelloMessage.streamCompressionCapability : 1))
        _ = try channel.finish()
    }

    @Test(arguments: [(HelloMessage.streamCompressionCapability, true), (0, false)])
    func theStreamOnlyTowardsAPeerThatAnnouncedIt(capabilities: UInt64, streams: Bool) throws {
        let channel = try Self.pipeline()
        var reader = FrameReader(acceptsStreamCompression: true)
        _ = try reader.frames(in: try Self.written([Self.hello(capabilities: 0)], on: channel))
        // Before the peer's hello: no stream, no dictionary.
        #expect(
            try reader.frames(in: try Self.written([Frame(type: .changes, payload: Self.text)], on: channel)).map(
                \.compression) == [.zstd])
        let peerHello = try FrameEncoder(options: .init(mode: .none)).encode(Self.hello(capabilities: capabilities))
        try channel.writeInbound(ByteBuffer(bytes: peerHello))
        #expect(try channel.readInbound(as: Frame.self)?.type == .hello)
        let frames = [
            Frame(type: .changes, payload: Self.text),
            Frame(type: .acknowledgement, payload: Array(Self.text.prefix(40))),
            Frame(type: .assetChunk, payload: Self.text, mayCompress: false), Frame(type: .changes, payload: Self.text)
        ]
        let back = try reader.frames(in: try Self.written(frames, on: channel))
        #expect(back.map(\.payload) == frames.map(\.payload))
        let expected: [Frame.Compression] =
            streams
            ? [.stream, .stream, .none, .stream]
            : [
                .dictionary(id: BuiltInDictionaries.recordsID), .none, .none,
                .dictionary(id: BuiltInDictionaries.recordsID)
            ]
        #expect(back.map(\.compression) == expected)
        _ = try channel.finish()
    }

    /// Compression 3 from a peer is read once this node's hello announced it; before, it is
    /// refused like any reserved value, with an error frame and the connection closed.
    @Test(arguments: [true, false])
    func aPeersStreamIsReadOnlyAfterOurHelloAnnouncedIt(announced: Bool) throws {
        let traffic = TrafficCounter()
        let channel = try Self.pipeline(stream: true, traffic: traffic)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
        if announced { _ = try Self.written([Self.hello(capabilities: 0)], on: channel) }
        let peer = FrameEncoder(streamingWith: FrameEncoder.Options())
        try channel.writeInbound(ByteBuffer(bytes: try peer.encode(.changes, payload: Self.text)))
        var sent = [UInt8]()
        while let b = try channel.readOutbound(as: ByteBuffer.self) { sent += Array(b.readableBytesView) }
        if announced { try channel.writeInbound(ByteBuffer(bytes: try peer.encode(.changes, payload: Self.text))) }
        if announced {
            #expect(try channel.readInbound(as: Frame.self)?.payload == Self.text)
            #expect(try channel.readInbound(as: Frame.self)?.payload == Self.text)
            #expect(traffic.streamFramesReceived == 2)
            #expect(channel.isActive)
        } else {
            #expect(try channel.readInbound(as: Frame.self) == nil)
            var reader = FrameReader()
            let error = try ErrorMessage(decoding: try #require(try reader.frames(in: sent).last).payload)
            #expect(
                error.code == "invalidArguments" && error.message.contains("unknown_required_tag"), "\(error.message)")
            #expect(!channel.isActive)
        }
        _ = try? channel.finish()
    }
}
