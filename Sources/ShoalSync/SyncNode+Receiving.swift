// SyncNode+Receiving: applying a peer's batches, storing positions and knowledge, acknowledging.

import ShoalWire
import ShoalStore
import ShoalDiff

extension SyncNode {
    func handleChanges(_ frame: Frame, on id: ConnectionID, decoded: DecodedChanges? = nil) async throws(SyncFailure)
        -> [SyncOutput]
    {
        // The records' bytes as received are their canonical encodings: the store keeps them.
        let ahead = decoded?.take()
        let (m, ranges) = try decode { (l) throws(WireError) in
            if let r = ahead?.0 { return try r.get() }
            return try ChangesMessage.decodeKeepingRecordBytes(frame.payload, limits: l)
        }
        return try await applyChanges(m, ranges: ranges, frame: frame, rebuiltAhead: ahead?.1, on: id)
    }

    /// A `live-changes` batch (Spec/replication.md §3.5.4): the subscription it names must be one
    /// the peer numbered on this connection, and its token a change to that subscription's last
    /// one; it is then applied as the `changes` batch it stands for.
    func handleLiveChanges(_ frame: Frame, on id: ConnectionID, decoded: DecodedChanges? = nil)
        async throws(SyncFailure)
        -> [SyncOutput]
    {
        let n = try decode { (l) throws(WireError) in try LiveChangesMessage.subscription(of: frame.payload, limits: l)
        }
        guard let zone = sessions[id]?.inboundNumbers[n], let sub = sessions[id]?.inbound[zone] else {
            throw SyncFailure(
                .protocolViolation,
                "live changes of subscription \(n), a number the peer has not given a subscription of this connection (Spec/replication.md §3.5.4)"
            )
        }
        // Vectors written against the stated knowledge are read against this side's copy of it;
        // a decode ahead made against the same copy is the same message.
        let ahead = decoded?.takeLive(subscription: n, zone: zone, reference: sub.vectorReference)
        if ahead != nil { statistics.batchesDecodedAhead &+= 1 }
        let (live, ranges) = try decode { (l) throws(WireError) in
            if let r = ahead?.0 { return try r.get() }
            return try LiveChangesMessage.decodeKeepingRecordBytes(
                frame.payload, zone: zone, reference: sub.vectorReference, limits: l)
        }
        guard let token = live.token(after: sub.lastToken, limits: configuration.limits) else {
            throw SyncFailure(
                .protocolViolation,
                "batch \(live.batch) of subscription \(n) (zone \(zone)) keeps \(live.tokenKept) bytes of a \(sub.lastToken.count)-byte token, or fewer than the two tokens share (Spec/replication.md §3.5.4)"
            )
        }
        return try await applyChanges(
            live.changes(incarnation: sub.incarnation, token: token), ranges: ranges, frame: frame,
            rebuiltAhead: ahead?.1, on: id)
    }

    /// The refusal of a batch from a device that may not write `zone`: counted, and closing.
    func refusedWrite(_ zone: RecordZone.ID, on id: ConnectionID) -> SyncFailure {
        statistics.refusedForPermission &+= 1
        return SyncFailure(
            .permissionFailure,
            "changes to zone \(zone) refused whole: device \(sessions[id]?.device?.description ?? "?") may not write it (Spec/security.md §6.2)"
        )
    }

