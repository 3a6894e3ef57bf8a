// FrameCodecHandlers: NIO handlers that turn bytes into frames and frames into bytes.

import NIOCore
import NIOSSL
import ShoalStore
import ShoalWire
import Synchronization

/// Bytes a node moved over its sockets, as they travelled (compressed, with frame overhead).
public final class TrafficCounter: Sendable {
    let received = Atomic<Int>(0)
    let sent = Atomic<Int>(0)
    let pausedNanoseconds = Atomic<Int>(0)
    let pauses = Atomic<Int>(0)
    let streamFrames = Atomic<Int>(0)

    /// Creates zeroed counters.
    public init() {}

    /// Bytes read from peers so far.
    public var bytesReceived: Int { received.load(ordering: .relaxed) }
    /// Bytes written to peers so far.
    public var bytesSent: Int { sent.load(ordering: .relaxed) }
    /// Frames read from peers that travelled in their zstd stream (compression 3,
    /// ``NetworkConfiguration/streamCompression``).
    public var streamFramesReceived: Int { streamFrames.load(ordering: .relaxed) }
    /// Times the asset lanes waited to keep to ``NetworkConfiguration/assetReceiveRate`` or
    /// ``NetworkConfiguration/assetSendRate``.
    public var assetPauses: Int { pauses.load(ordering: .relaxed) }
    /// The time those waits asked for, in total.
    public var assetPausedTime: Duration { .nanoseconds(pausedNanoseconds.load(ordering: .relaxed)) }

    func assetPaused(_ wait: Duration) {
        let (seconds, attoseconds) = wait.components
        // A wait is at most a frame's bytes at 1 byte/s (RatePacer caps it far below Int.max ns).
        let nanoseconds = Int(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000)
        pausedNanoseconds.add(
            nanoseconds.overflow ? Int.max / 4 : nanoseconds.partialValue &+ Int(attoseconds / 1_000_000_000),
            ordering: .relaxed)
        pauses.add(1, ordering: .relaxed)
    }
}

/// What the two `hello`s of a connection said about compression: the decoding handler records
/// the peer's, the encoding handler this node's (both on the connection's event loop). Until the
/// peer's hello has arrived nothing is known, so no frame uses a dictionary or the stream
/// (Spec/replication.md §2); until this node's hello has announced the stream, the reader refuses
/// compression 3 (Spec/wire-format.md §14.3).
final class HelloCompression {
    /// The dictionary IDs the peer's hello listed; nil until a valid hello arrived.
    var held: [UInt32]? = nil
    /// The capability bits of the peer's hello; nil until a valid hello arrived.
    var capabilities: UInt64? = nil
    /// Whether this node's hello announced ``HelloMessage/streamCompressionCapability``.
    var announcedStream = false
    /// Whether this node's hello has been encoded (gone out): ``KeepaliveHandler`` sends no ping
    /// before. The hello reaches the encoder through the outbox, not past the keepalive handler.
    var sentHello = false

    /// Creates an empty record (no hello yet).
    init() {}
}

