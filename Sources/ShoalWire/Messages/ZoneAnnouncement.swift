// ZoneAnnouncement: a zone a node replicates, as hello and zones messages list it.

/// One zone in a node's announcement: its ID, its incarnation, whether it was deleted, and the
/// owner's signed share when the zone has one.
///
/// Layout: zone name, zone owner (strings), incarnation (16 bytes), flags (bit 0: deleted; bit 1:
/// a share follows; other bits reserved), then the share (``ZoneShare``) when bit 1 is set: its
/// zone, incarnation and deleted flag equal the announcement's. Lists of announcements are strictly
/// increasing by zone ID (UTF-8 byte order of name, then owner).
public struct ZoneAnnouncement: Hashable, Sendable, CustomStringConvertible {
    /// The zone.
    public var zone: RecordZone.ID
    /// Which life of the zone this is: a zone deleted and created again gets a new incarnation.
    public var incarnation: NodeID
    /// Whether this incarnation was deleted.
    public var isDeleted: Bool
    /// The owner's signed share of the zone; nil for a zone without one (open to every trusted
    /// device, Spec/security.md §6.4).
    public var share: ZoneShare?

    /// Creates an announcement.
    public init(zone: RecordZone.ID, incarnation: NodeID, isDeleted: Bool = false, share: ZoneShare? = nil) {
        self.zone = zone
        self.incarnation = incarnation
        self.isDeleted = isDeleted
        self.share = share
    }

    /// The announcement of `share`'s zone as the share states it.
    public init(share: ZoneShare) {
        self.init(zone: share.zone, incarnation: share.incarnation, isDeleted: share.isDeleted, share: share)
    }

    public var description: String {
        "\(zone) (\(incarnation.short))\(isDeleted ? " deleted" : "")\(share.map { " shared #\($0.serial)" } ?? "")"
    }

    var encodedSize: Int {
        WireSize.string(zone.name) &+ WireSize.string(zone.owner) &+ 17 &+ (share?.encodedSize ?? 0)
    }

    func encode(into w: inout WireWriter) {
        w.writeString(zone.name)
        w.writeString(zone.owner)
        w.writeNodeID(incarnation)
        w.writeByte((isDeleted ? 1 : 0) | (share != nil ? 2 : 0))
        share?.encode(into: &w)
    }

    static func decode(from r: inout WireReader) throws(WireError) -> ZoneAnnouncement {
        let zone = try r.readZoneID()
        let incarnation = try r.readNodeID("zone incarnation")
        let at = r.offset
        let flags = try r.readByte("zone flags")
        guard flags & ~3 == 0 else {
            throw WireError(.unknownRequiredTag, at: at, "zone flags 0x\(Hex.string([flags])) set reserved bits")
        }
        var share: ZoneShare? = nil
        if flags & 2 != 0 {
            let shareAt = r.offset
            let s = try ZoneShare.decode(from: &r)
            guard s.zone == zone, s.incarnation == incarnation, s.isDeleted == (flags & 1 != 0) else {
                throw WireError(
                    .invalidValue, at: shareAt,
                    "the share of zone \(zone) (incarnation \(incarnation.hex)\(flags & 1 != 0 ? ", deleted" : "")) is for \(s.zone) (incarnation \(s.incarnation.hex)\(s.isDeleted ? ", deleted" : "")), not for the zone as announced"
                )
            }
            share = s
        }
        return ZoneAnnouncement(zone: zone, incarnation: incarnation, isDeleted: flags & 1 != 0, share: share)
    }

    static func size(of list: [ZoneAnnouncement]) -> Int {
        list.reduce(WireSize.varint(UInt64(list.count))) { $0 &+ $1.encodedSize }
    }

    static func write(_ list: [ZoneAnnouncement], into w: inout WireWriter) {
        w.writeVarint(UInt64(list.count))
        for z in list { z.encode(into: &w) }
    }

    /// Reads a list, checking count, order and uniqueness.
    static func readList(from r: inout WireReader) throws(WireError) -> [ZoneAnnouncement] {
        let n = try r.readCount(max: r.limits.maxMessageItems, "zone count", limitName: "maxMessageItems")
        try r.require(n &* 21, "\(n) zones")
        var out = [ZoneAnnouncement]()
        out.reserveCapacity(n)
        for _ in 0..<n {
            let at = r.offset
            let z = try decode(from: &r)
            if let p = out.last?.zone, !(p < z.zone) {
                throw WireError(
                    p == z.zone ? .duplicate : .unsorted, at: at,
                    "zones must be listed once each in increasing order; \(z.zone) follows \(p)")
            }
            out.append(z)
        }
        return out
    }
}

extension WireReader {
    /// Reads a zone ID: name, then owner, both non-empty names.
    package mutating func readZoneID() throws(WireError) -> RecordZone.ID {
        RecordZone.ID(name: try readName("zone name"), owner: try readName("zone owner"))
    }
}

extension WireWriter {
    /// Writes a zone ID: name, then owner.
    package mutating func writeZoneID(_ z: RecordZone.ID) {
        writeString(z.name)
        writeString(z.owner)
    }
}

extension WireSize {
    /// Size of ``WireWriter/writeZoneID(_:)``.
    package static func zoneID(_ z: RecordZone.ID) -> Int { string(z.name) &+ string(z.owner) }
}