    /// Applies a batch received on `id` (whose payload is `frame`'s; `ranges` locate its whole
    /// records' bytes in it) and answers with the acknowledgement (and a `want-whole` for what
    /// could not be rebuilt).
    func applyChanges(
        _ m: consuming ChangesMessage, ranges: [Range<Int>], frame: Frame,
        rebuiltAhead: DecodedChanges.RebuiltRanges? = nil, on id: ConnectionID
    ) async throws(SyncFailure) -> [SyncOutput] {
        guard let peer = try await checkSubscription(of: m, on: id) else { return [] }
        let whole = try await wholeVersions(of: m, from: peer, on: id)
        var records = whole.records
        let unrebuilt = whole.unrebuilt
        var ranges = ranges
        // Until every record asked for whole has arrived, this subscription's position is not
        // stored and its knowledge not adopted: both would claim the missing versions (§3.10).
        var wanted = sessions[id]?.inbound[m.zone]?.wanted ?? []
        if !wanted.isEmpty { for r in records { wanted.remove(r.id.name) } }
        wanted.formUnion(unrebuilt)
        // What the peer states is checked before any of it is used: a refused batch is not
        // applied, moves no position and adopts no knowledge (Spec/replication.md §3.8).
        try await checkBatch(m, records: records, from: peer)
        // Every write must be proven by its writer's device (Spec/authenticated-writes.md §5):
        // the section's entries are checked against the versions in the batch's order.
        let writes = try await checkWrites(
            of: m, versions: positionalVersions(of: m, records: records), rebuiltAhead: rebuiltAhead, from: peer,
            on: id)
        leaveOut(writes.left, of: m, records: &records, ranges: &ranges)
        let key = PeerZone(peer: peer, zone: m.zone)
        let stated = noteStated(by: m, key: key, on: id)
        // The reference the next batch is read against: published before this one is stored, so
        // the read loop can decode the next batch meanwhile.
        publishLiveReference(of: m.zone, on: id)
        try await commit(
            m, records: records, ranges: ranges, frame: frame, implied: writes.runs, from: peer,
            holdingBackPosition: !wanted.isEmpty, on: id)
        await noteReflected(writes, zone: m.zone)
        logger.trace(
            "\(nodeID.short) applied batch \(m.batch) of \(m.zone) from \(peer.short): \(records.map { "\($0.id.name)\($0.versionVector)" }) (\(m.sparseRecords.count) sparse) caughtUp=\(m.isCaughtUp) K=\(stated.map { "\($0)" } ?? "-")"
        )
        // The batch that ends a full resync: everything the sender holds has arrived here.
        let endsResync = resyncs[key] != nil && m.isCaughtUp && stated != nil
        if resyncs[key] != nil {
            for r in records { resyncs[key]?.insert(r.id.name) }
            // Every local record's vector is dominated by the zone's, so the knowledge as stated
            // decides the same deletions as the part of it the zone shows.
            if m.isCaughtUp, let k = stated, let names = resyncs[key] {
                await finishResync(peer: peer, zone: m.zone, received: names, knowledge: k, horizon: m.horizon)
            }
        }
        if let k = stated, m.isCaughtUp {
            await adopt(k, statedBy: m, from: peer, endsResync: endsResync, wanted: wanted.count, on: id)
        }
        sessions[id]?.inbound[m.zone]?.wanted = wanted
        noteProgress(of: m, records: records.count, payloadBytes: frame.payload.count, on: id)
        publishLiveReference(of: m.zone, on: id)  // the batch may have established the number
        let ack = await acknowledgement(of: m, resyncing: resyncs[key] != nil, on: id)
        // Zones fetched eagerly: ask for the new records' assets (the sender likely holds them).
        for asset in await exchange.eagerAssets(in: records, zone: m.zone, engine: self) {
            for (c, more) in await fetchAsset(asset) { extraOutputs[c, default: []] += more }
        }
        let replies = wantWhole(unrebuilt, of: m, from: peer)
        Self.releaseLater((consume m, consume records))
        return replies + [.send(Frame(type: .acknowledgement, payload: ack.encoded()))]
    }

    /// The batch's versions in the order its writer-log section names them: whole, then sparse
    /// as rebuilt from `records` (nil: a sparse record not rebuilt here).
    func positionalVersions(of m: ChangesMessage, records: [Record]) -> [Record?] {
        var positional = m.records.map(Optional.some)
        if !m.sparseRecords.isEmpty {
            var rebuilt = [String: Record]()
            for r in records.dropFirst(m.records.count) { rebuilt[r.id.name] = r }
            positional += m.sparseRecords.map { rebuilt[$0.id.name] }
        }
        return positional
    }

