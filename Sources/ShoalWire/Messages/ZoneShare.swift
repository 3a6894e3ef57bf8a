// ZoneShare: a zone's owner and members, signed by the owner — CloudKit's CKShare in a P2P shape.

/// Who may read and write a zone: its owner (the device that created it) and the members the
/// owner shared it with, each read-only or read-write, signed with the owner's device key
/// (Spec/security.md §6).
///
/// A share travels inside the zone's announcement (``ZoneAnnouncement/share``), so any member can
/// pass it on and every receiver checks it against the owner's key, whoever relayed it. The owner
/// signs a new share, with a larger ``serial``, for every change: a member added or removed, a
/// role changed, the zone deleted or created again (a new ``incarnation``).
///
/// Layout (Spec/replication.md §3.1.1): zone ID, incarnation (16 bytes), serial (varint), flags
/// (bit 0: deleted; other bits reserved), owner key (bytes: the SubjectPublicKeyInfo DER of a
/// P-256 key, at most ``maxOwnerKeyBytes``), member count and members (device ID, 32 bytes, then
/// role, one byte), strictly increasing by device ID (a receiver ignores a share that lists its
/// owner), then the signature
/// (bytes: 64, the raw `r‖s` of ECDSA P-256 with SHA-256 over ``signedBytes``).
public struct ZoneShare: Hashable, Sendable, CustomStringConvertible {
    /// What a member may do with a zone.
    public enum Role: UInt8, Sendable, Hashable, Comparable, CustomStringConvertible {
        /// Receives the zone's records; its changes are refused.
        case readOnly = 1
        /// Receives the zone's records and sends changes to them.
        case readWrite = 2

        public static func < (a: Role, b: Role) -> Bool { a.rawValue < b.rawValue }
        public var description: String { self == .readOnly ? "read-only" : "read-write" }
    }

    /// One member of a share.
    public struct Member: Hashable, Sendable {
        /// The member's device.
        public var device: DeviceID
        /// What it may do.
        public var role: Role
        /// Creates a member.
        public init(device: DeviceID, role: Role) {
            self.device = device
            self.role = role
        }
    }

    /// The longest owner key accepted, in bytes (a P-256 SubjectPublicKeyInfo is 91).
    public static let maxOwnerKeyBytes = 256
    /// The length of a signature, in bytes.
    public static let signatureBytes = 64
    /// The most members a share lists.
    public static let maxMembers = 1024
    /// The bytes that start what is signed, so a share's signature means nothing elsewhere.
    public static let signatureContext: [UInt8] = Array("shoal zone share v1\0".utf8)

    /// The zone.
    public var zone: RecordZone.ID
    /// The life of the zone this share is for.
    public var incarnation: NodeID
    /// Increases with every share the owner signs for the zone; the larger serial wins.
    public var serial: UInt64
    /// Whether the owner deleted this incarnation.
    public var isDeleted: Bool
    /// The owner's public key, SubjectPublicKeyInfo DER; its SHA-256 is the owner's device ID.
    public var ownerKey: [UInt8]
    /// The members, in increasing order of device ID.
    public var members: [Member]
    /// The owner's signature of ``signedBytes`` (empty until signed).
    public var signature: [UInt8]

    /// Creates a share; members are sorted by device ID.
    public init(
        zone: RecordZone.ID, incarnation: NodeID, serial: UInt64, isDeleted: Bool = false, ownerKey: [UInt8],
        members: [Member], signature: [UInt8] = []
    ) {
        self.zone = zone
        self.incarnation = incarnation
        self.serial = serial
        self.isDeleted = isDeleted
        self.ownerKey = ownerKey
        self.members = members.sorted { $0.device < $1.device }
        self.signature = signature
    }

    /// The role of `device`, if it is a member.
    public func role(of device: DeviceID) -> Role? {
        members.first { $0.device == device }?.role
    }

    public var description: String {
        "share of \(zone) (\(incarnation.short)) #\(serial)\(isDeleted ? " deleted" : ""): "
            + (members.isEmpty ? "no members" : members.map { "\($0.device.short) \($0.role)" }.joined(separator: ", "))
    }