/// Reads frames from a connection's bytes with ``FrameReader``: any split, at most one frame
/// buffered. A malformed frame sends an error frame and closes the connection; the node and its
/// data are untouched (DESIGN.md invariant 6). A frame whose first bytes arrived must be whole
/// within `frameTimeout`, or the connection closes the same way: a peer cannot hold a partial
/// frame open by trickling bytes. The peer's first valid `hello` tells ``HelloCompression``
/// which dictionaries it holds and whether it reads a zstd stream; compression 3 is accepted once
/// this node's own hello has announced it.
final class FrameDecodingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = Frame
    typealias OutboundOut = Frame

    private var reader: FrameReader
    private var failed = false
    private let traffic: TrafficCounter
    private let limits: WireLimits
    private let peer: HelloCompression
    private let frameTimeout: TimeAmount
    /// The deadline of the frame in progress, and where in the stream that frame starts.
    private var partial: (deadline: Scheduled<Void>, start: Int)? = nil

    init(
        limits: WireLimits, traffic: TrafficCounter, peer: HelloCompression = HelloCompression(),
        frameTimeout: TimeAmount = TimeAmount(NetworkConfiguration().frameCompletionTimeout)
    ) {
        reader = FrameReader(limits: limits)
        self.limits = limits
        self.traffic = traffic
        self.peer = peer
        self.frameTimeout = frameTimeout
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        partial?.deadline.cancel()
        partial = nil
    }

    /// Starts the deadline of a frame that began in this read, or drops the finished one's.
    private func watchPartialFrame(context: ChannelHandlerContext) {
        guard reader.bufferedByteCount > 0 else {
            partial?.deadline.cancel()
            partial = nil
            return
        }
        let start = reader.consumedByteCount
        if let partial, partial.start == start { return }
        partial?.deadline.cancel()
        let timeout = frameTimeout
        let deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            guard !failed, let partial, partial.start == reader.consumedByteCount, reader.bufferedByteCount > 0 else {
                return
            }
            fail(
                context: context, code: .limitExceeded,
                "a frame was not completed within \(timeout.nanoseconds / 1_000_000) ms of its first byte (\(reader.bufferedByteCount) byte(s) received; NetworkConfiguration.frameCompletionTimeout); the connection is closed"
            )
        }
        partial = (deadline, start)
    }

    private func fail(context: ChannelHandlerContext, code: ShoalError.Code, _ message: String) {
        failed = true
        partial?.deadline.cancel()
        partial = nil
        let error = ErrorMessage(code: code.name, message: message)
        context.writeAndFlush(wrapOutboundOut(Frame(type: .error, payload: error.encoded())), promise: nil)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let buffer = unwrapInboundIn(data)
        traffic.received.add(buffer.readableBytes, ordering: .relaxed)
        // The peer may use the stream only after reading this node's hello, which the encoding
        // handler has seen go out by then.
        if peer.announcedStream, !reader.acceptsStreamCompression { reader.acceptsStreamCompression = true }
        var frames = [Frame]()
        var failure: WireError? = nil
        buffer.withUnsafeReadableBytes { raw in
            var input = raw
            do throws(WireError) {
                while let f = try reader.next(from: &input) { frames.append(f) }
            } catch { failure = error }
        }
        for f in frames {
            if f.compression == .stream { traffic.streamFrames.add(1, ordering: .relaxed) }
            // A malformed hello is the session's to refuse; it teaches nothing here.
            if f.type == .hello, peer.held == nil, let hello = try? HelloMessage(decoding: f.payload, limits: limits) {
                peer.held = hello.dictionaries
                peer.capabilities = hello.capabilities
            }
            context.fireChannelRead(wrapInboundOut(f))
        }
        if let failure {
            fail(context: context, code: .invalidArguments, "malformed frame: \(failure)")
        } else if !failed {
            watchPartialFrame(context: context)
        }
    }
}

/// Writes frames with ``FrameEncoder``, compressing when it pays. A dictionary in the options is
/// used only once the peer's hello has listed it (``HelloCompression``); before that, and for a
/// peer that does not hold it, compression is zstd without a dictionary.
///
/// With `stream` (``NetworkConfiguration/streamCompression``) the handler sets
/// ``HelloMessage/streamCompressionCapability`` in the first hello it sends, and once the peer's
/// hello has set it too, sends compressible frames as one zstd stream started from the
/// dictionary (compression 3, Spec/wire-format.md §14.3).
final class FrameEncodingHandler: ChannelOutboundHandler {
    typealias OutboundIn = Frame
    typealias OutboundOut = ByteBuffer

    private let options: FrameEncoder.Options
    private let stream: Bool
    private var encoder: FrameEncoder
    private let traffic: TrafficCounter
    private let peer: HelloCompression
    /// Whether the peer's hello has been taken into account.
    private var negotiated = false
    /// Whether this node's hello has gone out.
    private var announced = false

    init(
        options: FrameEncoder.Options, stream: Bool = true, traffic: TrafficCounter,
        peer: HelloCompression = HelloCompression()
    ) {
        self.options = options
        self.stream = stream
        self.traffic = traffic
        self.peer = peer
        var first = options
        if case .dictionary = options.mode { first.mode = .zstd }
        encoder = FrameEncoder(options: first)
    }

    /// This node's first hello, with the stream capability set when the stream is enabled.
    private func announce(_ frame: Frame) -> Frame {
        announced = true
        peer.sentHello = true
        guard var hello = try? HelloMessage(decoding: frame.payload) else { return frame }
        if stream { hello.capabilities |= HelloMessage.streamCompressionCapability }
        peer.announcedStream = hello.capabilities & HelloMessage.streamCompressionCapability != 0
        var out = frame
        out.payload = hello.encoded()
        return out
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var frame = unwrapOutboundIn(data)
        if !announced, frame.type == .hello { frame = announce(frame) }
        if !negotiated, let held = peer.held {
            negotiated = true
            var agreed = options
            if case .dictionary(let d) = options.mode, !held.contains(d.id) { agreed.mode = .zstd }
            let streams = stream && (peer.capabilities ?? 0) & HelloMessage.streamCompressionCapability != 0
            encoder = streams ? FrameEncoder(streamingWith: agreed) : FrameEncoder(options: agreed)
        }
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
            // A frame that cannot be encoded (over the frame limit) is never dropped in silence:
            // the stream would go on without it and the peer wait for it for ever. The
            // connection closes with the reason, and the redial starts from the stored position.
            promise?.fail(error)
            context.fireErrorCaught(FrameNotSent(type: frame.type, reason: error))
            context.close(promise: nil)
        }
    }
}

/// A frame this node could not encode (``WireError`` `limitExceeded`): its connection is closed.
struct FrameNotSent: Error, CustomStringConvertible {
    let type: FrameType
    let reason: WireError
    var description: String {
        "a frame of type \(type.rawValue) could not be sent and the connection was closed: \(reason)"
    }
}