    /// Leaves the records named `left` out of batch `m`'s `records` and whole `ranges`: writes of
    /// a device that may not write the zone. The rest of the batch is applied.
    func leaveOut(_ left: Set<String>, of m: ChangesMessage, records: inout [Record], ranges: inout [Range<Int>]) {
        guard !left.isEmpty else { return }
        var kept = [Range<Int>]()
        for (i, r) in ranges.enumerated() where !left.contains(m.records[i].id.name) { kept.append(r) }
        ranges = kept
        records.removeAll { left.contains($0.id.name) }
        logger.trace(
            "\(nodeID.short) leaves out \(left.count) records of batch \(m.batch) of \(m.zone): writes of a device that may not write it"
        )
    }

    /// Notes on the subscription of `id` what batch `m` starts and states, and returns the
    /// knowledge it claims: a reset pass starts over on both sides (what was stated before it no
    /// longer counts, and the resync of `key` begins); a batch states only what the peer had not
    /// stated on this subscription yet, so it claims the union (§3.5).
    func noteStated(by m: ChangesMessage, key: PeerZone, on id: ConnectionID) -> VersionVector? {
        if m.isReset { resyncs[key] = [] }
        // A subscription gone meanwhile claims what the batch states.
        return sessions[id]?.inbound[m.zone]?.noteStated(by: m) ?? m.knowledge.map { VersionVector().union($0) }
    }

    /// The `want-whole` asking `peer` for the records of batch `m` this node could not rebuild
    /// (none when it rebuilt them all).
    func wantWhole(_ unrebuilt: [String], of m: ChangesMessage, from peer: NodeID) -> [SyncOutput] {
        guard !unrebuilt.isEmpty else { return [] }
        statistics.recordsWantedWhole &+= unrebuilt.count
        logger.trace(
            "\(nodeID.short) asks \(peer.short) for \(unrebuilt.count) records of \(m.zone) whole: \(unrebuilt)")
        let message = WantWholeMessage(zone: m.zone, incarnation: m.incarnation, names: unrebuilt)
        return [.send(Frame(type: .wantWhole, payload: message.encoded()))]
    }

    /// The sending peer's node when batch `m` continues a subscription this connection made, in
    /// order, from a device that may write the zone; nil before the peer's hello.
    /// - Throws: `permissionFailure` for a device that may not write the zone (a read-only
    ///   member is told so even for a subscription it does not have), `protocolViolation` for a
    ///   batch of no subscription, out of order, or numbered against the subscription's number.
    func checkSubscription(of m: ChangesMessage, on id: ConnectionID) async throws(SyncFailure) -> NodeID? {
        // A batch answers a subscription this node made; it follows only devices that may write
        // the zone, so a device that may not learns nothing here of whether the zone exists.
        let access = await access(id, m.zone)
        guard let sub = sessions[id]?.inbound[m.zone], sub.incarnation == m.incarnation else {
            // A read-only member knows the zone: it is told why (§6.2).
            if access == .read { throw refusedWrite(m.zone, on: id) }
            throw SyncFailure(
                .protocolViolation,
                "changes for zone \(m.zone) (incarnation \(m.incarnation.short)), which this connection did not subscribe to"
            )
        }
        // Checked before anything is used: a device that may not write the zone (its role changed
        // since) has nothing applied, whatever it sends (Spec/security.md §6.2).
        guard access >= .write else { throw refusedWrite(m.zone, on: id) }
        guard m.batch == sub.nextBatch else {
            throw SyncFailure(
                .protocolViolation,
                "changes batch \(m.batch) of zone \(m.zone) arrived; batch \(sub.nextBatch) was expected")
        }
        // A subscription has one number, and a number one subscription (§3.5.4).
        if let n = m.subscription,
            sub.number.map({ $0 != n }) ?? false || sessions[id]?.inboundNumbers[n].map({ $0 != m.zone }) ?? false
        {
            throw SyncFailure(
                .protocolViolation,
                "batch \(m.batch) of zone \(m.zone) numbers its subscription \(n), but \(sub.number.map { "it is \($0)" } ?? "\(n) names another subscription") on this connection"
            )
        }
        return sessions[id]?.peer?.node
    }

