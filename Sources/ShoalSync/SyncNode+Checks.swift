// SyncNode+Checks: what a receiver checks in what a peer states, before using any of it.

import ShoalWire
import ShoalStore

/// The checks of Spec/replication.md §3.8. A peer states versions (`changes`) and knowledge
/// (`changes`, `subscribe`, `acknowledgement`); the node uses none of it until it passed:
/// - no timestamp more than `maxForwardDrift` ahead of this node's wall clock, for any node;
/// - no write of this node's own ID it never made: in a version, nothing of ours newer than our
///   newest write *of that record* (its stored version, or the zone's purge horizon); in stated
///   knowledge, nothing newer than our newest write in the zone;
/// - caught-up knowledge is adopted only as far as the zone shows after the batch (the zone's
///   vector and purge horizon); the rest of the claim is dropped, not refused (§3.8 says why).
extension SyncNode {
    /// The latest wall-clock millisecond a peer's timestamp may carry now, and the reading it
    /// was computed from (the store's wall clock, so simulations drive it).
    func clockLimit() -> (limit: UInt64, wall: UInt64, drift: UInt64) {
        let (wall, drift) = store.remoteClockBound()
        let (sum, overflow) = wall.addingReportingOverflow(drift)
        return (overflow ? .max : sum, wall, drift)
    }

    /// A refusal: counted, traced, and thrown to close the connection with an error frame.
    func refusal(_ message: String, knowledgeOnly: Bool, code: ShoalError.Code = .invalidArguments) -> SyncFailure {
        if knowledgeOnly { statistics.refusedKnowledge &+= 1 } else { statistics.refusedBatches &+= 1 }
        logger.trace("\(nodeID.short) refused: \(message)")
        return SyncFailure(code, message)
    }

    /// The first timestamp of `v` beyond `limit` (wall-clock milliseconds), if any.
    static func beyond(_ limit: UInt64, in v: VersionVector) -> VersionVector.Entry? {
        v.entries.first { $0.hlc.milliseconds > limit }
    }

    /// Checks knowledge a peer states in `subscribe` or `acknowledgement` (or in `changes`):
    /// within the clock bound, and nothing of this node's newer than its newest write in the zone.
    func checkStated(_ k: VersionVector, zone: RecordZone.ID, what: String, knowledgeOnly: Bool)
        async throws(SyncFailure)
    {
        let clock = clockLimit()
        if let e = Self.beyond(clock.limit, in: k) {
            throw refusal(
                "\(what) states knowledge of node \(e.node.short) at \(e.hlc), \(e.hlc.milliseconds &- clock.wall) ms ahead of node \(nodeID.short)'s clock (limit \(clock.drift) ms); refused (Spec/replication.md §3.8)",
                knowledgeOnly: knowledgeOnly)
        }
        let claimed = k[nodeID]
        guard claimed != .zero else { return }
        // The zone's vector as stored now (not the cached knowledge): this node's newest write.
        let own = ((try? await store.zone(zone))?.versionVector ?? VersionVector())[nodeID]
        if claimed > own {
            throw refusal(
                "\(what) states knowledge of node \(nodeID.short)'s writes up to \(claimed) in zone \(zone); its newest write there is \(own.rawValue == 0 ? "none" : "\(own)"); refused (Spec/replication.md §3.8)",
                knowledgeOnly: knowledgeOnly)
        }
    }

