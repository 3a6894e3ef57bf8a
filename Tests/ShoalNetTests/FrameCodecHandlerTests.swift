// FrameCodecHandlerTests: the encoding handler writes exactly the bytes FrameEncoder does — plain,
// compressed with the records dictionary, empty and chunk-sized frames — and they read back; it
// uses the dictionary only once the peer's hello has listed it.

import NIOCore
import NIOEmbedded
import Testing
import ShoalSamples
import ShoalWire
@testable import ShoalNet

@Suite struct FrameCodecHandlerTests {
    @Test func theHandlerWritesWhatTheEncoderDoes() throws {
        var rng = SplitMix64(seed: 0xF4A3E)
        let random = (0..<90_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let text = Array(String(repeating: "a note about groceries for sunday, ", count: 40).utf8)
        let frames = [
            Frame(type: .ping, payload: PingMessage(nonce: 1).encoded()),
            Frame(type: .changes, payload: text),  // compresses
            Frame(type: .changes, payload: text, mayCompress: false),
            Frame(type: .assetChunk, payload: random, mayCompress: false),
            Frame(type: .assetChunk, payload: random),  // tried, does not pay
            Frame(type: .goodbye, payload: [])
        ]
        let traffic = TrafficCounter()
        let peer = HelloCompression()
        peer.held = [BuiltInDictionaries.recordsID]
        let channel = EmbeddedChannel(
            handler: FrameEncodingHandler(options: FrameEncoder.Options(), traffic: traffic, peer: peer))
        let encoder = FrameEncoder()
        var expected = [UInt8]()
        for f in frames {
            try channel.writeOutbound(f)
            let buffer = try #require(try channel.readOutbound(as: ByteBuffer.self))
            let bytes = try encoder.encode(f)
            #expect(
                Array(buffer.readableBytesView) == bytes, "frame of type \(f.type.rawValue), \(f.payload.count) bytes")
            expected += bytes
        }
        #expect(traffic.bytesSent == expected.count)
        var reader = FrameReader()
        let back = try reader.frames(in: expected)
        #expect(back.map(\.payload) == frames.map(\.payload))
        #expect(
            back[1].compression == .dictionary(id: BuiltInDictionaries.recordsID),
            "the text went out compressed with the dictionary")
        _ = try channel.finish()
    }

    static let text = Array(String(repeating: "a note about groceries for sunday, ", count: 40).utf8)

    /// A connection's two frame handlers, sharing what the peer's hello said.
    static func pipeline() throws -> EmbeddedChannel {
        let traffic = TrafficCounter()
        let peer = HelloCompression()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            FrameEncodingHandler(options: FrameEncoder.Options(), traffic: traffic, peer: peer))
        try channel.pipeline.syncOperations.addHandler(
            FrameDecodingHandler(limits: .default, traffic: traffic, peer: peer))
        return channel
    }

    /// Writes `frame` and reads back how it was compressed.
    static func compression(of frame: Frame, on channel: EmbeddedChannel) throws -> Frame.Compression? {
        try channel.writeOutbound(frame)
        let buffer = try #require(try channel.readOutbound(as: ByteBuffer.self))
        var reader = FrameReader()
        return try reader.frames(in: Array(buffer.readableBytesView)).first?.compression
    }

    /// The peer's hello, as the bytes of a plain frame.
    static func hello(dictionaries: [UInt32]) -> ByteBuffer {
        let payload = HelloMessage(node: NodeID(high: 7, low: 9), dictionaries: dictionaries, zones: []).encoded()
        let bytes = (try? FrameEncoder(options: .init(mode: .none)).encode(Frame(type: .hello, payload: payload))) ?? []
        return ByteBuffer(bytes: bytes)
    }

    /// A decoding handler alone, with a short frame deadline.
    static func reader(timeout: TimeAmount) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            FrameDecodingHandler(limits: .default, traffic: TrafficCounter(), frameTimeout: timeout))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
        #expect(channel.isActive)
        return channel
    }

    static func plainFrame(_ payload: [UInt8]) -> [UInt8] {
        (try? FrameEncoder(options: .init(mode: .none)).encode(Frame(type: .changes, payload: payload))) ?? []
    }

    @Test func aFrameTrickledPastItsDeadlineClosesTheConnection() throws {
        let channel = try Self.reader(timeout: .seconds(5))
        let frame = Self.plainFrame(Self.text)
        // A byte every second keeps the connection busy, but the frame is not whole in 5 s.
        for i in 0..<6 {
            try channel.writeInbound(ByteBuffer(bytes: frame[i..<(i + 1)]))
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        let sent = try #require(try channel.readOutbound(as: Frame.self), "an error frame before closing")
        #expect(sent.type == .error)
        let error = try ErrorMessage(decoding: sent.payload)
        #expect(error.code == "limitExceeded" && error.message.contains("frameCompletionTimeout"), "\(error.message)")
        #expect(!channel.isActive, "the connection is closed")
    }

    @Test func framesThatCompleteInTimeNeverTripTheDeadline() throws {
        let channel = try Self.reader(timeout: .seconds(5))
        // Ten frames, each whole within 4 s, 40 s in all; between frames nothing is pending.
        for _ in 0..<10 {
            let frame = Self.plainFrame(Self.text)
            let half = frame.count / 2
            try channel.writeInbound(ByteBuffer(bytes: frame[..<half]))
            channel.embeddedEventLoop.advanceTime(by: .seconds(4))
            try channel.writeInbound(ByteBuffer(bytes: frame[half...]))
            #expect(try channel.readInbound(as: Frame.self)?.payload == Self.text)
            channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        }
        #expect(try channel.readOutbound(as: Frame.self) == nil, "no error frame")
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    /// A frame over the limit is not dropped while the stream goes on: the write fails and the
    /// connection closes, so the peer is not left waiting for a frame that never comes.
    @Test func aFrameThatCannotBeEncodedClosesTheConnection() throws {
        var options = FrameEncoder.Options()
        options.limits.maxFramePayloadBytes = 1_000
        let channel = EmbeddedChannel(handler: FrameEncodingHandler(options: options, traffic: TrafficCounter()))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.write(Frame(type: .changes, payload: [UInt8](repeating: 1, count: 2_000)), promise: promise)
        #expect(throws: (any Error).self) { try promise.futureResult.wait() }
        #expect(throws: (any Error).self) { try channel.throwIfErrorCaught() }
        #expect(!channel.isActive, "the connection is closed")
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing was written")
    }

    @Test func noDictionaryBeforeThePeersHello() throws {
        let channel = try Self.pipeline()
        // Our own hello goes out before the peer's arrives: the peer may not hold the dictionary.
        #expect(try Self.compression(of: Frame(type: .changes, payload: Self.text), on: channel) == .zstd)
        _ = try channel.finish()
    }

    @Test func theDictionaryOnlyForAPeerThatListsIt() throws {
        for (listed, expected) in [
            ([UInt32](), Frame.Compression.zstd),
            ([12_345], .zstd),
            ([BuiltInDictionaries.recordsID], .dictionary(id: BuiltInDictionaries.recordsID))
        ] {
            let channel = try Self.pipeline()
            try channel.writeInbound(Self.hello(dictionaries: listed))
            let hello = try #require(try channel.readInbound(as: Frame.self))
            #expect(hello.type == .hello, "the hello is passed on to the session")
            #expect(
                try Self.compression(of: Frame(type: .changes, payload: Self.text), on: channel) == expected,
                "peer holds \(listed)")
            _ = try channel.finish()
        }
    }
}
