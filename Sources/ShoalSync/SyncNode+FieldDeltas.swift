// SyncNode+FieldDeltas: changed fields sent as edits of what the subscriber holds, and records
// asked for whole when such an edit (or a sparse record) cannot be rebuilt here
// (Spec/replication.md §3.5.1 "Delta slots", §3.10).

import ShoalWire
import ShoalStore
import ShoalDiff

extension SyncNode {
    /// The most records asked for whole that one subscription may have outstanding, on either
    /// side: a subscriber with more reconnects and resubscribes with empty knowledge instead;
    /// a peer asking for more is closed (Spec/replication.md §3.10).
    public static let maxWantedWhole = 4_096

    /// Whether batches to the peer on `id` may carry delta slots, and it may ask for records whole.
    func speaksFieldDeltas(_ id: ConnectionID) -> Bool {
        configuration.fieldDeltas && (sessions[id]?.peer.map { $0.capabilities & Capability.fieldDeltas != 0 } ?? false)
    }

    /// Turns the whole fields of `items` into delta slots where the version before each record's
    /// stored one (the store keeps it for every row) holds a base the subscriber holds too and
    /// the edit is smaller. Only records with a field large enough to gain are looked up.
    func encodeFieldDeltas(_ items: inout [SparseRecord], base: VersionVector) async {
        let zoneOf = items.first?.id.zone
        let candidates = items.indices.filter { i in
            items[i].fields.contains { f in
                guard let v = f.value, let stamp = f.stamp, !base.covers(stamp) else { return false }
                switch v {
                case .string, .bytes, .list:
                    return zoneOf.map { v.payloadSize(zone: $0) >= SparseRecord.minimumDeltaValueBytes } ?? false
                default: return false
                }
            }
        }
        guard !candidates.isEmpty,
            let previous = try? await store.previousVersions(of: candidates.map { items[$0].id })
        else { return }
        for i in candidates {
            guard let p = previous[items[i].id] else { continue }
            let before = items[i].fields
            let made = items[i].encodeEdits(against: p, base: base)
            guard made > 0 else { continue }
            statistics.fieldDeltasSent &+= made
            // The payloads of the fields that became delta slots, less what the slots' bodies cost.
            let zone = items[i].id.zone
            let replaced =
                before.reduce(0) { $0 &+ ($1.value?.payloadSize(zone: zone) ?? 0) }
                &- items[i].fields.reduce(0) { $0 &+ ($1.value?.payloadSize(zone: zone) ?? 0) }
            let slots = items[i].deltas.reduce(0) {
                $0 &+ SparseSection.deltaBodySize($1, entries: items[i].entries, zone: zone)
            }
            statistics.fieldDeltaBytesSaved &+= max(0, replaced &- slots)
        }
    }

    /// A `want-whole` message (Spec/replication.md §3.10): the subscriber on `id` could not
    /// rebuild these records of its subscription from sparse items; they go whole before the
    /// subscription's next page.
    func handleWantWhole(_ frame: Frame, on id: ConnectionID) async throws(SyncFailure) -> [SyncOutput] {
        let m = try decode { (l) throws(WireError) in try WantWholeMessage(decoding: frame.payload, limits: l) }
        guard speaksFieldDeltas(id) else {
            throw SyncFailure(
                .protocolViolation,
                "want-whole for zone \(m.zone), but this node did not announce that it answers it (capability bit 5)")
        }
        guard let sub = sessions[id]?.outbound[m.zone], sub.incarnation == m.incarnation else {
            logger.trace(
                "\(nodeID.short) ignores want-whole for \(m.zone) on conn \(id): no subscription of that incarnation")
            return []
        }
        logger.trace(
            "\(nodeID.short) conn \(id) wants \(m.names.count) records of \(m.zone) whole (reading \(sub.reading), window \(sub.unacknowledged)/\(sub.window))"
        )
        guard sub.sentAny else {
            throw SyncFailure(
                .protocolViolation, "want-whole for zone \(m.zone) before any batch of it was sent on this connection")
        }
        let wanted = sub.wanted.union(m.names)
        guard wanted.count <= Self.maxWantedWhole else {
            throw SyncFailure(
                .protocolViolation,
                "want-whole for \(wanted.count) records of zone \(m.zone) outstanding; at most \(Self.maxWantedWhole) (SyncNode.maxWantedWhole)"
            )
        }
        sessions[id]?.outbound[m.zone]?.wanted = wanted
        sessions[id]?.outbound[m.zone]?.markDue()
        return try await pump(m.zone, on: id)
    }