    /// The batch's records as whole versions: its whole records, then its sparse ones rebuilt;
    /// `unrebuilt` names those to ask for whole (only with a peer that reads delta slots, §3.10).
    /// - Throws: `protocolViolation` for a batch naming a record twice; `resyncNeeded` when the
    ///   sparse records cannot be rebuilt and cannot be asked for (the subscription resubscribes
    ///   for whole versions, §3.5.1).
    func wholeVersions(of m: ChangesMessage, from peer: NodeID, on id: ConnectionID) async throws(SyncFailure) -> (
        records: [Record], unrebuilt: [String]
    ) {
        guard !m.sparseRecords.isEmpty else { return (m.records, []) }
        // One version per record and batch (§3.5): rebuilding costs up to a record's size per
        // item, so a batch naming one large record many times is refused, not rebuilt.
        var names = Set<String>(minimumCapacity: m.sparseRecords.count &+ m.records.count)
        for name in m.records.lazy.map(\.id.name) + m.sparseRecords.lazy.map(\.id.name)
        where !names.insert(name).inserted {
            throw SyncFailure(
                .protocolViolation,
                "batch \(m.batch) of zone \(m.zone) holds record \(name) twice; a batch holds one version of each record (Spec/replication.md §3.5)"
            )
        }
        let asks = speaksFieldDeltas(id)
        guard let rebuilt = await rebuild(m, askingForTheRest: asks),
            !asks
                || (sessions[id]?.inbound[m.zone]?.wanted.count ?? 0) &+ rebuilt.unrebuilt.count <= Self.maxWantedWhole
        else {
            wholeVersionsNeeded.insert(PeerZone(peer: peer, zone: m.zone))
            statistics.wholeVersionRequests &+= 1
            throw SyncFailure(
                .resyncNeeded,
                "batch \(m.batch) of zone \(m.zone) holds sparse records this node cannot rebuild (its base is not known here, or a record is missing); reconnecting to receive whole versions"
            )
        }
        return (m.records + rebuilt.records, rebuilt.unrebuilt)
    }

    /// Commits the batch's records and the position they bring the subscription to, together
    /// (one fsync per batch). A batch with no records (the sender skipped what we know) moves the
    /// position only in the sender's memory: resuming from the older stored position re-reads,
    /// then skips, the same versions, so nothing is lost by not writing it. With records asked
    /// for whole outstanding (`holdingBackPosition`) the position is not stored (§3.10).
    /// `implied`: the peer's own runs taken on the connection's word, kept in the same
    /// transaction (Spec/authenticated-writes.md §5.1).
    func commit(
        _ m: ChangesMessage, records: [Record], ranges: [Range<Int>], frame: Frame, implied: [ImpliedRun] = [],
        from peer: NodeID, holdingBackPosition: Bool, on id: ConnectionID
    ) async throws(SyncFailure) {
        let key = SyncStateKey.position(peer: peer, zone: m.zone)
        do throws(ShoalError) {
            // A resync's marker commits with its first batch: a crash cannot lose the fact that
            // the stream must be read to the end before deletions are reconciled.
            // While upstreams deliver part of the zone, the peer's position may pass versions it
            // left out for them: none is kept, and a new subscription starts from this node's
            // knowledge instead (Spec/replication.md §3.9).
            let skipsPossible = sessions[id]?.inbound[m.zone]?.upstreamsSent?.isEmpty == false
            var state: [SyncStateKey: [UInt8]] = holdingBackPosition ? [:] : [key: skipsPossible ? [] : m.token.bytes]
            if m.isReset { state[.resync(peer: peer, zone: m.zone)] = [1] }
            if !records.isEmpty || !implied.isEmpty {
                let payload = frame.payload
                try await store.apply(
                    remoteChanges: records, encodings: ranges.map { payload[$0] }, decodedUnder: configuration.limits,
                    syncState: state, implied: implied)
            } else if m.isCaughtUp || m.isReset {
                try await store.apply(remoteChanges: [], syncState: state)
            }
        } catch {
            throw SyncFailure(
                error.code, "could not apply batch \(m.batch) of zone \(m.zone) from \(peer.short): \(error)")
        }
    }

