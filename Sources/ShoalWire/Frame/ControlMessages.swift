// ControlMessages: the payloads of error, ping, pong and goodbye frames.

/// The payload of an ``FrameType/error`` frame: what went wrong, whether to retry, and when.
///
/// Layout: `code` (length-prefixed identifier, e.g. `limitExceeded`, `requestRateLimited`), a
/// flags byte (bit 0: a retry-after follows; other bits reserved), the retry-after in
/// milliseconds (varint) when flagged, then `message` (length-prefixed UTF-8).
public struct ErrorMessage: Hashable, Sendable, CustomStringConvertible {
    /// The error code's name, as `ShoalError.Code` names it (CloudKit's code names).
    public var code: String
    /// When the sender asks the receiver to wait before retrying, in milliseconds.
    public var retryAfterMilliseconds: UInt64?
    /// A human-readable explanation: what was wrong, the limit, how to fix it.
    public var message: String

    /// Creates an error message.
    public init(code: String, retryAfterMilliseconds: UInt64? = nil, message: String) {
        self.code = code
        self.retryAfterMilliseconds = retryAfterMilliseconds
        self.message = message
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        var size = WireSize.string(code) &+ 1 &+ WireSize.string(message)
        if let r = retryAfterMilliseconds { size &+= WireSize.varint(r) }
        return WireWriter.encode(size: size) { w in
            w.writeString(code)
            w.writeByte(retryAfterMilliseconds == nil ? 0 : 1)
            if let r = retryAfterMilliseconds { w.writeVarint(r) }
            w.writeString(message)
        }
    }

    /// Decodes an error payload.
    /// - Throws: ``WireError`` for malformed or non-canonical input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the error message") {
            (r) throws(WireError) -> ErrorMessage in
            let code = try r.readIdentifier("error code", max: r.limits.maxNameBytes, limitName: "maxNameBytes")
            let fAt = r.offset
            let flags = try r.readByte("error flags")
            guard flags & ~1 == 0 else {
                throw WireError(.unknownRequiredTag, at: fAt, "error flags 0x\(Hex.string([flags])) set reserved bits")
            }
            let retry: UInt64? = flags & 1 != 0 ? try r.readVarint("retry-after") : nil
            let message = try r.readString(max: r.limits.maxBlobBytes, "error text", limitName: "maxBlobBytes")
            return ErrorMessage(code: code, retryAfterMilliseconds: retry, message: message)
        }
    }

    public var description: String {
        "\(code)" + (retryAfterMilliseconds.map { " (retry after \($0) ms)" } ?? "") + ": \(message)"
    }
}

/// The payload of ``FrameType/ping`` and ``FrameType/pong`` frames: a nonce the pong echoes.
public struct PingMessage: Hashable, Sendable {
    /// Chosen by the pinger; the pong carries the same value.
    public var nonce: UInt64

    /// Creates a ping payload.
    public init(nonce: UInt64) { self.nonce = nonce }

    /// The canonical payload bytes: the nonce as a varint.
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: WireSize.varint(nonce)) { $0.writeVarint(nonce) }
    }

    /// Decodes a ping or pong payload.
    /// - Throws: ``WireError`` for malformed or non-canonical input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the ping") { (r) throws(WireError) -> PingMessage in
            PingMessage(nonce: try r.readVarint("ping nonce"))
        }
    }
}

/// The payload of a ``FrameType/goodbye`` frame: why the sender is closing.
public struct GoodbyeMessage: Hashable, Sendable {
    /// Why the connection is closing, for the peer's log.
    public var reason: String

    /// Creates a goodbye payload.
    public init(reason: String) { self.reason = reason }

    /// The canonical payload bytes: the reason as a length-prefixed string.
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: WireSize.string(reason)) { $0.writeString(reason) }
    }

    /// Decodes a goodbye payload.
    /// - Throws: ``WireError`` for malformed or non-canonical input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the goodbye") {
            (r) throws(WireError) -> GoodbyeMessage in
            GoodbyeMessage(
                reason: try r.readString(max: r.limits.maxBlobBytes, "goodbye reason", limitName: "maxBlobBytes"))
        }
    }
}

/// Runs a payload decoder over a whole byte array and insists it consumes every byte.
package enum ControlPayload {
    package static func decode<T>(
        _ bytes: [UInt8], limits: WireLimits, _ what: String, _ body: (inout WireReader) throws(WireError) -> T
    ) throws(WireError) -> T {
        try Borrowed.bytes(of: bytes) { (raw) throws(WireError) -> T in
            var r = WireReader(raw, limits: limits)
            let value = try body(&r)
            try r.expectEnd(what)
            return value
        }
    }
}
