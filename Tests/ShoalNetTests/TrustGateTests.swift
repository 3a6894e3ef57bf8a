// TrustGateTests: what a peer sends before the node has decided to trust it is held, and past the
// held limit the connection is read no more, until the node opens it: nothing is lost or cut off.

import NIOCore
import NIOEmbedded
import Testing
@testable import ShoalNet

@Suite struct TrustGateTests {
    /// Counts the reads that get past the gate towards the socket.
    final class Reads: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var count = 0
        func read(context: ChannelHandlerContext) {
            count += 1
            context.read()
        }
    }

    /// A trusted peer that sends 2 MiB right after its hello, before the node has admitted it,
    /// is slowed, not closed: reading stops at the limit, and every byte arrives once the gate
    /// opens.
    @Test func bytesPastTheLimitStopReadingUntilTheGateOpens() throws {
        let channel = EmbeddedChannel()
        let reads = Reads()
        let gate = TrustGate(handshake: channel.eventLoop.makePromise())
        try channel.pipeline.syncOperations.addHandler(reads)
        try channel.pipeline.syncOperations.addHandler(gate)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let piece = ByteBuffer(repeating: 0xAB, count: 64 << 10)
        let pieces = 2 * TrustGate.heldLimit / piece.readableBytes
        for _ in 0..<pieces { try channel.writeInbound(piece) }
        #expect(channel.isActive, "the connection stays open")
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil, "nothing passes before the gate opens")

        channel.read()
        #expect(reads.count == 0, "past the limit, no read reaches the socket")
        gate.open()
        #expect(reads.count == 1, "the read asked for meanwhile goes once the gate opens")
        var received = 0
        while let b = try channel.readInbound(as: ByteBuffer.self) { received += b.readableBytes }
        #expect(received == pieces * piece.readableBytes, "every byte held is passed on")
        channel.read()
        #expect(reads.count == 2, "an open gate lets every read through")
        _ = try? channel.finish()
        gate.handshake.fail(TrustGate.Refused(description: "test over"))
    }

    /// Below the limit reads go on, so a hello and what follows it are read while the node decides.
    @Test func belowTheLimitReadsGoOn() throws {
        let channel = EmbeddedChannel()
        let reads = Reads()
        let gate = TrustGate(handshake: channel.eventLoop.makePromise())
        try channel.pipeline.syncOperations.addHandler(reads)
        try channel.pipeline.syncOperations.addHandler(gate)
        try channel.writeInbound(ByteBuffer(repeating: 1, count: 1_000))
        channel.read()
        #expect(reads.count == 1)
        _ = try? channel.finish()
        gate.handshake.fail(TrustGate.Refused(description: "test over"))
    }
}