    /// What the owner signs: ``signatureContext`` followed by the encoding up to the signature.
    public var signedBytes: [UInt8] {
        WireWriter.encode(size: Self.signatureContext.count &+ unsignedSize) { w in
            for b in Self.signatureContext { w.writeByte(b) }
            encodeUnsigned(into: &w)
        }
    }

    /// The canonical encoding.
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: encodedSize) { w in encode(into: &w) }
    }

    /// Decodes a share (without checking its signature: that needs the owner's key algorithm,
    /// which the receiving node checks).
    /// - Throws: `WireError` for truncated or malformed input, unsorted or duplicate members, an
    ///   unknown role or flag, or a limit exceeded. (A share that lists its owner as a member
    ///   decodes; the receiving node refuses it with the signature check.)
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the zone share") { (r) throws(WireError) in
            try Self.decode(from: &r)
        }
    }

    var unsignedSize: Int {
        WireSize.zoneID(zone) &+ 16 &+ WireSize.varint(serial) &+ 1 &+ WireSize.varint(UInt64(ownerKey.count))
            &+ ownerKey.count
            &+ WireSize.varint(UInt64(members.count)) &+ members.count &* (DeviceID.byteCount &+ 1)
    }

    var encodedSize: Int { unsignedSize &+ WireSize.varint(UInt64(signature.count)) &+ signature.count }

    func encodeUnsigned(into w: inout WireWriter) {
        w.writeZoneID(zone)
        w.writeNodeID(incarnation)
        w.writeVarint(serial)
        w.writeByte(isDeleted ? 1 : 0)
        w.writeBytes(ownerKey)
        w.writeVarint(UInt64(members.count))
        for m in members {
            for b in m.device.bytes { w.writeByte(b) }
            w.writeByte(m.role.rawValue)
        }
    }

    func encode(into w: inout WireWriter) {
        encodeUnsigned(into: &w)
        w.writeBytes(signature)
    }

    static func decode(from r: inout WireReader) throws(WireError) -> ZoneShare {
        let zone = try r.readZoneID()
        let incarnation = try r.readNodeID("share incarnation")
        let serial = try r.readVarint("share serial")
        var at = r.offset
        let flags = try r.readByte("share flags")
        guard flags & ~1 == 0 else {
            throw WireError(.unknownRequiredTag, at: at, "share flags 0x\(Hex.string([flags])) set reserved bits")
        }
        at = r.offset
        let keyLength = try r.readLength(
            max: maxOwnerKeyBytes, "share owner key", limitName: "maxOwnerKeyBytes", owner: "ZoneShare")
        guard keyLength > 0 else { throw WireError(.invalidValue, at: at, "share owner key is empty") }
        let ownerKey = try r.readBytes(keyLength, "share owner key")
        let n = try r.readCount(max: maxMembers, "share member count", limitName: "maxMembers", owner: "ZoneShare")
        try r.require(n &* (DeviceID.byteCount &+ 1), "\(n) share members")
        var members = [Member]()
        members.reserveCapacity(n)
        for _ in 0..<n {
            at = r.offset
            guard let device = DeviceID(bytes: try r.readBytes(DeviceID.byteCount, "member device ID")) else {
                throw WireError(.truncated, at: at, "member device ID")
            }
            let roleAt = r.offset
            let raw = try r.readByte("member role")
            guard let role = Role(rawValue: raw) else {
                throw WireError(.invalidValue, at: roleAt, "member role \(raw) is not 1 (read-only) or 2 (read-write)")
            }
            if let p = members.last?.device, !(p < device) {
                throw WireError(
                    p == device ? .duplicate : .unsorted, at: at,
                    "share members must be listed once each in increasing order of device ID")
            }
            members.append(Member(device: device, role: role))
        }
        at = r.offset
        let sigLength = try r.readLength(
            max: signatureBytes, "share signature", limitName: "signatureBytes", owner: "ZoneShare")
        guard sigLength == signatureBytes else {
            throw WireError(
                .invalidValue, at: at, "share signature is \(sigLength) bytes; it must be \(signatureBytes)")
        }
        let signature = try r.readBytes(sigLength, "share signature")
        var share = ZoneShare(
            zone: zone, incarnation: incarnation, serial: serial, isDeleted: flags & 1 != 0, ownerKey: ownerKey,
            members: [], signature: signature)
        share.members = members
        return share
    }
}
