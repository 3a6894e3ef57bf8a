// SyncNode+Serving: answering a peer's subscriptions — batches from the change log, window, acks.

public import ShoalWire
import ShoalStore
import ShoalDiff
import Logging

extension SyncNode {
    func handleSubscribe(_ frame: Frame, on id: ConnectionID) async throws(SyncFailure) -> [SyncOutput] {
        let m = try decode { (l) throws(WireError) in try SubscribeMessage(decoding: frame.payload, limits: l) }
        // A device that may not read the zone gets the answer for a zone this node does not hold,
        // word for word: it learns nothing of which zones exist (Spec/security.md §6.2).
        let notFound = [
            SyncOutput.send(
                Frame(
                    type: .error,
                    payload: ErrorMessage(
                        code: ShoalError.Code.zoneNotFound.name,
                        message: "zone \(m.zone) is not replicated by node \(nodeID.short)"
                    ).encoded()))
        ]
        guard configuration.zones.allows(m.zone), let info = try? await store.zone(m.zone) else { return notFound }
        guard await access(id, m.zone) >= .read else {
            statistics.refusedForPermission &+= 1
            logger.trace(
                "\(nodeID.short) refused a subscribe to \(m.zone) from device \(sessions[id]?.device?.short ?? "?"): not a member"
            )
            return notFound
        }
        guard info.incarnation == m.incarnation else {
            // The peer will learn our incarnation from our hello or zones message and resubscribe.
            return []
        }
        try await checkStated(m.knowledge, zone: m.zone, what: "subscribe to zone \(m.zone)", knowledgeOnly: true)
        // One subscription per zone and connection: another would start a second window of
        // batches for the same zone (an honest peer subscribes once per connection, §3.4).
        guard sessions[id]?.outbound[m.zone] == nil else {
            throw SyncFailure(
                .protocolViolation,
                "a second subscribe to zone \(m.zone) on this connection, which already follows it; one subscription per zone and connection"
            )
        }
        // No position but some knowledge (a subscriber whose upstreams deliver most of the zone
        // keeps no position here, §3.9): start from what it knows, not from the beginning.
        let start =
            m.token
            ?? (m.knowledge.isEmpty
                ? nil : ChangeToken(.init(kind: .zone, incarnation: m.incarnation, vector: m.knowledge)))
        var outbound = SyncSession.Outbound(
            incarnation: m.incarnation, token: start, peerKnowledge: m.knowledge,
            window: min(m.window, UInt64(max(1, configuration.maxServedWindow))))
        outbound.vectorReference = m.knowledge
        outbound.tokenSent = m.token?.bytes ?? []
        // The ranges it is sent start where the logs it holds end (Spec/authenticated-writes.md §4).
        if let heads = m.writerLogHeads {
            outbound.writerLogSent = heads
            outbound.writerLogHeadsStated = true
        }
        sessions[id]?.outbound[m.zone] = outbound
        // A peer that reads `live-changes` gets a number for the subscription, given with its
        // first batch, unless it numbered the subscription itself; batches that follow the
        // number name it instead of the zone (§3.5.4).
        if let n = m.number, let s = sessions[id] {
            guard n >= s.nextSubscriptionNumber else {
                throw SyncFailure(
                    .protocolViolation,
                    "subscribe to zone \(m.zone) numbers the subscription \(n), but numbers below \(s.nextSubscriptionNumber) were used on this connection (Spec/replication.md §3.5.4)"
                )
            }
            sessions[id]?.outbound[m.zone]?.number = n
            sessions[id]?.outbound[m.zone]?.numberSent = true
            sessions[id]?.nextSubscriptionNumber = n &+ 1
        } else if let s = sessions[id], let peer = s.peer, peer.capabilities & Capability.liveChanges != 0 {
            sessions[id]?.outbound[m.zone]?.number = s.nextSubscriptionNumber
            sessions[id]?.nextSubscriptionNumber = s.nextSubscriptionNumber &+ 1
        }
        // A subscriber whose knowledge does not cover the purge horizon has not seen some
        // deletion purged here, whatever its token says: it resyncs in full, which removes what
        // the deletions removed and hands it the horizon (§3.5.2, §3.5.3).
        if let horizon = try? await store.purgeHorizon(of: m.zone), !horizon.isEmpty,
            !horizon.isDominated(by: m.knowledge)
        {
            logger.trace(
                "\(nodeID.short) subscriber on conn \(id) does not know the purge horizon of \(m.zone): resetting")
            sessions[id]?.outbound[m.zone]?.beginResetPass()
        }
        return try await pump(m.zone, on: id)
    }