    /// Checks a `changes` batch before any of it is applied: every version (whole, and sparse
    /// ones as rebuilt) and the knowledge it carries. Throws the refusal; nothing is stored.
    func checkBatch(_ m: ChangesMessage, records: [Record], from peer: NodeID) async throws(SyncFailure) {
        let clock = clockLimit()
        let what = "batch \(m.batch) of zone \(m.zone) from \(peer.short)"
        // Every dot of a version: its vector's entries, and the creation and field stamps (which a
        // valid version's vector covers, checked here all the same).
        var own = [(Record.ID, HLC)]()
        // A vector entry of ours that is no head only says the version saw that write: a version
        // created or lifted over a purge horizon carries the horizon's entries, which name our
        // writes to other records (§3.5.3). It is bounded by our newest write in the zone.
        var seenOnly = HLC.zero
        for r in records {
            var newest = HLC.zero
            let isHead = r.heads.contains { $0.node == nodeID }
            var mine = isHead ? r.versionVector[nodeID] : .zero
            if !isHead { seenOnly = max(seenOnly, r.versionVector[nodeID]) }
            for e in r.versionVector.entries where e.hlc > newest { newest = e.hlc }
            if let c = r.creation {
                if c.hlc > newest { newest = c.hlc }
                if c.node == nodeID, c.hlc > mine { mine = c.hlc }
            }
            for f in r.fields {
                guard let d = f.stamp else { continue }
                if d.hlc > newest { newest = d.hlc }
                if d.node == nodeID, d.hlc > mine { mine = d.hlc }
            }
            if newest.milliseconds > clock.limit {
                throw refusal(
                    "\(what): record \(r.id) is stamped \(newest), \(newest.milliseconds &- clock.wall) ms ahead of node \(nodeID.short)'s clock (limit \(clock.drift) ms); refused whole (Spec/replication.md §3.8)",
                    knowledgeOnly: false)
            }
            if mine != .zero { own.append((r.id, mine)) }
        }
        if !records.isEmpty {
            // The zone's writers after the batch: bounded, so its vector and tokens stay decodable.
            let zoneVector: VersionVector
            do throws(ShoalError) { zoneVector = try await store.zone(m.zone).versionVector } catch {
                throw SyncFailure(error.code, "could not check \(what): \(error)")
            }
            try await checkWriters(of: records, zone: m.zone, zoneVector: zoneVector, from: peer, what: what)
            // Our newest write in the zone: the zone's vector also covers its purge horizon (purged
            // tombstones were applied first; an adopted horizon joins the vector).
            let newest = zoneVector[nodeID]
            if seenOnly > newest {
                throw refusal(
                    "\(what): a version claims to have seen a write of node \(nodeID.short) (this node) at \(seenOnly), but its newest write in zone \(m.zone) is \(newest.rawValue == 0 ? "none" : "\(newest)"); refused whole (Spec/replication.md §3.8)",
                    knowledgeOnly: false)
            }
        }
        if !own.isEmpty {
            // Every write of ours to a record is in our stored version of it (a version is replaced
            // only by one that covers it), or in a purged tombstone (the horizon covers it).
            let stored: [Record.ID: Record], horizon: HLC
            do throws(ShoalError) {
                stored = try await store.storedVersions(of: own.map(\.0))
                horizon = try await store.purgeHorizon(of: m.zone)[nodeID]
            } catch {
                throw SyncFailure(error.code, "could not check \(what): \(error)")
            }
            for (id, mine) in own {
                let bound = max(stored[id]?.versionVector[nodeID] ?? .zero, horizon)
                if mine > bound {
                    throw refusal(
                        "\(what): record \(id) carries a write of node \(nodeID.short) (this node) at \(mine), but its newest write of that record is \(bound.rawValue == 0 ? "none" : "\(bound)"); refused whole (Spec/replication.md §3.8)",
                        knowledgeOnly: false)
                }
            }
        }
        if let k = m.knowledge {
            try await checkStated(k, zone: m.zone, what: what, knowledgeOnly: false)
        }
        // A purge horizon claims writes as a knowledge vector does, and is checked alike.
        if let h = m.horizon {
            try await checkStated(h, zone: m.zone, what: "\(what) (its purge horizon)", knowledgeOnly: false)
        }
    }

    /// Checks that the versions of a batch keep the zone's writers within bounds: at most
    /// ``SyncConfiguration/maxZoneWriters`` writers that are not the node IDs of devices that may
    /// write the zone — this node, the sending peer, and the node IDs bound here to the zone's
    /// owner or read-write members (Spec/security.md §5) — and at most that many more in all,
    /// so the zone's vector stays decodable. Made-up writers a member names thus never stop
    /// another member from writing as itself (Spec/replication.md §3.8 rule 4).
    func checkWriters(
        of records: [Record], zone: RecordZone.ID, zoneVector: VersionVector, from peer: NodeID, what: String
    ) async throws(SyncFailure) {
        var writers = Set(zoneVector.entries.map(\.node))
        var newest = [(Record.ID, NodeID)]()
        for r in records {
            for e in r.versionVector.entries where writers.insert(e.node).inserted { newest.append((r.id, e.node)) }
        }
        guard writers.count > configuration.maxZoneWriters else { return }
        // Past the bound: only writers that are not members' own node IDs count.
        let hardLimit = configuration.maxZoneWriters &+ ZoneShare.maxMembers &+ 1
        var others = 0
        for w in writers where !(await writesAsMember(w, zone: zone, peer: peer)) { others &+= 1 }
        if others > configuration.maxZoneWriters || writers.count > hardLimit {
            let id = newest.last.map { "record \($0.0)" } ?? "a record"
            throw refusal(
                "\(what): \(id) would make zone \(zone) name more than \(configuration.maxZoneWriters) writers besides its members' own node IDs (SyncConfiguration.maxZoneWriters); refused whole",
                knowledgeOnly: false, code: .limitExceeded)
        }
    }

    /// Whether `node` is the node ID of a device that may write `zone`: this node, the peer
    /// sending the batch (its device's access was checked first), or a node ID bound here to the
    /// zone's owner or a read-write member.
    func writesAsMember(_ node: NodeID, zone: RecordZone.ID, peer: NodeID) async -> Bool {
        if node == nodeID || node == peer { return true }
        guard let device = (try? await store.boundDevice(of: node)) ?? nil else { return false }
        return await access(device, zone) >= .write
    }

    /// What the zone shows of its writers: its vector and its purge horizon together (nil when
    /// this node does not hold the zone). Knowledge counts only this far (Spec/replication.md §3.8).
    func shownByZone(_ zone: RecordZone.ID) async -> (
        shown: VersionVector, vector: VersionVector, horizon: VersionVector
    )? {
        guard let info = try? await store.zone(zone) else { return nil }
        let horizon = (try? await store.purgeHorizon(of: zone)) ?? VersionVector()
        return (info.versionVector.union(horizon), info.versionVector, horizon)
    }
}
