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
        return (channel, handler)
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
