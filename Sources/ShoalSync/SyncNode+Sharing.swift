// SyncNode+Sharing: zone owners and members — who may learn of, read and write each zone.

public import ShoalWire
public import ShoalStore
import ShoalTrust

extension SyncNode {
    /// The share this node holds for `zone`, if any (read from the store once).
    func heldShare(_ zone: RecordZone.ID) async -> HeldShare? {
        await shares.share(of: zone)
    }

    /// How many zones' shares were read from the store (for tests).
    var sharesRead: Int { shares.zonesRead }

    /// Keeps `share` as the zone's share, durably (``ZoneShares/keep(_:owner:)``).
    func keep(_ share: ZoneShare, owner: DeviceID) async throws(ShoalError) {
        try await shares.keep(share, owner: owner)
    }

    /// What the device of connection `id` may do with `zone`.
    func access(_ id: ConnectionID, _ zone: RecordZone.ID) async -> ZoneAccess {
        guard let session = sessions[id] else { return .none }
        guard let device = session.device else { return .owner }
        return await access(device, zone)
    }

    /// What `device` may do with `zone`.
    func access(_ device: DeviceID, _ zone: RecordZone.ID) async -> ZoneAccess {
        guard let held = await heldShare(zone) else { return .write }
        return held.access(of: device)
    }

    /// The zones announced on connection `id`: those of `all` (this node's announced zones, read
    /// here when not given) its device may read, each with its share, and the purged zones the
    /// peer announced with the purged incarnation, as deleted (Spec/replication.md §4.1).
    func announcedZones(for id: ConnectionID, of all: [ZoneAnnouncement]? = nil) async -> [ZoneAnnouncement] {
        var out = [ZoneAnnouncement]()
        var zones: [ZoneAnnouncement]
        if let all { zones = all } else { zones = await announcedZones() }
        if let purged = sessions[id]?.purgedAnnounced, !purged.isEmpty {
            let held = Set(zones.map(\.zone))
            zones += purged.filter { !held.contains($0.key) }.map {
                ZoneAnnouncement(zone: $0.key, incarnation: $0.value, isDeleted: true)
            }
            zones.sort { $0.zone < $1.zone }
        }
        let removed = sessions[id]?.tellRemoved ?? []
        for a in zones {
            guard await access(id, a.zone) >= .read || removed.contains(a.zone) else { continue }
            if let held = await heldShare(a.zone) {
                // The share states the zone as its owner last signed it; this node's own state
                // of the zone follows it (a member never deletes or re-creates an owned zone).
                out.append(
                    held.share.incarnation == a.incarnation && held.share.isDeleted == a.isDeleted
                        ? ZoneAnnouncement(share: held.share) : a)
            } else {
                out.append(a)
            }
        }
        return out
    }

    /// The owner and members of `zone` as this node holds them; nil for a zone without a share.
    public func share(of zone: RecordZone.ID) async -> (owner: DeviceID, share: ZoneShare)? {
        guard let held = await heldShare(zone) else { return nil }
        return (held.owner, held.share)
    }

    // MARK: Local changes (the owner's)

    /// Creates `zone` owned by this device (or returns it when it is live here already): its
    /// share, with no members, is stored before the zone exists, so no peer ever learns of the
    /// zone without it. A zone this device owned before and deleted keeps its members in its new
    /// incarnation. Without a signing key the zone is open to every trusted device.
    /// - Throws: ``ShoalError`` `invalidArguments` for a bad name, `permissionFailure` for a
    ///   deleted zone another device owns (it re-creates it, and members follow), or
    ///   `internalError` when the store fails.
    @discardableResult
    public func createZone(_ zone: RecordZone.ID) async throws(ShoalError) -> ZoneInfo {
        if let info = try? await store.zone(zone) { return info }
        guard let signer else { return try await store.createZone(zone) }
        let held = await heldShare(zone)
        if let held, held.owner != signer.device {
            throw .permissionFailure(
                "zone \(zone) is owned by device \(held.owner), which deleted it; only its owner creates it again")
        }
        let incarnation = store.newIdentifier()
        let share = signer.sign(
            ZoneShare(
                zone: zone, incarnation: incarnation, serial: (held?.share.serial ?? 0) &+ 1,
                ownerKey: signer.publicKeyDER, members: held?.share.members ?? []))
        try await keep(share, owner: signer.device)
        return try await store.createZone(zone, incarnation: incarnation)
    }

