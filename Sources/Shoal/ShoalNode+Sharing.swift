// ShoalNode+Sharing: sharing the zones this device owns with other devices, read-only or read-write.

extension ShoalNode {
    /// Who may read and write a zone: its owner and members.
    public struct ZoneMembers: Sendable, Hashable {
        /// The zone.
        public var zone: RecordZone.ID
        /// The device that owns the zone; nil for a zone without a share (open to every trusted
        /// device, as zones held before shares existed are).
        public var owner: DeviceID?
        /// The members and their roles, in device ID order.
        public var members: [ZoneShare.Member]
        /// The share's serial: it grows with every change the owner makes.
        public var serial: UInt64
        /// This device's role: nil for the owner and for a zone without a share.
        public var role: ZoneShare.Role?
    }

    /// Shares `zone`, which this device owns, with `device` as `role` (or changes its role). The
    /// device's connections restart at once so what they follow matches; it learns of the zone
    /// and, read-write, may send changes to it. A zone without a share becomes this device's.
    /// - Throws: `ShoalError` `notAuthenticated` for a device this node does not trust (trust
    ///   it first: a typo in a device ID would otherwise share the zone with nobody, silently),
    ///   `zoneNotFound`, `permissionFailure` for a zone another device owns, `invalidArguments`
    ///   for this device's own ID, `limitExceeded` past `ZoneShare.maxMembers` members.
    public func shareZone(_ zone: RecordZone.ID, with device: DeviceID, role: ZoneShare.Role) async throws(ShoalError) {
        guard device == deviceID || devices.contains(where: { $0.device == device }) else {
            throw .notAuthenticated(
                "\(device) is not a trusted device; trust it first (shoal peer add \(device)), then share zone \(zone) with it"
            )
        }
        await network.deliver(try await sync.setMember(device, role: role, of: zone))
    }

    /// Stops sharing `zone` with `device`: its connections restart at once, it no longer learns
    /// of the zone, is served nothing of it and its changes to it are refused. What it received
    /// before stays on it.
    /// - Throws: `ShoalError` `zoneNotFound`, `permissionFailure` for a zone another device
    ///   owns, `invalidArguments` for a device that is not a member.
    public func unshareZone(_ zone: RecordZone.ID, from device: DeviceID) async throws(ShoalError) {
        guard let held = await sync.share(of: zone), held.share.role(of: device) != nil else {
            throw .invalidArguments("zone \(zone) is not shared with \(device)")
        }
        await network.deliver(try await sync.setMember(device, role: nil, of: zone))
    }

    /// The owner and members of `zone` as this node holds them.
    /// - Throws: `ShoalError` `zoneNotFound`.
    public func members(of zone: RecordZone.ID) async throws(ShoalError) -> ZoneMembers {
        _ = try await store.zone(zone)
        guard let held = await sync.share(of: zone) else {
            return ZoneMembers(zone: zone, owner: nil, members: [], serial: 0, role: nil)
        }
        return ZoneMembers(
            zone: zone, owner: held.owner, members: held.share.members, serial: held.share.serial,
            role: held.share.role(of: deviceID))
    }
}
