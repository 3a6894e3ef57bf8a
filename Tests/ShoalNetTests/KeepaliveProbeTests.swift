// KeepaliveProbeTests: a probe pings the peer at once and is answered by the next frame, or not within its bound.

import Foundation
import NIOCore
import NIOEmbedded
import Testing
import ShoalWire
@testable import ShoalNet

/// `KeepaliveHandler.probe(within:on:)`, which discovery uses before it believes that a
/// connected device moved (Spec/discovery.md §4.1), on an embedded channel with a manual clock.
@Suite struct KeepaliveProbeTests {
    /// Where a probe's answer lands (the embedded loop runs on the test's own thread).
    final class Answer: @unchecked Sendable {
        var value: Bool?
    }

    static func channel() throws -> (EmbeddedChannel, KeepaliveHandler) {
        let handler = KeepaliveHandler()
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
        try channel.writeOutbound(Self.hello)
        #expect(try channel.readOutbound(as: Frame.self)?.type == .hello)
        return (channel, handler)
    }

    static let hello = Frame(type: .hello, payload: HelloMessage(node: NodeID(high: 7, low: 9), zones: []).encoded())

    /// A connection still opening — the node's hello not yet written — is sent no ping: the
    /// hello is the first frame, and a peer closes a connection that starts with a ping. The
    /// probe's ping follows the hello, and any frame answers it.
    @Test func noPingBeforeThisNodesHello() throws {
        let handler = KeepaliveHandler()
        let channel = EmbeddedChannel(handler: handler)
        defer { _ = try? channel.finish() }
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
        let answer = Answer()
        handler.probe(within: .seconds(2), on: channel.eventLoop).whenSuccess { answer.value = $0 }
        channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.write)
        #expect(try channel.readOutbound(as: Frame.self) == nil, "nothing precedes the hello")
        try channel.writeOutbound(Self.hello)
        #expect(try channel.readOutbound(as: Frame.self)?.type == .hello, "the hello is the first frame")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(20))
        #expect(try channel.readOutbound(as: Frame.self)?.type == .ping, "the probe's ping follows the hello")
        #expect(answer.value == nil)
        try channel.writeInbound(Self.hello)
        #expect(answer.value == true, "any frame answers the probe, the peer's hello too")
        _ = handler.probe(within: .seconds(2), on: channel.eventLoop)
        #expect(try channel.readOutbound(as: Frame.self)?.type == .ping, "after the hello, a probe pings")
        channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.write)
        #expect(try channel.readOutbound(as: Frame.self)?.type == .ping, "and so does a quiet connection")
    }

    /// Stands for the outbox: frames written from here reach the encoder without passing the
    /// keepalive handler, as the node's hello does on a real connection.
    final class Outbox: ChannelOutboundHandler {
        typealias OutboundIn = Frame
        typealias OutboundOut = Frame
    }

    /// On the connection's real pipeline the hello goes out through the outbox, below the
    /// keepalive handler: the encoder tells it, and pings follow the hello, never precede it.
    @Test func aHelloSentThroughTheOutboxLetsPingsFollow() throws {
        let hellos = HelloCompression()
        let handler = KeepaliveHandler(hellos: hellos)
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        let ops = channel.pipeline.syncOperations
        try ops.addHandler(
            FrameEncodingHandler(
                options: FrameEncoder.Options(), stream: false, traffic: TrafficCounter(), peer: hellos))
        let outbox = Outbox()
        try ops.addHandler(outbox)
        try ops.addHandler(handler)
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
        _ = handler.probe(within: .seconds(2), on: channel.eventLoop)
        channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.write)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "no ping before the hello")
        try ops.context(handler: outbox).writeAndFlush(NIOAny(Self.hello), promise: nil)
        #expect(try channel.readOutbound(as: ByteBuffer.self) != nil, "the hello")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(20))
        #expect(try channel.readOutbound(as: ByteBuffer.self) != nil, "the first probe's ping, once the hello went out")
        _ = handler.probe(within: .seconds(2), on: channel.eventLoop)
        #expect(try channel.readOutbound(as: ByteBuffer.self) != nil, "a probe's ping follows the hello")
        channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.write)
        #expect(try channel.readOutbound(as: ByteBuffer.self) != nil, "and so does a quiet connection's")
    }

    @Test func anyFrameWithinTheBoundAnswersAProbe() throws {
        let (channel, handler) = try Self.channel()
        defer { _ = try? channel.finish() }
        let answer = handler.probe(within: .seconds(2), on: channel.eventLoop)
        #expect(try channel.readOutbound(as: Frame.self)?.type == .ping, "the ping leaves at once")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        let result = Answer()
        answer.whenSuccess { result.value = $0 }
        #expect(result.value == nil, "no frame yet: still waiting")
        try channel.writeInbound(Frame(type: .pong, payload: PingMessage(nonce: 1).encoded()))
        #expect(result.value == true)
        #expect(try channel.readInbound(as: Frame.self)?.type == .pong, "the frame goes on to the node")
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(result.value == true, "the timer that fires later changes nothing")
    }

    @Test func silenceOrACloseFailsAProbe() throws {
        let (channel, handler) = try Self.channel()
        let silent = Answer()
        handler.probe(within: .seconds(2), on: channel.eventLoop).whenSuccess { silent.value = $0 }
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_999))
        #expect(silent.value == nil)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(silent.value == false, "nothing within the bound")
        // A frame after the bound answers nothing any more.
        try channel.writeInbound(Frame(type: .pong, payload: PingMessage(nonce: 1).encoded()))
        #expect(silent.value == false)

        let closed = Answer()
        handler.probe(within: .seconds(2), on: channel.eventLoop).whenSuccess { closed.value = $0 }
        _ = try channel.finish()
        #expect(closed.value == false, "the connection closed before an answer")
        let after = Answer()
        handler.probe(within: .seconds(2), on: channel.eventLoop).whenSuccess { after.value = $0 }
        #expect(after.value == false, "a closed connection answers no probe")
    }
}
