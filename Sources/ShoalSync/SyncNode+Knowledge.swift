// SyncNode+Knowledge: per-zone knowledge and per-peer positions, kept in the store's database.

public import ShoalWire
import ShoalStore

extension SyncNode {
    /// Every change this node reflects for `zone` (Spec/replication.md §1.1): what it adopted
    /// from peers at caught-up batches, plus all of its own writes.
    ///
    /// What was adopted counts only as far as the zone shows (its vector, which covers the purge
    /// horizon): knowledge kept from an earlier incarnation of the zone, or adopted unchecked by
    /// an earlier release, never claims more than the replica holds (Spec/replication.md §3.8).
    public func knowledge(of zone: RecordZone.ID) async -> VersionVector {
        if let k = knowledgeCache[zone] { return k }
        var k = VersionVector()
        if let bytes = try? await store.syncValue(.knowledge(zone: zone)), let v = Self.decodeVector(bytes) { k = v }
        if let zoneShows = await shownByZone(zone) {
            k = k.meet(zoneShows.shown)
            k.advance(nodeID, to: zoneShows.vector[nodeID])
        } else {
            k = VersionVector()
        }
        knowledgeCache[zone] = k
        return k
    }

    /// Adds `v` to the knowledge stored for `zone`; the caller checked it (§3.8).
    func addKnowledge(_ v: VersionVector, to zone: RecordZone.ID) async {
        var stored = VersionVector()
        if let bytes = try? await store.syncValue(.knowledge(zone: zone)), let s = Self.decodeVector(bytes) {
            stored = s
        }
        let merged = stored.union(v)
        guard merged != stored else { return }
        do throws(ShoalError) {
            try await store.setSyncValue(.knowledge(zone: zone), Self.encodeVector(merged))
        } catch {
            // The peer resends what this knowledge covers when the next subscription states less.
            logger.warning("knowledge of \(zone) not stored: \(error)")
        }
        knowledgeCache[zone] = nil
    }

    /// The token `peer` last gave for `zone`, if it is for `incarnation`.
    func position(peer: NodeID, zone: RecordZone.ID, incarnation: NodeID) async -> ChangeToken? {
        guard let bytes = try? await store.syncValue(.position(peer: peer, zone: zone)) else { return nil }
        let token = ChangeToken(bytes: bytes)
        guard let c = try? token.contents(limits: configuration.limits), c.incarnation == incarnation else {
            return nil
        }
        return token
    }

    func setPosition(_ token: ChangeToken, peer: NodeID, zone: RecordZone.ID) async {
        do throws(ShoalError) {
            try await store.setSyncValue(.position(peer: peer, zone: zone), token.bytes)
        } catch {
            // The next subscription resumes from the position stored before: it reads again.
            logger.warning("position in \(peer.short)'s feed of \(zone) not stored: \(error)")
        }
    }

    static func encodeVector(_ v: VersionVector) -> [UInt8] {
        WireWriter.encode(size: WireSize.plainVector(v)) { $0.writePlainVector(v) }
    }

    static func decodeVector(_ bytes: [UInt8]) -> VersionVector? {
        bytes.withUnsafeBytes { raw in
            var r = WireReader(raw, limits: .default)
            do throws(WireError) {
                let v = try r.readPlainVector("knowledge")
                try r.expectEnd("knowledge")
                return v
            } catch { return nil }
        }
    }
}