    func handleAcknowledgement(_ frame: Frame, on id: ConnectionID) async throws(SyncFailure) -> [SyncOutput] {
        let m = try decode { (l) throws(WireError) in try AcknowledgementMessage(decoding: frame.payload, limits: l) }
        guard let first = sessions[id]?.outbound[m.zone], first.incarnation == m.incarnation else { return [] }
        guard first.mayAcknowledge(m.batch) else {
            throw SyncFailure(
                .protocolViolation,
                "acknowledgement of batch \(m.batch) of zone \(m.zone), but batches \(first.acknowledged)…\(first.nextBatch &- 1) are in flight"
            )
        }
        // Used for skipping and for tombstone purges: checked first (Spec/replication.md §3.8).
        try await checkStated(
            m.knowledge, zone: m.zone, what: "acknowledgement of batch \(m.batch) of zone \(m.zone)",
            knowledgeOnly: true)
        // Read again: the check may have suspended, and a pump may have moved the subscription on.
        guard sessions[id]?.outbound[m.zone]?.incarnation == m.incarnation else { return [] }
        sessions[id]?.outbound[m.zone]?.noteAcknowledged(m.batch, knowledge: m.knowledge)
        guard let sub = sessions[id]?.outbound[m.zone] else { return [] }
        if let peer = sessions[id]?.peer?.node {
            // What the peer now holds, for tombstone purges (ShoalStore keeps the horizon). Written
            // at most once a second per peer and zone; one that arrives sooner is written when the
            // second is up, so the last acknowledgement of a burst is never lost (a purge would
            // wait for it forever). The write (a commit, with its fsync) runs beside this
            // connection's frames, not before the next one: waiting for it held every change
            // behind it for the length of a commit once a second — 30–60 ms when the disk is busy.
            // The whole of what the peer stated is written, not this acknowledgement's part.
            await recordAcknowledgement(peer: peer, zone: m.zone, knowledge: sub.peerKnowledge)
        }
        // A single commit held behind this acknowledgement was no burst (the next one did not
        // come before it): it goes now. Two or more wait out the delay (§4 item 2).
        if sub.heldNews?.commits == 1 { sessions[id]?.outbound[m.zone]?.heldNews = nil }
        return try await pump(m.zone, on: id)
    }

    /// Writes what `peer` acknowledged of `zone` to the store now, or, within a second of the last
    /// write for them, once that second is up (``AcknowledgementThrottle``): the transport calls
    /// ``writeHeldAcknowledgements()`` at ``heldAcknowledgementsDeadline``. The write runs beside
    /// the engine unless ``SyncConfiguration/awaitsAcknowledgementWrites`` is on.
    func recordAcknowledgement(peer: NodeID, zone: RecordZone.ID, knowledge: VersionVector) async {
        let key = PeerZone(peer: peer, zone: zone)
        guard let write = acknowledgements.note(knowledge, for: key, at: configuration.now()) else { return }
        await storeAcknowledgements([(key, write)])
    }

    /// When the earliest acknowledgement held back is due to be written: the transport calls
    /// ``writeHeldAcknowledgements()`` then. Nil when none is held.
    public var heldAcknowledgementsDeadline: ContinuousClock.Instant? { acknowledgements.deadline }

