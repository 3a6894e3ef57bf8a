// SubscribeMessage: "send me the changes of this zone since this token, then keep me updated".

/// The payload of a ``FrameType/subscribe`` frame (Spec/replication.md, "Subscribe").
///
/// Layout: zone ID, the zone incarnation the subscriber holds (16 bytes), the change token the
/// sender of the changes last gave (length-prefixed; empty means from the beginning), the
/// subscriber's knowledge of the zone (plain vector), the most change batches the subscriber
/// lets the sender have unacknowledged (varint ≥ 1), and, when the subscriber numbers the
/// subscription itself, its number (varint ≥ 1; absent otherwise: the payload ends).
public struct SubscribeMessage: Hashable, Sendable {
    /// The zone.
    public var zone: RecordZone.ID
    /// The incarnation the subscriber holds.
    public var incarnation: NodeID
    /// Where to resume; nil for everything.
    public var token: ChangeToken?
    /// Every change the subscriber already reflects (Spec/replication.md §1.1): the server skips
    /// record versions it dominates.
    public var knowledge: VersionVector
    /// Unacknowledged batches the subscriber accepts in flight.
    public var window: UInt64
    /// The number the subscriber gives the subscription, so that the server's batches may name
    /// it from the first one (Spec/replication.md §3.5.4); nil when the server numbers it. Sent
    /// only to a server whose `hello` sets capability bit 7.
    public var number: UInt64?

    /// Creates a subscription request.
    public init(zone: RecordZone.ID, incarnation: NodeID, token: ChangeToken?, knowledge: VersionVector = VersionVector(), window: UInt64 = 4,
                number: UInt64? = nil) {
        self.zone = zone
        self.incarnation = incarnation
        self.token = token
        self.knowledge = knowledge
        self.window = window
        self.number = number
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        let t = token?.bytes ?? []
        let size = WireSize.zoneID(zone) &+ 16 &+ WireSize.lengthPrefixed(t.count) &+ WireSize.plainVector(knowledge) &+ WireSize.varint(window)
            &+ (number.map { WireSize.varint($0) } ?? 0)
        return WireWriter.encode(size: size) { w in
            w.writeZoneID(zone)
            w.writeNodeID(incarnation)
            w.writeBytes(t)
            w.writePlainVector(knowledge)
            w.writeVarint(window)
            if let number { w.writeVarint(number) }
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
            let knowledge = try r.readPlainVector("knowledge")
            let at = r.offset
            let window = try r.readVarint("window")
            guard window >= 1 else { throw WireError(.invalidValue, at: at, "window is 0; a subscriber accepts at least one batch") }
            var number: UInt64? = nil
            if !r.isAtEnd {
                let nAt = r.offset
                number = try r.readVarint("subscription number")
                guard number != 0 else { throw WireError(.invalidValue, at: nAt, "subscription numbers start at 1") }
            }
            return SubscribeMessage(zone: zone, incarnation: incarnation, token: token, knowledge: knowledge, window: window, number: number)
        }
    }
}

/// The payload of a ``FrameType/acknowledgement`` frame: batches up to a number are applied durably.
///
/// Layout: zone ID, incarnation (16 bytes), batch number (varint), the subscriber's knowledge
/// after applying it (plain vector).
public struct AcknowledgementMessage: Hashable, Sendable {
    /// The zone.
    public var zone: RecordZone.ID
    /// The incarnation the batches belong to.
    public var incarnation: NodeID
    /// Every batch up to and including this number is applied and durable.
    public var batch: UInt64
    /// The subscriber's knowledge after applying it: the server skips versions it dominates.
    public var knowledge: VersionVector

    /// Creates an acknowledgement.
    public init(zone: RecordZone.ID, incarnation: NodeID, batch: UInt64, knowledge: VersionVector = VersionVector()) {
        self.zone = zone
        self.incarnation = incarnation
        self.batch = batch
        self.knowledge = knowledge
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: WireSize.zoneID(zone) &+ 16 &+ WireSize.varint(batch) &+ WireSize.plainVector(knowledge)) { w in
            w.writeZoneID(zone)
            w.writeNodeID(incarnation)
            w.writeVarint(batch)
            w.writePlainVector(knowledge)
        }
    }

    /// Decodes an acknowledgement payload.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the acknowledgement") { (r) throws(WireError) -> AcknowledgementMessage in
            AcknowledgementMessage(zone: try r.readZoneID(), incarnation: try r.readNodeID("zone incarnation"),
                                   batch: try r.readVarint("batch number"), knowledge: try r.readPlainVector("knowledge"))
        }
    }
}
