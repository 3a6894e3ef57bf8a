// KeepaliveHandlerTests: pings when quiet, a goodbye and a close when the peer is silent, and the time of each frame received.

import Foundation
import NIOCore
import NIOEmbedded
import Testing
import ShoalWire
@testable import ShoalNet

/// ``KeepaliveHandler`` on an embedded channel, driven by the events NIO's IdleStateHandler fires
/// (Spec/replication.md §2.1). The close below TLS is measured end to end (`DeadLinkTests`).
@Suite struct KeepaliveHandlerTests {
    @Test func eachFrameReceivedIsStampedAndPassedOn() throws {
        let handler = KeepaliveHandler()
        let channel = EmbeddedChannel(handler: handler)
        #expect(handler.received.last == nil)
        let before = Date().addingTimeInterval(-0.01)
        try channel.writeInbound(Frame(type: .ping, payload: PingMessage(nonce: 7).encoded()))
        let first = try #require(handler.received.last)
        #expect(first >= before && first <= Date().addingTimeInterval(0.01), "\(first)")
        #expect(try channel.readInbound(as: Frame.self)?.type == .ping)
        Thread.sleep(forTimeInterval: 0.02)
        try channel.writeInbound(Frame(type: .pong, payload: PingMessage(nonce: 7).encoded()))
        #expect(try #require(handler.received.last) > first, "the stamp moves forward with each frame")
        _ = try channel.finish()
    }

    @Test func aQuietConnectionPingsWithANewNonceEachTime() throws {
        let channel = try Self.connected()
        var nonces = [UInt64]()
        for _ in 0..<2 {
            channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.write)
            let frame = try #require(try channel.readOutbound(as: Frame.self))
            #expect(frame.type == .ping)
            nonces.append(try PingMessage(decoding: frame.payload).nonce)
        }
        #expect(nonces == [1, 2])
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    @Test func aSilentPeerGetsAGoodbyeAndItsConnectionCloses() throws {
        let channel = try Self.connected()
        #expect(channel.isActive)
        channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.read)
        let frame = try #require(try channel.readOutbound(as: Frame.self))
        #expect(frame.type == .goodbye)
        #expect(try GoodbyeMessage(decoding: frame.payload).reason.contains("idle timeout"))
        #expect(!channel.isActive, "closed at once")
    }

    /// An embedded channel with a keepalive handler, connected (active), its hello written.
    static func connected() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: KeepaliveHandler())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
        try channel.writeOutbound(KeepaliveProbeTests.hello)
        #expect(try channel.readOutbound(as: Frame.self)?.type == .hello)
        return channel
    }
}
