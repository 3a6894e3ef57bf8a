// SubscribeMessage: "send me the changes of this zone since this token, then keep me updated".

/// The payload of a ``FrameType/subscribe`` frame (Spec/replication.md, "Subscribe").
///
/// Layout: zone ID, the zone incarnation the subscriber holds (16 bytes), the change token the
/// sender of the changes last gave (length-prefixed; empty means from the beginning), the
/// subscriber's knowledge of the zone (plain vector), the most change batches the subscriber
/// lets the sender have unacknowledged (varint ≥ 1), and, when the subscriber numbers the
/// subscription itself, its number (varint ≥ 1; absent otherwise: the payload ends), then, only
/// after a number, the writer log heads the subscriber holds (count, then per writer in
/// strictly increasing order its node ID and the sequence of its last entry, ≥ 1;
/// Spec/authenticated-writes.md §4).
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
    /// How much of each writer's log for the zone the subscriber holds (writers it holds no
    /// entry of are left out), so the server's ranges join them; nil when not stated. Stated
    /// only with a ``number``, to a server that authenticates writes (capability bit 8).
    public var writerLogHeads: [NodeID: UInt64]?

    /// Creates a subscription request.
    public init(
        zone: RecordZone.ID, incarnation: NodeID, token: ChangeToken?, knowledge: VersionVector = VersionVector(),
        window: UInt64 = 4,
        number: UInt64? = nil, writerLogHeads: [NodeID: UInt64]? = nil
    ) {
        self.zone = zone
        self.incarnation = incarnation
        self.token = token
        self.knowledge = knowledge
        self.window = window
        self.number = number
        self.writerLogHeads = number == nil ? nil : writerLogHeads?.filter { $0.value > 0 }
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        let t = token?.bytes ?? []
        let heads = (writerLogHeads ?? [:]).sorted { $0.key < $1.key }
        var size =
            WireSize.zoneID(zone) &+ 16 &+ WireSize.lengthPrefixed(t.count) &+ WireSize.plainVector(knowledge)
            &+ WireSize.varint(window)
            &+ (number.map { WireSize.varint($0) } ?? 0)
        if writerLogHeads != nil {
            size &+= WireSize.varint(UInt64(heads.count))
            for h in heads { size &+= 16 &+ WireSize.varint(h.value) }
        }
        return WireWriter.encode(size: size) { w in
            w.writeZoneID(zone)
            w.writeNodeID(incarnation)
            w.writeBytes(t)
            w.writePlainVector(knowledge)
            w.writeVarint(window)
            if let number { w.writeVarint(number) }
            if writerLogHeads != nil {
                w.writeVarint(UInt64(heads.count))
                for h in heads {
                    w.writeNodeID(h.key)
                    w.writeVarint(h.value)
                }
            }
        }
    }

    /// Decodes a subscribe payload.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the subscribe message") {
            (r) throws(WireError) -> SubscribeMessage in
            let zone = try r.readZoneID()
            let incarnation = try r.readNodeID("zone incarnation")
            let n = try r.readLength(max: r.limits.maxBlobBytes, "token length", limitName: "maxBlobBytes")
            let token = n == 0 ? nil : ChangeToken(bytes: try r.readBytes(n, "token"))
            let knowledge = try r.readPlainVector("knowledge")
            let at = r.offset
            let window = try r.readVarint("window")
            guard window >= 1 else {
                throw WireError(.invalidValue, at: at, "window is 0; a subscriber accepts at least one batch")
            }
            var number: UInt64? = nil
            if !r.isAtEnd {
                let nAt = r.offset
                number = try r.readVarint("subscription number")
                guard number != 0 else { throw WireError(.invalidValue, at: nAt, "subscription numbers start at 1") }
            }
            var heads: [NodeID: UInt64]? = nil
            if !r.isAtEnd {
                let n = try r.readCount(
                    max: r.limits.maxVectorEntries, "writer log head count", limitName: "maxVectorEntries")
                try r.require(n, each: 17, "\(n) writer log heads")
                var list = [NodeID: UInt64](minimumCapacity: n)
                var last: NodeID? = nil
                for _ in 0..<n {
                    let at = r.offset
                    let node = try r.readNodeID("writer log head node")
                    if let last, !(last < node) {
                        throw WireError(
                            last == node ? .duplicate : .unsorted, at: at,
                            "writer log heads must be listed once each in increasing order of node")
                    }
                    last = node
                    let sAt = r.offset
                    let seq = try r.readVarint("writer log head sequence")
                    guard seq >= 1 else {
                        throw WireError(
                            .invalidValue, at: sAt,
                            "a writer log head is at least 1; leave out writers of which no entry is held")
                    }
                    list[node] = seq
                }
                heads = list
            }
            return SubscribeMessage(
                zone: zone, incarnation: incarnation, token: token, knowledge: knowledge, window: window,
                number: number,
                writerLogHeads: heads)
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
        WireWriter.encode(
            size: WireSize.zoneID(zone) &+ 16 &+ WireSize.varint(batch) &+ WireSize.plainVector(knowledge)
        ) { w in
            w.writeZoneID(zone)
            w.writeNodeID(incarnation)
            w.writeVarint(batch)
            w.writePlainVector(knowledge)
        }
    }

    /// Decodes an acknowledgement payload.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the acknowledgement") {
            (r) throws(WireError) -> AcknowledgementMessage in
            AcknowledgementMessage(
                zone: try r.readZoneID(), incarnation: try r.readNodeID("zone incarnation"),
                batch: try r.readVarint("batch number"), knowledge: try r.readPlainVector("knowledge"))
        }
    }
}