/// Sends a ping when the connection has been quiet for a while and closes it when the peer has
/// been silent for longer (driven by NIO's IdleStateHandler), notes when each frame arrives
/// (``received``: `shoal status` shows when a device was last seen), and, on request, probes the
/// peer with a ping at once (``probe(within:on:)``), answered by the next frame that arrives.
///
/// No ping leaves before this node's hello: the hello is the first frame on a connection
/// (Spec/replication.md §2), and a peer closes one that starts with anything else. A probe of a
/// connection still opening sends its ping once the hello has gone out.
final class KeepaliveHandler: ChannelDuplexHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundIn = Frame
    typealias OutboundOut = Frame

    private var nonce: UInt64 = 0
    /// Whether this node's hello has been written past this handler (on a pipeline without an
    /// encoder sharing ``hellos``); pings may follow it, never precede it.
    private var helloWritten = false
    /// What the hellos said, shared with the frame encoder, which notes when this node's hello
    /// went out (it reaches the encoder through the outbox, never past this handler).
    private let hellos: HelloCompression

    /// A keepalive handler; `hellos` is the encoder's record of the hellos, when there is one.
    init(hellos: HelloCompression = HelloCompression()) {
        self.hellos = hellos
    }
    /// When the last frame arrived on this connection.
    let received = ReceiveClock()
    private var context: ChannelHandlerContext?
    /// The probes waiting for a frame from the peer, by number.
    private var probes: [Int: EventLoopPromise<Bool>] = [:]
    private var nextProbe = 0

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        answer(false)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received.stamp()
        // Any frame shows the peer is there (a busy peer's acknowledgements count as its pong).
        answer(true)
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        answer(false)
        context.fireChannelInactive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !helloWritten, unwrapOutboundIn(data).type == .hello { helloWritten = true }
        context.write(data, promise: promise)
    }

    /// Sends a probe's ping as soon as this node's hello has gone out (at once when it has): a
    /// connection still opening is probed too, and the peer may have sent its own hello before
    /// the probe began, so only a ping draws an answer. Gives up at `deadline`.
    private func pingOnceHelloSent(_ context: ChannelHandlerContext, until deadline: NIODeadline) {
        if helloWritten || hellos.sentHello {
            ping(context)
            return
        }
        guard context.eventLoop.now < deadline, !probes.isEmpty else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .milliseconds(20)) {
            let (handler, context) = bound.value
            guard handler.context != nil else { return }
            handler.pingOnceHelloSent(context, until: deadline)
        }
    }

    /// Sends a ping, if this node's hello has gone out.
    private func ping(_ context: ChannelHandlerContext) {
        guard helloWritten || hellos.sentHello else { return }
        nonce &+= 1
        context.writeAndFlush(
            wrapOutboundOut(Frame(type: .ping, payload: PingMessage(nonce: nonce).encoded())), promise: nil)
    }

    /// Sends a ping now, or as soon as this node's hello has gone out (no frame precedes it); the
    /// future is true when a frame arrives from the peer within `timeout`,
    /// false when none does or the connection closes first. Call on the channel's event loop,
    /// `loop`.
    func probe(within timeout: TimeAmount, on loop: any EventLoop) -> EventLoopFuture<Bool> {
        guard let context, context.channel.isActive else { return loop.makeSucceededFuture(false) }
        let promise = context.eventLoop.makePromise(of: Bool.self)
        nextProbe &+= 1
        let number = nextProbe
        probes[number] = promise
        pingOnceHelloSent(context, until: context.eventLoop.now + timeout)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: timeout) { bound.value.probes.removeValue(forKey: number)?.succeed(false) }
        return promise.futureResult
    }

    /// Ends every waiting probe with `answered`.
    private func answer(_ answered: Bool) {
        guard !probes.isEmpty else { return }
        let waiting = probes
        probes = [:]
        for p in waiting.values { p.succeed(answered) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let idle = event as? IdleStateHandler.IdleStateEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        switch idle {
        case .write:
            ping(context)
        case .read:
            // The peer is gone (asleep, its link down, its address removed) or stuck: a goodbye
            // goes where the socket takes it, and the socket closes at once, below TLS. TLS's own
            // close waits for the peer's close_notify (NIOSSL: up to 5 s), which a silent peer
            // never sends, and the dead connection would count as open that much longer
            // (Spec/replication.md §2.1).
            let message = GoodbyeMessage(reason: "no frame from the peer within the idle timeout")
            context.writeAndFlush(wrapOutboundOut(Frame(type: .goodbye, payload: message.encoded())), promise: nil)
            if let tls = try? context.pipeline.syncOperations.context(handlerType: NIOSSLHandler.self) {
                tls.close(promise: nil)
            } else {
                context.close(promise: nil)
            }
        case .all:
            break
        }
    }
}
