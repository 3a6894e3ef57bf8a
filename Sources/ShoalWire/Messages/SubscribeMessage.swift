// SubscribeMessage: "send me the changes of this zone since this token, then keep me updated".

/// The payload of a ``FrameType/subscribe`` frame (Spec/replication.md, "Subscribe").
///
/// Layout: zone ID, the zone incarnation the subscriber holds (16 bytes), the change token the
/// sender of the changes last gave (length-prefixed; empty means from the beginning), and the
/// most change batches the subscriber lets the sender have unacknowledged (varint ≥ 1).
public struct SubscribeMessage: Hashable, Sendable {
    /// The zone.
    public var zone: RecordZone.ID
    /// The incarnation the subscriber holds.
    public var incarnation: NodeID
    /// Where to resume; nil for everything.
    public var token: ChangeToken?
    /// Unacknowledged batches the subscriber accepts in flight.
    public var window: UInt64

    /// Creates a subscription request.
    public init(zone: RecordZone.ID, incarnation: NodeID, token: ChangeToken?, window: UInt64 = 4) {
        self.zone = zone
        self.incarnation = incarnation
        self.token = token
        self.window = window
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        let t = token?.bytes ?? []
        let size = WireSize.zoneID(zone) &+ 16 &+ WireSize.lengthPrefixed(t.count) &+ WireSize.varint(window)
        return WireWriter.encode(size: size) { w in
            w.writeZoneID(zone)
            w.writeNodeID(incarnation)
            w.writeBytes(t)
            w.writeVarint(window)
        }
    }

    /// Decodes a subscribe payload.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the subscribe message") { (r) throws(WireError) -> SubscribeMessage in
            let zone = try r.readZoneID()
            let incarnation = try r.readNodeID("zone incarnation")
            let n = try r.readLength(max: r.limits.maxBlobBytes, "token length", limitName: "maxBlobBytes")
            let token = n == 0 ? nil : ChangeToken(bytes: try r.readBytes(n, "token"))
            let at = r.offset
            let window = try r.readVarint("window")
            guard window >= 1 else { throw WireError(.invalidValue, at: at, "window is 0; a subscriber accepts at least one batch") }
            return SubscribeMessage(zone: zone, incarnation: incarnation, token: token, window: window)
        }
    }
}

/// The payload of a ``FrameType/acknowledgement`` frame: batches up to a number are applied durably.
///
/// Layout: zone ID, incarnation (16 bytes), batch number (varint).
public struct AcknowledgementMessage: Hashable, Sendable {
    /// The zone.
    public var zone: RecordZone.ID
    /// The incarnation the batches belong to.
    public var incarnation: NodeID
    /// Every batch up to and including this number is applied and durable.
    public var batch: UInt64

    /// Creates an acknowledgement.
    public init(zone: RecordZone.ID, incarnation: NodeID, batch: UInt64) {
        self.zone = zone
        self.incarnation = incarnation
        self.batch = batch
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: WireSize.zoneID(zone) &+ 16 &+ WireSize.varint(batch)) { w in
            w.writeZoneID(zone)
            w.writeNodeID(incarnation)
            w.writeVarint(batch)
        }
    }

    /// Decodes an acknowledgement payload.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the acknowledgement") { (r) throws(WireError) -> AcknowledgementMessage in
            AcknowledgementMessage(zone: try r.readZoneID(), incarnation: try r.readNodeID("zone incarnation"), batch: try r.readVarint("batch number"))
        }
    }
}
