// UpstreamsMessage: "these nodes deliver their own changes of this zone to me; do not relay them".

/// The payload of an ``FrameType/upstreams`` frame (Spec/replication.md §3.9): the nodes from
/// which the subscriber currently receives a zone directly, caught up, on other connections.
///
/// Layout: zone ID, incarnation (16 bytes), count (varint, at most ``maxNodes``), then that many
/// node IDs (16 bytes each) in strictly increasing order.
public struct UpstreamsMessage: Hashable, Sendable {
    /// The most node IDs one message lists (a node has at most a few hundred connections).
    public static let maxNodes = 1_024

    /// The zone.
    public var zone: RecordZone.ID
    /// The incarnation of the zone the subscription is for.
    public var incarnation: NodeID
    /// The nodes, sorted ascending, without duplicates.
    public var nodes: [NodeID]

    /// Creates the message; `nodes` are sorted and deduplicated.
    public init(zone: RecordZone.ID, incarnation: NodeID, nodes: some Sequence<NodeID>) {
        self.zone = zone
        self.incarnation = incarnation
        self.nodes = Array(Set(nodes)).sorted()
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        let size = WireSize.zoneID(zone) &+ 16 &+ WireSize.varint(UInt64(nodes.count)) &+ 16 &* nodes.count
        return WireWriter.encode(size: size) { w in
            w.writeZoneID(zone)
            w.writeNodeID(incarnation)
            w.writeVarint(UInt64(nodes.count))
            for n in nodes { w.writeNodeID(n) }
        }
    }

    /// Decodes an upstreams payload.
    /// - Throws: ``WireError`` for malformed, non-canonical (unsorted or repeated node IDs) or
    ///   over-limit input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the upstreams message") {
            (r) throws(WireError) -> UpstreamsMessage in
            let zone = try r.readZoneID()
            let incarnation = try r.readNodeID("zone incarnation")
            let n = try r.readCount(
                max: Self.maxNodes, "upstream count", limitName: "maxNodes", owner: "UpstreamsMessage")
            try r.require(n, each: 16, "upstream node IDs")
            var nodes = [NodeID]()
            nodes.reserveCapacity(n)
            for _ in 0..<n {
                let at = r.offset
                let node = try r.readNodeID("upstream node")
                if let last = nodes.last, !(last < node) {
                    throw WireError(
                        last == node ? .duplicate : .unsorted, at: at,
                        "upstream node IDs must be strictly increasing; \(node.short) follows \(last.short)")
                }
                nodes.append(node)
            }
            var m = UpstreamsMessage(zone: zone, incarnation: incarnation, nodes: [])
            m.nodes = nodes
            return m
        }
    }
}