    /// Adopts the knowledge `k` a caught-up batch `m` stated, as far as the zone now shows it and
    /// only when it covers the purge horizon (or ends a resync) and no record asked for whole is
    /// outstanding (`wanted`); the sender's own knowledge grows by all of it.
    func adopt(
        _ k: VersionVector, statedBy m: ChangesMessage, from peer: NodeID, endsResync: Bool, wanted: Int,
        on id: ConnectionID
    ) async {
        // Caught-up knowledge counts only as far as the zone now shows (§3.8): a claim beyond
        // that (writes purged on the sender, or never made) is dropped, not adopted or passed on.
        // Per node, at most the larger of the zone's vector and purge horizon once the batch is
        // applied; read once, with the horizon the adoption below is checked against.
        let zoneShows = await shownByZone(m.zone)
        let horizon = zoneShows?.horizon ?? VersionVector()
        let shown = zoneShows.map { k.meet($0.shown) } ?? VersionVector()
        if shown != k {
            statistics.unshownKnowledgeDropped &+= 1
            logger.trace(
                "\(nodeID.short) batch \(m.batch) of \(m.zone) from \(peer.short) claims knowledge \(k); adopting what the zone shows, \(shown)"
            )
        }
        // Knowledge that does not cover this zone's purge horizon comes from a sender that
        // has not seen some deletion purged here: it may hold a version concurrent with one,
        // sent here alone while nodes holding the tombstone merge it. Adopting its knowledge
        // would make every server skip that merge for this node, so it is held back until
        // the sender has resynced (§3.5.3). The end of a full resync is adopted: this node
        // now holds everything the sender held (§3.5.3 names the case this leaves open).
        if wanted > 0 {
            logger.trace(
                "\(nodeID.short) holds back knowledge \(k) of \(m.zone) from \(peer.short): \(wanted) records asked for whole have not arrived"
            )
        } else if endsResync || horizon.isDominated(by: k) {
            // Only over each writer's reflected prefix: no withheld write is skipped for good.
            let reflected = await reflectedKnowledge(shown, zone: m.zone, on: id)
            if reflected != shown {
                logger.trace(
                    "\(nodeID.short) adopts knowledge \(reflected) of \(m.zone) from \(peer.short), the reflected part of \(shown)"
                )
            }
            await addKnowledge(reflected, to: m.zone)
        } else {
            statistics.knowledgeHeldBackForHorizon &+= 1
            logger.trace(
                "\(nodeID.short) holds back knowledge \(k) of \(m.zone) from \(peer.short): it does not cover the purge horizon \(horizon)"
            )
        }
        // The sender knows at least this (it speaks for itself): what we serve it on this
        // connection skips it, so the versions it just sent us are not echoed back before
        // its next acknowledgement.
        if let sub = sessions[id]?.outbound[m.zone] {
            sessions[id]?.outbound[m.zone]?.peerKnowledge = sub.peerKnowledge.union(k)
        }
    }