    /// Deletes `zone` here. The owner's deletion is signed into the zone's share, so its members
    /// delete it too; a member's deletion stays on this node (Spec/security.md §6.3), and a zone
    /// without a share is deleted on every peer, as before shares.
    /// - Throws: ``ShoalError`` `zoneNotFound`, `permissionFailure` for a read-only zone.
    public func deleteZone(_ zone: RecordZone.ID) async throws(ShoalError) {
        let info = try await store.zone(zone)
        if let signer, let held = await heldShare(zone), held.owner == signer.device, !held.share.isDeleted {
            var share = held.share
            share.serial &+= 1
            share.isDeleted = true
            share.incarnation = info.incarnation
            try await keep(signer.sign(share), owner: signer.device)
        }
        try await store.deleteZone(zone)
    }

    /// Shares `zone` with `device` as `role`, or stops sharing it (`role` nil). Only the zone's
    /// owner changes its members; a zone without a share becomes this device's on its first share.
    /// Connections of the device whose access changed restart, so what they follow matches the
    /// new share; the other peers learn of it in a `zones` message.
    /// - Returns: what to send, per connection.
    /// - Throws: ``ShoalError`` `permissionFailure` for a zone another device owns,
    ///   `invalidArguments` for this device itself or a node without a key, `zoneNotFound`,
    ///   `limitExceeded` past ``ZoneShare/maxMembers``.
    public func setMember(_ device: DeviceID, role: ZoneShare.Role?, of zone: RecordZone.ID) async throws(ShoalError)
        -> [ConnectionID: [SyncOutput]]
    {
        guard let signer else { throw .invalidArguments("node \(nodeID.short) has no device key to sign shares with") }
        guard device != signer.device else {
            throw .invalidArguments("\(device) is this device, the zone's owner; share the zone with another device")
        }
        let info = try await store.zone(zone)
        let held = await heldShare(zone)
        if let held, held.owner != signer.device {
            throw .permissionFailure(
                "zone \(zone) is owned by device \(held.owner); only its owner changes who it is shared with")
        }
        var share =
            held?.share
            ?? ZoneShare(
                zone: zone, incarnation: info.incarnation, serial: 0, ownerKey: signer.publicKeyDER, members: [])
        var members = share.members.filter { $0.device != device }
        if let role { members.append(ZoneShare.Member(device: device, role: role)) }
        guard members.count <= ZoneShare.maxMembers else {
            throw .limitExceeded(
                "zone \(zone) is shared with \(ZoneShare.maxMembers) devices, the most a share lists (ZoneShare.maxMembers)"
            )
        }
        share.members = members.sorted { $0.device < $1.device }
        share.serial &+= 1
        share.incarnation = info.incarnation
        share.isDeleted = false
        try await keep(signer.sign(share), owner: signer.device)
        return await shareChanged(zone, devices: [device])
    }

    /// After `zone`'s share changed here: connections of `devices` (whose access changed) say
    /// goodbye and reconnect, every other peer is told the zones again.
    func shareChanged(_ zone: RecordZone.ID, devices: Set<DeviceID>) async -> [ConnectionID: [SyncOutput]] {
        var result = restart(
            devices, except: nil,
            reason: "the share of zone \(zone) changed on node \(nodeID.short); reconnect to follow it")
        for (id, more) in await announceZones() where result[id] == nil { result[id] = more }
        return result
    }

    /// Says goodbye on, and closes, every open connection of `devices` but `except`: what they
    /// may follow changed, and a new hello exchanges it afresh.
    func restart(_ devices: Set<DeviceID>, except: ConnectionID?, reason: String) -> [ConnectionID: [SyncOutput]] {
        var result = [ConnectionID: [SyncOutput]]()
        for (id, s) in sessions.sorted(by: { $0.key.rawValue < $1.key.rawValue })
        where id != except && s.phase != .closed {
            guard let d = s.device, devices.contains(d) else { continue }
            result[id] = [.send(Frame(type: .goodbye, payload: GoodbyeMessage(reason: reason).encoded())), .close(nil)]
            sessions[id]?.phase = .closed
        }
        return result
    }

    // MARK: A peer's announcements