    /// Writes the acknowledgements held back whose second is up (see
    /// ``heldAcknowledgementsDeadline``); those not yet due keep waiting.
    public func writeHeldAcknowledgements() async {
        await storeAcknowledgements(acknowledgements.due(at: configuration.now()))
    }

    /// Writes every acknowledgement held back, due or not, and returns once they are stored.
    /// The transport calls it when it stops (`NetworkNode.shutdown()`), after its connections
    /// have closed: what peers acknowledged in the last second before it is not lost, so their
    /// tombstones need not wait for them to acknowledge again after the restart.
    public func writeAllHeldAcknowledgements() async {
        await storeAcknowledgements(acknowledgements.all(at: configuration.now()), awaited: true)
    }

    /// Writes `writes`: awaited when `awaited` or the configuration says so, else beside the
    /// engine.
    func storeAcknowledgements(_ writes: [(key: PeerZone, knowledge: VersionVector)], awaited: Bool = false) async {
        guard !writes.isEmpty else { return }
        let (store, logger) = (self.store, self.logger)
        let write: @Sendable () async -> Void = {
            for w in writes {
                await Self.storeAcknowledgement(
                    peer: w.key.peer, zone: w.key.zone, knowledge: w.knowledge, in: store, logger: logger)
            }
        }
        if awaited || configuration.awaitsAcknowledgementWrites || configuration.writesAcknowledgementsInline {
            await write()
        } else {
            Task { await write() }
        }
    }

    /// Writes what `peer` acknowledged of `zone`; a write the store refuses is logged. Tombstone
    /// purges then wait for the peer's next acknowledgement: they never run ahead of one.
    static func storeAcknowledgement(
        peer: NodeID, zone: RecordZone.ID, knowledge: VersionVector, in store: Store,
        logger: Logger
    ) async {
        do throws(ShoalError) {
            try await store.acknowledge(peer: peer, zone: zone, vector: knowledge)
        } catch {
            logger.warning("acknowledgement of \(zone) by \(peer.short) not stored: \(error)")
        }
    }

    /// A commit to `zone` happened: every idle subscription to it sends the news on — at once,
    /// or, while it has a batch in flight, with the commits that follow within
    /// ``SyncConfiguration/liveBatchDelay`` (then ``heldNewsDeadline`` says when to call
    /// ``sendHeldNews()``).
    public func zoneChanged(_ zone: RecordZone.ID) async -> [ConnectionID: [SyncOutput]] {
        await zoneChanged(zone, holding: [])
    }