    /// The subscription's state after batch `m` (`records` versions, `payloadBytes` long):
    /// the next batch expected, the last token, its number, whether it is caught up (an
    /// upstream, announced to the zone's other servers), progress, and the counters.
    func noteProgress(of m: ChangesMessage, records: Int, payloadBytes: Int, on id: ConnectionID) {
        sessions[id]?.inbound[m.zone]?.nextBatch = m.batch &+ 1
        sessions[id]?.inbound[m.zone]?.lastToken = m.token.bytes
        if let n = m.subscription {
            sessions[id]?.inbound[m.zone]?.number = n
            sessions[id]?.inboundNumbers[n] = m.zone
        }
        sessions[id]?.inbound[m.zone]?.caughtUp = m.isCaughtUp
        if m.isCaughtUp {
            // Caught up once, the peer delivers the zone here from now on: the other servers of
            // the zone hear it (and every server hears when a resync from it has finished).
            sessions[id]?.inbound[m.zone]?.isUpstream = true
            for (c, more) in announceUpstreams(of: m.zone) { extraOutputs[c, default: []] += more }
        }
        sessions[id]?.inbound[m.zone]?.records &+= records
        if let n = m.remaining, let got = sessions[id]?.inbound[m.zone]?.records {
            sessions[id]?.inbound[m.zone]?.expected = got &+ Int(clamping: n)
        }
        if m.isCaughtUp { sessions[id]?.inbound[m.zone]?.expected = nil }
        statistics.recordsReceived &+= records
        statistics.sparseRecordsReceived &+= m.sparseRecords.count
        statistics.batchesReceived &+= 1
        statistics.bytesReceived &+= payloadBytes
        if let peer = sessions[id]?.peer?.node {
            peerStatistics[peer, default: PeerStatistics()].recordsReceived &+= records
            peerStatistics[peer, default: PeerStatistics()].bytesReceived &+= payloadBytes
        }
    }

    /// The acknowledgement of batch `m`: this node's knowledge of the zone (none while
    /// `resyncing`: the peer must not skip what this node holds, which is how it learns what the
    /// peer lacks), only the entries this subscription has not stated yet (§3.6).
    func acknowledgement(of m: ChangesMessage, resyncing: Bool, on id: ConnectionID) async -> AcknowledgementMessage {
        let knowledge = resyncing ? VersionVector() : await knowledge(of: m.zone)
        let told = sessions[id]?.inbound[m.zone]?.statedKnowledge ?? VersionVector()
        sessions[id]?.inbound[m.zone]?.statedKnowledge = told.union(knowledge)
        return AcknowledgementMessage(
            zone: m.zone, incarnation: m.incarnation, batch: m.batch, knowledge: knowledge.entries(above: told))
    }

    /// Ends a full resync from `peer` at its caught-up batch (Spec/replication.md §3.5.2–3.5.3):
    /// a live local record the stream left out, every save of which `knowledge` (the peer's)
    /// covers, was deleted on the peer and its tombstone purged since — delete it here too. That
    /// holds when the peer's knowledge covers the whole version, and also when only deletions
    /// the peer has not seen are left beside those saves (a save merged here with a concurrent
    /// deletion of another lineage before this node learned of the purged one). Records with a
    /// save the peer has not seen stay (they replicate to it). The peer's purge `horizon` becomes
    /// part of this zone's, so a record created here again supersedes those deletions where they
    /// are held.
    func finishResync(
        peer: NodeID, zone: RecordZone.ID, received: Set<String>, knowledge: VersionVector, horizon: VersionVector?
    ) async {
        do throws(ShoalError) {
            let stale = try await store.allRecordIDs(in: zone).filter { !received.contains($0.name) }
            let versions = try await store.storedVersions(of: stale)
            let gone = stale.filter { id in
                guard let v = versions[id], !v.isDeleted else { return false }
                return v.heads.allSatisfy { $0.isDeletion || v.versionVector[$0.node] <= knowledge[$0.node] }
            }
            if !gone.isEmpty { try await store.modify(deleting: gone, policy: .allKeys, atomically: false) }
            if let horizon, !horizon.isEmpty {
                try await store.adoptHorizon(horizon, of: zone)
                knowledgeCache[zone] = nil
            }
            try await store.setSyncValue(.resync(peer: peer, zone: zone), nil)
            resyncs[PeerZone(peer: peer, zone: zone)] = nil
            statistics.resyncsCompleted &+= 1
            statistics.resyncDeletions &+= gone.count
            logger.trace(
                "\(nodeID.short) resync of \(zone) from \(peer.short) done: \(received.count) received, \(gone.count) deleted, horizon \(horizon.map { "\($0)" } ?? "-")"
            )
        } catch {
            // The marker stays: the next connection resyncs again.
            logger.trace("\(nodeID.short) resync of \(zone) from \(peer.short) could not finish: \(error)")
        }
    }

