// FrameCodecHandlerTests: the encoding handler writes exactly the bytes FrameEncoder does — plain,
// compressed with the records dictionary, empty and chunk-sized frames — and they read back.

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
            Frame(type: .goodbye, payload: []),
        ]
        let traffic = TrafficCounter()
        let channel = EmbeddedChannel(handler: FrameEncodingHandler(options: FrameEncoder.Options(), traffic: traffic))
        let encoder = FrameEncoder()
        var expected = [UInt8]()
        for f in frames {
            try channel.writeOutbound(f)
            let buffer = try #require(try channel.readOutbound(as: ByteBuffer.self))
            let bytes = try encoder.encode(f)
            #expect(Array(buffer.readableBytesView) == bytes, "frame of type \(f.type.rawValue), \(f.payload.count) bytes")
            expected += bytes
        }
        #expect(traffic.bytesSent == expected.count)
        var reader = FrameReader()
        let back = try reader.frames(in: expected)
        #expect(back.map(\.payload) == frames.map(\.payload))
        #expect(back[1].compression != .none, "the text went out compressed")
        _ = try channel.finish()
    }
}
