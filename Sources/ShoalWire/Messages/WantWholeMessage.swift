// WantWholeMessage: "send me these records whole" — a subscriber that could not rebuild some
// sparse records of a batch asks for them, instead of reconnecting.

/// The payload of a ``FrameType/wantWhole`` frame (Spec/replication.md §3.10): the records of a
/// subscription the subscriber could not rebuild from sparse items (a delta slot's base or the
/// omitted part did not match its copy), which the server sends whole in a following batch.
///
/// Layout: zone ID, incarnation (16 bytes), count (varint, 1 to `maxMessageItems`), then that
/// many record names (length-prefixed), strictly increasing by UTF-8 bytes.
public struct WantWholeMessage: Hashable, Sendable {
    /// The zone.
    public var zone: RecordZone.ID
    /// The incarnation of the zone the subscription is for.
    public var incarnation: NodeID
    /// The records' names, sorted by UTF-8 bytes, without duplicates; at least one.
    public var names: [String]

    /// Creates the message; `names` are sorted and deduplicated.
    public init(zone: RecordZone.ID, incarnation: NodeID, names: some Sequence<String>) {
        self.zone = zone
        self.incarnation = incarnation
        self.names = Array(Set(names)).sorted { UTF8Order.compare($0, $1) < 0 }
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        let size =
            WireSize.zoneID(zone) &+ 16 &+ WireSize.varint(UInt64(names.count))
            &+ names.reduce(0) { $0 &+ WireSize.string($1) }
        return WireWriter.encode(size: size) { w in
            w.writeZoneID(zone)
            w.writeNodeID(incarnation)
            w.writeVarint(UInt64(names.count))
            for n in names { w.writeString(n) }
        }
    }

    /// Decodes a want-whole payload.
    /// - Throws: ``WireError``: `invalid_value` for no names, `limit_exceeded` for more than
    ///   `maxMessageItems`, `unsorted`/`duplicate` for names out of order, and the name errors of
    ///   wire-format §3.4.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the want-whole message") {
            (r) throws(WireError) -> WantWholeMessage in
            let zone = try r.readZoneID()
            let incarnation = try r.readNodeID("zone incarnation")
            let countAt = r.offset
            let n = try r.readCount(max: r.limits.maxMessageItems, "wanted record count", limitName: "maxMessageItems")
            guard n > 0 else {
                throw WireError(.invalidValue, at: countAt, "a want-whole message names at least one record")
            }
            try r.require(n, each: 2, "\(n) wanted record names")
            var names = [String]()
            names.reserveCapacity(n)
            for _ in 0..<n {
                let at = r.offset
                let name = try r.readName("wanted record name")
                if let last = names.last {
                    let c = UTF8Order.compare(last, name)
                    if c >= 0 {
                        throw WireError(
                            c == 0 ? .duplicate : .unsorted, at: at,
                            "wanted record names must strictly increase by UTF-8 bytes; \(name.debugDescription) follows \(last.debugDescription)"
                        )
                    }
                }
                names.append(name)
            }
            var m = WantWholeMessage(zone: zone, incarnation: incarnation, names: [])
            m.names = names
            return m
        }
    }
}
