// SyncNode+Upstreams: not relaying to a subscriber what its other peers deliver to it themselves
// (Spec/replication.md §3.9).

import ShoalWire
import ShoalStore

extension SyncNode {
    /// The peers this node receives `zone` from directly, caught up, on connections other than `id`.
    func upstreams(of zone: RecordZone.ID, except id: ConnectionID) -> [NodeID] {
        sessions.compactMap { c, s in c != id && s.inbound[zone]?.isUpstream == true ? s.peer?.node : nil }
    }

    /// `upstreams` for each server of `zone` (or only the one on `only`) whose set changed since
    /// it was last told: the peers that deliver the zone here, the server itself left out; none
    /// while a resync from that server runs (it must send everything then).
    func announceUpstreams(of zone: RecordZone.ID, only: ConnectionID? = nil) -> [ConnectionID: [SyncOutput]] {
        guard configuration.skipsUpstreams else { return [:] }
        var out = [ConnectionID: [SyncOutput]]()
        for (id, s) in sessions where s.phase == .established && (only == nil || only == id) {
            guard let inbound = s.inbound[zone], let peer = s.peer, peer.capabilities & Capability.upstreams != 0 else {
                continue
            }
            let resyncing = resyncs[PeerZone(peer: peer.node, zone: zone)] != nil
            let nodes = resyncing ? [] : Array(Set(upstreams(of: zone, except: id)).subtracting([peer.node])).sorted()
            if inbound.upstreamsSent == nodes || (inbound.upstreamsSent == nil && nodes.isEmpty) { continue }
            sessions[id]?.inbound[zone]?.upstreamsSent = nodes
            let m = UpstreamsMessage(zone: zone, incarnation: inbound.incarnation, nodes: nodes)
            out[id] = [.send(Frame(type: .upstreams, payload: m.encoded()))]
        }
        return out
    }

    /// A subscriber's upstreams for a zone it follows here. Writes only they made, not yet
    /// covered by its knowledge, stop being sent to it; losing one of them rewinds the
    /// subscription to its knowledge, so what was left out for it goes now.
    func handleUpstreams(_ frame: Frame, on id: ConnectionID) async throws(SyncFailure) -> [SyncOutput] {
        let m = try decode { (l) throws(WireError) in try UpstreamsMessage(decoding: frame.payload, limits: l) }
        // A message for a subscription that has ended or moved to another incarnation is stale.
        guard configuration.skipsUpstreams, var sub = sessions[id]?.outbound[m.zone], sub.incarnation == m.incarnation
        else { return [] }
        let now = Set(m.nodes).subtracting([nodeID])
        let lost = sub.upstreams.subtracting(now)
        sub.upstreams = now
        if !lost.isEmpty && sub.skipped.keys.contains(where: lost.contains) {
            sub.rewindPending = true
        }
        sub.markDue()
        sessions[id]?.outbound[m.zone] = sub
        return try await pump(m.zone, on: id)
    }

    /// Drops from a subscription's skipped writes those its knowledge now covers.
    static func forgetCoveredSkips(_ sub: inout SyncSession.Outbound) {
        guard !sub.skipped.isEmpty else { return }
        sub.skipped = sub.skipped.filter { node, range in sub.peerKnowledge[node] < range.high }
    }

    /// `k`, except that a node with writes skipped for the subscriber's upstreams keeps the
    /// entry `known` (what was stated to it, or what it said it knows) gives it, and never more
    /// than just below its lowest skipped write: what the subscriber may adopt holds only what it
    /// has been sent, and while its upstreams deliver a node's writes nothing about that node
    /// travels here (not even an empty batch).
    static func capped(_ k: VersionVector, below skipped: [NodeID: (low: HLC, high: HLC)], known: VersionVector)
        -> VersionVector
    {
        guard !skipped.isEmpty else { return k }
        var entries = [(NodeID, HLC)]()
        for e in k.entries {
            if let s = skipped[e.node] {
                let cap = min(e.hlc, HLC(rawValue: s.low.rawValue &- 1), known[e.node])
                if cap.rawValue > 0 { entries.append((e.node, cap)) }
            } else {
                entries.append((e.node, e.hlc))
            }
        }
        return VersionVector(entries)
    }
}
