// FrameCodecHandlers: NIO handlers that turn bytes into frames and frames into bytes.

import NIOCore
import ShoalWire
import Synchronization

/// Bytes a node moved over its sockets, as they travelled (compressed, with frame overhead).
public final class TrafficCounter: Sendable {
    let received = Atomic<Int>(0)
    let sent = Atomic<Int>(0)
    let pausedNanoseconds = Atomic<Int>(0)
    let pauses = Atomic<Int>(0)

    /// Creates zeroed counters.
    public init() {}

    /// Bytes read from peers so far.
    public var bytesReceived: Int { received.load(ordering: .relaxed) }
    /// Bytes written to peers so far.
    public var bytesSent: Int { sent.load(ordering: .relaxed) }
    /// Times the asset lanes waited to keep to ``NetworkConfiguration/assetReceiveRate`` or
    /// ``NetworkConfiguration/assetSendRate``.
    public var assetPauses: Int { pauses.load(ordering: .relaxed) }
    /// The time those waits asked for, in total.
    public var assetPausedTime: Duration { .nanoseconds(pausedNanoseconds.load(ordering: .relaxed)) }

    func assetPaused(_ wait: Duration) {
        let (seconds, attoseconds) = wait.components
        // A wait is at most a frame's bytes at 1 byte/s (RatePacer caps it far below Int.max ns).
        let nanoseconds = Int(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000)
        pausedNanoseconds.add(nanoseconds.overflow ? Int.max / 4 : nanoseconds.partialValue &+ Int(attoseconds / 1_000_000_000), ordering: .relaxed)
        pauses.add(1, ordering: .relaxed)
    }
}

/// Reads frames from a connection's bytes with ``FrameReader``: any split, at most one frame
/// buffered. A malformed frame sends an error frame and closes the connection; the node and its
/// data are untouched (DESIGN.md invariant 6).
final class FrameDecodingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = Frame
    typealias OutboundOut = Frame

    private var reader: FrameReader
    private var failed = false
    private let traffic: TrafficCounter

    init(limits: WireLimits, traffic: TrafficCounter) {
        reader = FrameReader(limits: limits)
        self.traffic = traffic
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let buffer = unwrapInboundIn(data)
        traffic.received.add(buffer.readableBytes, ordering: .relaxed)
        var frames = [Frame]()
        var failure: WireError? = nil
        buffer.withUnsafeReadableBytes { raw in
            var input = raw
            do throws(WireError) {
                while let f = try reader.next(from: &input) { frames.append(f) }
            } catch { failure = error }
        }
        for f in frames { context.fireChannelRead(wrapInboundOut(f)) }
        if let failure {
            failed = true
            let message = ErrorMessage(code: "invalidArguments", message: "malformed frame: \(failure)")
            context.writeAndFlush(wrapOutboundOut(Frame(type: .error, payload: message.encoded())), promise: nil)
            context.close(promise: nil)
        }
    }
}

/// Writes frames with ``FrameEncoder`` (compressing with the built-in dictionary when it pays).
final class FrameEncodingHandler: ChannelOutboundHandler {
    typealias OutboundIn = Frame
    typealias OutboundOut = ByteBuffer

    private let encoder: FrameEncoder
    private let traffic: TrafficCounter

    init(options: FrameEncoder.Options, traffic: TrafficCounter) {
        encoder = FrameEncoder(options: options)
        self.traffic = traffic
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        do throws(WireError) {
            // Straight into the socket's buffer: a chunk frame's 64–256 KiB are copied once here.
            let allocator = context.channel.allocator
            let buffer = try encoder.encode(frame) { size, write in
                var buffer = allocator.buffer(capacity: size)
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { out in
                    write(UnsafeMutableRawBufferPointer(rebasing: out[..<size]))
                    return size
                }
                return buffer
            }
            traffic.sent.add(buffer.readableBytes, ordering: .relaxed)
            context.write(wrapOutboundOut(buffer), promise: promise)
        } catch {
            promise?.fail(error)
        }
    }
}

/// Sends a ping when the connection has been quiet for a while and closes it when the peer has
/// been silent for longer (driven by NIO's IdleStateHandler).
final class KeepaliveHandler: ChannelDuplexHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundIn = Frame
    typealias OutboundOut = Frame

    private var nonce: UInt64 = 0

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let idle = event as? IdleStateHandler.IdleStateEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        switch idle {
        case .write:
            nonce &+= 1
            context.writeAndFlush(wrapOutboundOut(Frame(type: .ping, payload: PingMessage(nonce: nonce).encoded())), promise: nil)
        case .read:
            let message = GoodbyeMessage(reason: "no frame from the peer within the idle timeout")
            context.writeAndFlush(wrapOutboundOut(Frame(type: .goodbye, payload: message.encoded())), promise: nil)
            context.close(promise: nil)
        case .all:
            break
        }
    }
}