    /// Handles an announcement that carries a share: adopts the share when its owner signed it,
    /// it is the zone's owner's (the one this node holds, if any) and it is newer than the one
    /// held, and brings the zone in line with it. Returns the devices whose access changed.
    /// Anything else is ignored (counted in ``Statistics/sharesIgnored``): a share is the only way
    /// a peer changes an owned zone (Spec/security.md §6.3).
    /// `mine` is the zone as this node holds it (nil: not at all); the caller has checked that
    /// the announcement's new zones fit under `maxZones`.
    func adoptShare(_ a: ZoneAnnouncement, _ share: ZoneShare, mine: ZoneAnnouncement?, on id: ConnectionID)
        async throws(SyncFailure) -> Set<DeviceID>
    {
        let from = sessions[id]?.device.map { "device \($0.short)" } ?? "connection \(id)"
        func ignore(_ why: String) -> Set<DeviceID> {
            statistics.sharesIgnored &+= 1
            logger.trace("\(nodeID.short) ignored the share of \(a.zone) from \(from): \(why)")
            return []
        }
        // What a share could change is checked before its signature, which costs a verification:
        // a share no newer than the one held, or for a zone this device is not a member of,
        // changes nothing, whoever signed it. A zone not held here is not looked up at all, so
        // announcing zones makes this node cache nothing of them.
        let claimedOwner = ShareSigner.device(ofKey: share.ownerKey)
        if mine == nil, let signer, share.role(of: signer.device) == nil, claimedOwner != signer.device {
            return ignore("this device is not a member")
        }
        // The deletion of a zone never held here leaves nothing to do, and nothing to keep: such
        // shares, however many a device signs, cost neither a verification nor a row.
        if mine == nil, share.isDeleted { return [] }
        var held = await heldShare(a.zone)
        if let held, claimedOwner == held.owner, share.serial <= held.share.serial {
            // A removed member that announces the zone with an older share is told of the newer
            // one, which no longer lists it (Spec/security.md §6.3).
            if share.serial < held.share.serial, let d = sessions[id]?.device, share.role(of: d) != nil,
                held.share.role(of: d) == nil, d != held.owner
            {
                sessions[id]?.tellRemoved.insert(a.zone)
            }
            return []
        }
        if held == nil || claimedOwner != held?.owner, let signer, share.role(of: signer.device) == nil,
            claimedOwner != signer.device
        {
            // Not a member: nothing to hold (the zone stays as it is here, if it is here).
            return ignore("this device is not a member")
        }
        guard let owner = share.verifiedOwner else {
            sessions[id]?.badShares &+= 1
            if (sessions[id]?.badShares ?? 0) > Self.maxBadShares {
                throw SyncFailure(
                    .invalidArguments,
                    "the peer announced more than \(Self.maxBadShares) shares whose signatures do not verify (SyncNode.maxBadShares); closing"
                )
            }
            return ignore("its signature does not verify under its owner key")
        }
        // A zone ID held live here belongs to the owner whose share this node adopted first;
        // once the zone is gone here (deleted, or never created), another owner's share may take
        // the name (Spec/security.md §6.3, squatting).
        let live = mine.map { !$0.isDeleted } ?? false
        if let h = held, h.owner != owner {
            guard !live else {
                return ignore("it names owner \(owner.short); this node holds the zone as owned by \(h.owner.short)")
            }
            held = nil
            shares.forgetCounts()
        }
        if held == nil, let m = mine, live, m.incarnation != share.incarnation {
            // A zone held here without a share, in another incarnation, is another zone under the
            // same name (planted by a peer before shares, or made here): its records are never
            // merged into the owner's zone. Deleting the copy here lets the share in.
            return ignore(
                "zone \(a.zone) is held here without a share in another incarnation; its records stay out of the owner's zone (delete the copy here to follow the owner's share)"
            )
        }
        do throws(ShoalError) {
            try await follow(share, in: a.zone, owner: owner, mine: mine)
        } catch {
            throw SyncFailure(.internalError, "could not apply the share of zone \(a.zone) from \(from): \(error)")
        }
        logger.trace("\(nodeID.short) adopted \(share) from \(from)")
        // Devices whose role changed, the owner's unchanged.
        var changed = Set<DeviceID>()
        let before = Dictionary(uniqueKeysWithValues: (held?.share.members ?? []).map { ($0.device, $0.role) })
        let after = Dictionary(uniqueKeysWithValues: share.members.map { ($0.device, $0.role) })
        for d in Set(before.keys).union(after.keys) where before[d] != after[d] { changed.insert(d) }
        if held == nil { changed.insert(owner) }
        return changed
    }

