// HelloMessage: the first frame each side sends — versions, identity, capabilities, zones.

/// The payload of a ``FrameType/hello`` frame (Spec/replication.md, "Hello").
///
/// Layout: lowest and highest protocol version spoken (varints), node ID (16 bytes), node name
/// (string, for logs), capabilities (varint bit set), dictionary IDs held (count, then u32
/// little-endian each, strictly increasing), the largest frame payload the sender accepts
/// (varint), then the zones the sender replicates (``ZoneAnnouncement`` list).
public struct HelloMessage: Hashable, Sendable {
    /// Lowest protocol version the sender speaks.
    public var minimumVersion: UInt64
    /// Highest protocol version the sender speaks.
    public var maximumVersion: UInt64
    /// The sender's node ID.
    public var node: NodeID
    /// A human-readable name for logs (may be empty).
    public var name: String
    /// Optional features the sender supports; receivers ignore bits they do not know.
    public var capabilities: UInt64
    /// The zstd dictionaries the sender holds (it can decode frames that use them).
    public var dictionaries: [UInt32]
    /// The largest frame payload the sender accepts, in bytes.
    public var maxFramePayloadBytes: UInt64
    /// The zones the sender replicates.
    public var zones: [ZoneAnnouncement]

    /// Capability bit 3: the sender's frame reader accepts compression 3, a zstd stream per
    /// connection direction (Spec/wire-format.md §14.3). A node sends compression-3 frames only to
    /// a peer whose hello set it. ShoalNet, which owns the framing, sets it in the hellos it sends.
    public static let streamCompressionCapability: UInt64 = 1 << 3

    /// Creates a hello.
    public init(
        minimumVersion: UInt64 = 1, maximumVersion: UInt64 = 1, node: NodeID, name: String = "",
        capabilities: UInt64 = 0, dictionaries: [UInt32] = [BuiltInDictionaries.recordsID],
        maxFramePayloadBytes: UInt64 = UInt64(WireLimits.default.maxFramePayloadBytes), zones: [ZoneAnnouncement]
    ) {
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.node = node
        self.name = name
        self.capabilities = capabilities
        self.dictionaries = dictionaries
        self.maxFramePayloadBytes = maxFramePayloadBytes
        self.zones = zones
    }

    /// The canonical payload bytes. `dictionaries` and `zones` must be sorted and unique.
    public func encoded() -> [UInt8] {
        let size =
            WireSize.varint(minimumVersion) &+ WireSize.varint(maximumVersion) &+ 16 &+ WireSize.string(name)
            &+ WireSize.varint(capabilities) &+ WireSize.varint(UInt64(dictionaries.count)) &+ 4 &* dictionaries.count
            &+ WireSize.varint(maxFramePayloadBytes) &+ ZoneAnnouncement.size(of: zones)
        return WireWriter.encode(size: size) { w in
            w.writeVarint(minimumVersion)
            w.writeVarint(maximumVersion)
            w.writeNodeID(node)
            w.writeString(name)
            w.writeVarint(capabilities)
            w.writeVarint(UInt64(dictionaries.count))
            for d in dictionaries { w.writeFixed32(d) }
            w.writeVarint(maxFramePayloadBytes)
            ZoneAnnouncement.write(zones, into: &w)
        }
    }

    /// Decodes a hello payload.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the hello") { (r) throws(WireError) -> HelloMessage in
            let minimum = try r.readVarint("minimum version")
            let vAt = r.offset
            let maximum = try r.readVarint("maximum version")
            guard minimum >= 1, minimum <= maximum else {
                throw WireError(
                    .invalidValue, at: vAt, "version range \(minimum)–\(maximum) is empty or starts below 1")
            }
            let node = try r.readNodeID("node ID")
            let name = try r.readString(max: r.limits.maxNameBytes, "node name", limitName: "maxNameBytes")
            let capabilities = try r.readVarint("capabilities")
            let n = try r.readCount(max: r.limits.maxMessageItems, "dictionary count", limitName: "maxMessageItems")
            try r.require(n &* 4, "\(n) dictionary IDs")
            var dictionaries = [UInt32]()
            dictionaries.reserveCapacity(n)
            for _ in 0..<n {
                let at = r.offset
                let d = try r.readFixed32("dictionary ID")
                if let p = dictionaries.last, d <= p {
                    throw WireError(
                        d == p ? .duplicate : .unsorted, at: at,
                        "dictionary IDs must strictly increase; \(d) follows \(p)")
                }
                dictionaries.append(d)
            }
            let maxPayload = try r.readVarint("maximum frame payload")
            let zones = try ZoneAnnouncement.readList(from: &r)
            return HelloMessage(
                minimumVersion: minimum, maximumVersion: maximum, node: node, name: name, capabilities: capabilities,
                dictionaries: dictionaries, maxFramePayloadBytes: maxPayload, zones: zones)
        }
    }
}

/// The payload of a ``FrameType/zones`` frame: zones created or deleted since the hello.
public struct ZonesMessage: Hashable, Sendable {
    /// The zones that changed (same form and order rules as in the hello).
    public var zones: [ZoneAnnouncement]

    /// Creates a zones message.
    public init(zones: [ZoneAnnouncement]) { self.zones = zones }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: ZoneAnnouncement.size(of: zones)) { ZoneAnnouncement.write(zones, into: &$0) }
    }

    /// Decodes a zones payload.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the zones message") {
            (r) throws(WireError) -> ZonesMessage in
            ZonesMessage(zones: try ZoneAnnouncement.readList(from: &r))
        }
    }
}