    /// ``zoneChanged(_:)``, except that the subscriptions on the connections in `held` send
    /// nothing now: their transport has more than its bound waiting for the socket
    /// (Spec/replication.md §2). They are marked as having news, and ``resumeServing(_:)`` sends
    /// it once the connection has room, so a peer that stops reading is not served every change
    /// of every zone it follows meanwhile.
    package func zoneChanged(_ zone: RecordZone.ID, holding held: Set<ConnectionID>) async -> [ConnectionID:
        [SyncOutput]]
    {
        knowledgeCache[zone] = nil
        let batching = configuration.liveBatchDelay > .zero
        let now = batching ? configuration.now() : nil
        var result = [ConnectionID: [SyncOutput]]()
        for id in sessions.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            let effect = sessions[id]?.outbound[zone]?.noteCommit(at: now, batchRecords: configuration.batchRecords)
            guard effect == .read, !held.contains(id) else { continue }
            do throws(SyncFailure) {
                let out = try await pump(zone, on: id)
                if !out.isEmpty { result[id] = out }
            } catch {
                result[id] = [.close(ErrorMessage(code: error.code.name, message: error.message))]
            }
        }
        return result
    }

    /// When the earliest news waiting to travel with later commits must go: the transport calls
    /// ``sendHeldNews()`` then. Nil when no news waits.
    public var heldNewsDeadline: ContinuousClock.Instant? {
        var first: ContinuousClock.Instant? = nil
        for s in sessions.values {
            for sub in s.outbound.values {
                guard let since = sub.heldNews?.since else { continue }
                let due = since + configuration.liveBatchDelay
                if first.map({ due < $0 }) ?? true { first = due }
            }
        }
        return first
    }

    /// Sends the news that has waited ``SyncConfiguration/liveBatchDelay`` or longer (see
    /// ``heldNewsDeadline``); news not yet due keeps waiting.
    public func sendHeldNews() async -> [ConnectionID: [SyncOutput]] {
        await sendHeldNews(holding: [])
    }

    /// ``sendHeldNews()``, except that the connections in `held` send nothing now (their
    /// transport is over its bound, ``zoneChanged(_:holding:)``): their news goes with
    /// ``resumeServing(_:)``.
    package func sendHeldNews(holding held: Set<ConnectionID>) async -> [ConnectionID: [SyncOutput]] {
        let now = configuration.now()
        var result = [ConnectionID: [SyncOutput]]()
        for id in sessions.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            for zone in sessions[id]?.outbound.keys.sorted() ?? [] {
                guard let since = sessions[id]?.outbound[zone]?.heldNews?.since,
                    since + configuration.liveBatchDelay <= now
                else { continue }
                // Due: it goes now, or, when its window is full, with the next acknowledgement.
                sessions[id]?.outbound[zone]?.heldNews = nil
                if held.contains(id) { continue }
                do throws(SyncFailure) {
                    let out = try await pump(zone, on: id)
                    if !out.isEmpty { result[id, default: []] += out }
                } catch {
                    result[id, default: []] += [.close(ErrorMessage(code: error.code.name, message: error.message))]
                }
            }
        }
        return result
    }

    /// Connection `id` has room again for what it was held back from sending
    /// (``zoneChanged(_:holding:)``): the first of its subscriptions with news sends it, within
    /// its window. One at a time, so that the transport can stop once the connection is over its
    /// bound again; `more` says whether another subscription has news to send.
    package func resumeServing(_ id: ConnectionID) async -> (outputs: [ConnectionID: [SyncOutput]], more: Bool) {
        guard let zones = sessions[id]?.outbound.keys.sorted() else { return ([:], false) }
        let waiting = zones.filter { z in
            sessions[id]?.outbound[z].map { $0.reading == .due && $0.unacknowledged < $0.window } ?? false
        }
        guard let zone = waiting.first else { return ([:], false) }
        do throws(SyncFailure) {
            let out = try await pump(zone, on: id)
            return (out.isEmpty ? [:] : [id: out], waiting.count > 1)
        } catch {
            return ([id: [.close(ErrorMessage(code: error.code.name, message: error.message))]], false)
        }
    }

    /// Sends batches of `zone` on `id` while the window allows and there is something to send.
    ///
    /// The subscription is read afresh after every suspension and written back before the next
    /// one, so an acknowledgement or a commit handled meanwhile is never overwritten.
    func pump(_ zone: RecordZone.ID, on id: ConnectionID) async throws(SyncFailure) -> [SyncOutput] {
        guard let first = sessions[id]?.outbound[zone], let session = sessions[id] else { return [] }
        if sessions[id]?.outbound[zone]?.readAgainIfReading() == true { return [] }
        // Held news waits out its delay (an acknowledgement does not end it: the commits of a
        // burst keep joining it); ``sendHeldNews()`` or a full batch ends it.
        // Records asked for whole do not wait: the subscriber holds its knowledge back for them.
        if first.wanted.isEmpty, let since = first.heldNews?.since,
            since + configuration.liveBatchDelay > configuration.now()
        {
            return []
        }
        let budget = session.payloadBudget(configuration)
        var out = [SyncOutput]()
        // Whatever news waited goes with what this reads (the log holds it).
        sessions[id]?.outbound[zone]?.heldNews = nil
        guard sessions[id]?.outbound[zone]?.beginReading() == true else { return [] }
        defer { sessions[id]?.outbound[zone]?.endReading() }
        pumping: while var sub = sessions[id]?.outbound[zone], sub.unacknowledged < sub.window, sub.reading != .caughtUp
        {
            sessions[id]?.outbound[zone]?.reading = .reading(again: false)
            // Records the subscriber asked for whole go first, at the position it has (§3.10).
            if !sub.wanted.isEmpty {
                if let f = try await wantedBatch(zone, on: id, budget: budget) { out.append(.send(f)) }
                continue
            }
            rewindIfUpstreamLost(&sub, zone: zone, on: id)
            Self.forgetCoveredSkips(&sub)
            sessions[id]?.outbound[zone] = sub
            switch await serveBatch(of: zone, after: sub, session: session, budget: budget, on: id) {
            case .sent(let frame): out.append(.send(frame))
            case .readAgain: continue
            case .superseded: break pumping
            case .ended(let frame):
                sessions[id]?.outbound[zone] = nil
                return out + [.send(frame)]
            }
        }
        return out
    }

    /// How many changes remain after the first batch of a catch-up, if counting them is quick;
    /// otherwise nil, and the count starts on the store's background reader (`subscription`
    /// notes it; a later batch carries the result).
    func remainingAfterFirstBatch(
        _ zone: RecordZone.ID, token: ChangeToken, subscription cur: inout SyncSession.Outbound
    ) async -> UInt64? {
        guard
            let r = try? await store.remainingChanges(
                in: zone, after: token, quickLimit: configuration.remainingCountInlineLimit)
        else { return nil }
        if case .counted(let n) = r { return n.map { UInt64($0) } }
        let pending = PendingCount()
        cur.pendingCount = pending
        cur.rowsSinceCount = 0
        let store = self.store
        Task { pending.finish(try? await store.remainingChangesInBackground(in: zone, after: token)) }
        return nil
    }

    /// The versions of a page that go to a peer: `whole` decoded records, or (from an encoded
    /// page) `wholeEncoded`, their stored bytes back to back; and `sparse` ones.
    struct Selection {
        var whole: [Record] = []
        var wholeEncoded: [UInt8] = []
        var wholeCountEncoded = 0
        var sparse: [SparseRecord] = []
        /// When versions are kept: the whole ones decoded (from an encoded page), and the
        /// versions the sparse ones stand for, in order (Spec/authenticated-writes.md §4).
        var wholeVersions = ProvenVersions()
        var sparseVersions: [Record] = []
        /// Per node, the lowest and highest of the writes left out for the peer's upstreams.
        var skipped: [NodeID: (low: HLC, high: HLC)] = [:]
        /// How many versions were left out for the upstreams.
        var skippedCount = 0
        var count: Int { whole.count &+ wholeCountEncoded &+ sparse.count }

        /// Whether a version with `vector` is left out because every write in it that the peer
        /// has not seen was made by one of `upstreams` (which deliver it themselves); if so, its
        /// writes are noted in ``skipped``.
        mutating func skips(_ vector: VersionVector, peerKnowledge: VersionVector, upstreams: Set<NodeID>) -> Bool {
            guard !upstreams.isEmpty else { return false }
            var any = false
            for e in vector.entries where e.hlc > peerKnowledge[e.node] {
                guard upstreams.contains(e.node) else { return false }
                any = true
            }
            guard any else { return false }
            skippedCount &+= 1
            for e in vector.entries where e.hlc > peerKnowledge[e.node] {
                let was = skipped[e.node]
                skipped[e.node] = (min(was?.low ?? e.hlc, e.hlc), max(was?.high ?? e.hlc, e.hlc))
            }
            return true
        }
    }

    /// The purge horizon a batch carries: this node's, on the last batch of a reset pass (§3.5.3).
    static func horizonSent(caughtUp: Bool, resetPass: Bool, _ own: VersionVector) -> VersionVector? {
        caughtUp && resetPass && !own.isEmpty ? own : nil
    }

    /// Whether a version travels even to a peer whose knowledge covers it (Spec/replication.md
    /// §3.5.3 rule 6): it is live but holds a deletion head (a save merged with a concurrent
    /// delete), or it merges concurrent writes and one of its heads is at or below this node's
    /// purge `horizon`. Such a peer may know the deletion, or that head's writes, only through a
    /// purge horizon, and hold the other save alone.
    static func travelsDespiteKnowledge(_ heads: [Record.Head], vector: VersionVector, horizon: VersionVector) -> Bool {
        if heads.contains(where: \.isDeletion) && heads.contains(where: { !$0.isDeletion }) { return true }
        guard heads.count > 1, !horizon.isEmpty else { return false }
        return heads.contains { vector[$0.node] <= horizon[$0.node] }
    }

    /// Selects from decoded records: those `peerKnowledge` does not dominate, sparse against
    /// `sparseBase` where possible.
    static func select(
        _ records: [Record], peerKnowledge: VersionVector, sparseBase: VersionVector?,
        skipping upstreams: Set<NodeID> = [], horizon: VersionVector = VersionVector()
    ) -> Selection {
        var s = Selection()
        for r in records {
            let always = travelsDespiteKnowledge(r.heads, vector: r.versionVector, horizon: horizon)
            if r.versionVector.isDominated(by: peerKnowledge) && !always { continue }
            if !always && s.skips(r.versionVector, peerKnowledge: peerKnowledge, upstreams: upstreams) { continue }
            if let b = sparseBase, let sr = SparseRecord(r, base: b) {
                s.sparse.append(sr)
                s.sparseVersions.append(r)
            } else {
                s.whole.append(r)
            }
        }
        return s
    }

    /// Selects from a page of stored encodings, decoding only what may travel sparse: a
    /// version's vector is read from its bytes to skip what the peer holds; one that goes whole
    /// is copied as stored. A record can only travel sparse when the base covers its creation,
    /// so with an empty base nothing is decoded at all.
    static func select(
        _ page: EncodedZoneChanges, peerKnowledge: VersionVector, sparseBase: VersionVector?,
        skipping upstreams: Set<NodeID> = [], horizon: VersionVector = VersionVector(), keepingVersions: Bool = false,
        limits: WireLimits
    ) throws(WireError) -> Selection {
        var s = Selection()
        s.wholeEncoded.reserveCapacity(page.bytes.count)
        for i in 0..<page.count {
            let bytes = page.record(i)
            let (vector, heads) = try bytes.withUnsafeBytes {
                raw -> Result<(vector: VersionVector, heads: [Record.Head]), WireError> in
                do throws(WireError) { return .success(try Record.headedVector(ofEncoded: raw, limits: limits)) } catch
                { return .failure(error) }
            }.get()
            let always = travelsDespiteKnowledge(heads, vector: vector, horizon: horizon)
            if vector.isDominated(by: peerKnowledge) && !always { continue }
            if !always && s.skips(vector, peerKnowledge: peerKnowledge, upstreams: upstreams) { continue }
            var decoded: Record? = nil
            if let b = sparseBase, !b.isEmpty {
                let r = try Record(decoding: Array(bytes), limits: limits)
                if let sr = SparseRecord(r, base: b) {
                    s.sparse.append(sr)
                    if keepingVersions { s.sparseVersions.append(r) }
                    continue
                }
                decoded = r
            }
            if keepingVersions {
                if let decoded {
                    s.wholeVersions.append(decoded)
                } else {
                    s.wholeVersions.append(encoded: bytes, vector: vector)
                }
            }
            s.wholeEncoded.append(contentsOf: bytes)
            s.wholeCountEncoded &+= 1
        }
        return s
    }
}