    /// Whole versions equivalent to a batch's sparse records, rebuilt on the stored versions (or
    /// the ones before them); nil when this node's knowledge does not cover the batch's base.
    /// A record that cannot be rebuilt — none is held, or neither version holds what it left
    /// out or the base of one of its delta slots — makes the whole result nil, unless
    /// `askingForTheRest`: then its name is in `unrebuilt`, to be asked for whole (§3.10).
    func rebuild(_ m: ChangesMessage, askingForTheRest: Bool) async -> (records: [Record], unrebuilt: [String])? {
        let base = m.base ?? VersionVector()
        guard base.isDominated(by: await knowledge(of: m.zone)),
            let stored = try? await store.storedVersions(of: m.sparseRecords.map(\.id))
        else { return nil }
        var out = [Record?]()
        out.reserveCapacity(m.sparseRecords.count)
        var refused = [Int]()
        for (i, s) in m.sparseRecords.enumerated() {
            let r = stored[s.id].flatMap { Record(expanding: s, base: base, onto: $0) }
            if r == nil {
                guard askingForTheRest || stored[s.id] != nil else { return nil }
                refused.append(i)
            }
            out.append(r)
        }
        var unrebuilt = [String]()
        if !refused.isEmpty {
            // This node's own write since the version the sender's builds on may have replaced an
            // omitted slot, or a delta slot's base: the version before it may hold exactly that.
            // A digest that matches makes the rebuilt version the sender's, whatever it was
            // rebuilt on.
            guard let previous = try? await store.previousVersions(of: refused.map { m.sparseRecords[$0].id }) else {
                return nil
            }
            for i in refused {
                let s = m.sparseRecords[i]
                let bases = [stored[s.id], previous[s.id]].compactMap { $0 }
                if let l = stored[s.id], let r = Record(expanding: s, base: base, onto: l, bases: bases) {
                    out[i] = r
                } else if let p = previous[s.id],
                    let r = Record(expanding: s, base: base, onto: p, bases: bases.reversed())
                {
                    out[i] = r
                    statistics.sparseRecordsRebuiltOnPrevious &+= 1
                } else if askingForTheRest {
                    unrebuilt.append(s.id.name)
                } else {
                    return nil
                }
            }
        }
        for (i, s) in m.sparseRecords.enumerated() where out[i] != nil {
            statistics.fieldDeltasApplied &+= s.deltas.count
        }
        return (out.compactMap { $0 }, unrebuilt)
    }
}

extension SyncSession.Inbound {
    /// Notes what batch `m` of this subscription starts and states, and returns the knowledge
    /// it claims: a reset batch starts a pass over (what either side stated before it no longer
    /// counts), and a batch states only what the peer had not stated on this subscription yet,
    /// so it claims the union (Spec/replication.md §3.5). The reference `live-changes` vectors
    /// are read against moves the same way on both sides (§3.5.4).
    mutating func noteStated(by m: ChangesMessage) -> VersionVector? {
        if m.isReset {
            serverKnowledge = VersionVector()
            statedKnowledge = VersionVector()
        }
        vectorReference = SyncSession.vectorReference(after: vectorReference, reset: m.isReset, stated: m.knowledge)
        let stated = m.knowledge.map { serverKnowledge.union($0) }
        if let stated { serverKnowledge = stated }
        return stated
    }
}
