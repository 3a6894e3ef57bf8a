// FrameType: what a frame carries; unknown types are delivered so that receivers can skip them.

/// The type byte of a frame: what its payload is.
///
/// This version of Shoal defines the types below; the replication protocol
/// (Spec/replication.md) gives their payloads meaning. A reader delivers frames of types it does
/// not know (``isKnown`` is false) instead of failing, and the session skips them: that is how
/// new message types are added without breaking older peers. Type 0 is reserved and invalid.
public struct FrameType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The type byte.
    public let rawValue: UInt8

    /// Wraps a type byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// First frame on a connection: protocol version, node ID, capabilities, zones.
    public static let hello = FrameType(rawValue: 0x01)
    /// A batch of changes: records, deltas and tombstones of one zone.
    public static let changes = FrameType(rawValue: 0x02)
    /// Acknowledges batches up to a change token.
    public static let acknowledgement = FrameType(rawValue: 0x03)
    /// A part of an asset — its manifest or one chunk — or word that the sender lacks it (``AssetChunkMessage``).
    public static let assetChunk = FrameType(rawValue: 0x04)
    /// An error with a code, an optional retry-after and a message (``ErrorMessage``).
    public static let error = FrameType(rawValue: 0x05)
    /// A keepalive probe (``PingMessage``).
    public static let ping = FrameType(rawValue: 0x06)
    /// The answer to a ping, echoing its nonce (``PingMessage``).
    public static let pong = FrameType(rawValue: 0x07)
    /// The sender is closing the connection on purpose (``GoodbyeMessage``).
    public static let goodbye = FrameType(rawValue: 0x08)

    /// Asks for a zone's changes since a token, then live updates (``SubscribeMessage``).
    public static let subscribe = FrameType(rawValue: 0x09)
    /// Zones created or deleted since the hello (``ZonesMessage``).
    public static let zones = FrameType(rawValue: 0x0A)
    /// Asks for an asset's manifest or chunks (``AssetRequestMessage``).
    public static let assetRequest = FrameType(rawValue: 0x0B)

    /// The nodes a subscriber receives a zone from directly (``UpstreamsMessage``).
    public static let upstreams = FrameType(rawValue: 0x0C)

    /// A batch of changes of a subscription named by its number (``LiveChangesMessage``).
    public static let liveChanges = FrameType(rawValue: 0x0D)

    /// Asks for records of a subscription whole (``WantWholeMessage``).
    public static let wantWhole = FrameType(rawValue: 0x0E)

    /// The types this version of Shoal defines.
    public static let known: [FrameType] = [
        .hello, .changes, .acknowledgement, .assetChunk, .error, .ping, .pong, .goodbye, .subscribe, .zones,
        .assetRequest, .upstreams,
        .liveChanges, .wantWhole
    ]

    /// Whether this version of Shoal defines the type.
    public var isKnown: Bool { rawValue >= 0x01 && rawValue <= 0x0E }

    public var description: String {
        switch self {
        case .hello: return "hello"
        case .changes: return "changes"
        case .acknowledgement: return "acknowledgement"
        case .assetChunk: return "asset-chunk"
        case .error: return "error"
        case .ping: return "ping"
        case .pong: return "pong"
        case .goodbye: return "goodbye"
        case .subscribe: return "subscribe"
        case .zones: return "zones"
        case .upstreams: return "upstreams"
        case .liveChanges: return "live-changes"
        case .assetRequest: return "asset-request"
        case .wantWhole: return "want-whole"
        default: return "unknown(0x\(String(rawValue, radix: 16)))"
        }
    }
}