    /// The batch of the records the subscriber on `id` asked for whole: their stored versions
    /// (live or tombstones), as many as fit in `budget` (one at least), at the subscription's
    /// current position. Nil when none is wanted.
    func wantedBatch(_ zone: RecordZone.ID, on id: ConnectionID, budget: Int) async throws(SyncFailure) -> Frame? {
        guard let sub = sessions[id]?.outbound[zone], !sub.wanted.isEmpty else { return nil }
        let names = sub.wanted.sorted { UTF8Order.compare($0, $1) < 0 }
        let stored: [Record.ID: Record]
        do throws(ShoalError) {
            stored = try await store.storedVersions(of: names.map { Record.ID(name: $0, zone: zone) })
        } catch {
            throw SyncFailure(error.code, "cannot read the records of zone \(zone) the peer asked for whole: \(error)")
        }
        var records = [Record]()
        var size = 0
        var sent = Set<String>()
        for name in names {
            guard let r = stored[Record.ID(name: name, zone: zone)] else {
                // Deleted and purged since it went sparse: the subscriber cannot be given it. It
                // resumes from its stored position, which the batch that held it did not move.
                throw SyncFailure(
                    .resyncNeeded,
                    "record \(name) of zone \(zone), asked for whole, is no longer held here (its tombstone was purged); resubscribe"
                )
            }
            let n = r.encodedSize
            if !records.isEmpty && size &+ n > budget { break }
            records.append(r)
            size &+= n
            sent.insert(name)
        }
        var proof: WriterLogPlan? = nil
        if authenticatesWrites(on: id), let held = sessions[id]?.outbound[zone] {
            proof = await writerLogPlan(
                for: ProvenVersions(records), zone: zone, incarnation: held.incarnation, knowledge: held.peerKnowledge,
                sent: held.writerLogSent, headsStated: held.writerLogHeadsStated, on: id)
        }
        guard var cur = sessions[id]?.outbound[zone], cur.incarnation == sub.incarnation else { return nil }
        cur.wanted.subtract(sent)
        let message = ChangesMessage(
            zone: zone, incarnation: cur.incarnation, batch: cur.nextBatch, isCaughtUp: false,
            token: ChangeToken(bytes: cur.tokenSent), records: records, writerLog: proof?.section)
        if let proof { note(proof, in: &cur, on: id) }
        cur.lastRecordsBatch = cur.nextBatch
        cur.nextBatch &+= 1
        cur.wantedSent = true
        cur.lastSent = .batch
        sessions[id]?.outbound[zone] = cur
        logger.trace(
            "\(nodeID.short) sends \(records.count) records of \(zone) whole to conn \(id) as batch \(message.batch): \(records.map { "\($0.id.name)\($0.versionVector)" })"
        )
        statistics.recordsSentWhole &+= records.count
        statistics.recordsSent &+= records.count
        statistics.batchesSent &+= 1
        let payload = message.encoded()
        if let peer = sessions[id]?.peer?.node {
            peerStatistics[peer, default: PeerStatistics()].recordsSent &+= records.count
            peerStatistics[peer, default: PeerStatistics()].bytesSent &+= payload.count
        }
        return Frame(type: .changes, payload: payload)
    }
}