    /// Makes the zone of `share` (verified, signed by `owner`) follow it here: deleted for a
    /// deleting share, otherwise created, revived or re-incarnated with this device's role, the
    /// zone and the share in one commit (``Store/followShare(zone:scope:readOnly:incarnation:key:share:)``).
    /// `zone`: the zone as announced; `mine`: this node's announcement of it, if it holds it.
    func follow(_ share: ZoneShare, in zone: RecordZone.ID, owner: DeviceID, mine: ZoneAnnouncement?)
        async throws(ShoalError)
    {
        // A device the share no longer lists (removed by the owner) keeps its copy, read-only.
        let readOnly = signer.map { share.role(of: $0.device) != .readWrite && owner != $0.device } ?? false
        if share.isDeleted {
            if let m = mine, !m.isDeleted, m.incarnation == share.incarnation {
                try await store.deleteZone(zone, asReplica: true)
                knowledgeCache[zone] = nil
                restartPending = true
            }
            try await keep(share, owner: owner)
        } else {
            // The zone and its share in one commit: a power cut never leaves the zone held
            // here without the share that says who may write it.
            let scope: DatabaseScope = owner == signer?.device ? .private : .shared
            switch try await store.followShare(
                zone: zone, scope: scope, readOnly: readOnly, incarnation: share.incarnation,
                key: .share(zone: share.zone), share: share.encoded())
            {
            case .created:
                shares.noteZoneCreated(ownedBy: owner)
                announcePending = true
            case .revived:
                restartPending = true
            case .adoptedIncarnation:
                // The owner deleted and re-created the zone, or this node held it before the
                // owner shared it: the owner's incarnation wins.
                knowledgeCache[zone] = nil
                restartPending = true
            case .kept:
                break
            }
            shares.stored(share, owner: owner)
        }
    }
}

// MARK: Bounds on what announcements create

extension SyncNode {
    /// How many shares whose signatures do not verify a connection may announce before it is
    /// closed: an honest peer relays only shares that verified where it adopted them.
    static let maxBadShares = 8

    /// Checks the zones `announced` would create here (zones held here are in `local`, purged
    /// ones in `purged`) before any is made. Zones of an owner past
    /// ``SyncConfiguration/maxZonesPerOwner`` are returned, to be left out; when the owner is the
    /// announcing device itself, or when every new zone together would pass
    /// ``SyncConfiguration/maxZones``, the announcement creates nothing and the connection closes
    /// with `limitExceeded`. The messages name the limit, never how many zones this node holds
    /// (Spec/replication.md §3.3).
    func checkNewZones(
        _ announced: [ZoneAnnouncement], local: [RecordZone.ID: ZoneAnnouncement], purged: [RecordZone.ID: NodeID],
        on id: ConnectionID
    ) async throws(SyncFailure) -> Set<RecordZone.ID> {
        var new = 0
        var byOwner = [DeviceID: [RecordZone.ID]]()
        for a in announced where !a.isDeleted && local[a.zone] == nil && purged[a.zone] != a.incarnation {
            if let share = a.share {
                let owner = ShareSigner.device(ofKey: share.ownerKey)
                // Only a share that names this device (or its owner) makes a zone (adoptShare);
                // the signature is checked there, once the share has passed this count.
                if let signer, owner != signer.device, share.role(of: signer.device) == nil { continue }
                byOwner[owner, default: []].append(a.zone)
                new &+= 1
            } else if signer == nil {
                new &+= 1
            }
        }
        guard new > 0 else { return [] }
        let from = sessions[id]?.device
        var leftOut = Set<RecordZone.ID>()
        for (owner, zones) in byOwner.sorted(by: { $0.key < $1.key }) {
            let held = await shares.zonesOwned(by: owner)
            guard held &+ zones.count > configuration.maxZonesPerOwner else { continue }
            if owner == from {
                throw SyncFailure(
                    .limitExceeded,
                    "the peer announced zones it owns past node \(nodeID.short)'s limit of zones for one owner (SyncConfiguration.maxZonesPerOwner = \(configuration.maxZonesPerOwner)); none was created"
                )
            }
            statistics.zonesRefusedForOwnerLimit &+= zones.count
            logger.trace(
                "\(nodeID.short) left out \(zones.count) zone(s) of device \(owner.short) announced on \(id): past SyncConfiguration.maxZonesPerOwner"
            )
            leftOut.formUnion(zones)
            new &-= zones.count
        }
        if new > 0, await store.zoneCount &+ new > configuration.maxZones {
            throw SyncFailure(
                .limitExceeded,
                "the peer announced zones new to node \(nodeID.short) past its limit of zones (SyncConfiguration.maxZones = \(configuration.maxZones)); none was created"
            )
        }
        return leftOut
    }
}
