// SyncNode+BatchSteps: serving one batch of a subscription, step by step — read a page, choose its versions and their proof, count what remains, build the frame, move the subscription past it.

import ShoalWire
import ShoalStore

/// A page of a zone's change log read for a subscription: as stored (`encoded`) or decoded
/// (`read`), the position after it, and whether the log goes on.
struct ServedPage {
    var encoded: EncodedZoneChanges?
    var read: ZoneChanges?
    var token: ChangeToken
    var moreComing: Bool

    /// The rows of the log the page covers.
    var rows: Int { encoded?.count ?? read?.records.count ?? 0 }
}

/// What reading a subscription's next page came to.
enum PageOutcome {
    /// A page to send from.
    case page(ServedPage)
    /// The subscription's token predates tombstones purged here (Spec/replication.md §3.5.2).
    case expired
    /// The store could not be read: the error frame to send, the subscription ended.
    case failed(Frame)
}

/// What a batch carries besides its position: the versions chosen from the page, what sparse
/// ones are relative to, this node's purge horizon, and what proves the writes.
struct BatchContent {
    var selection: SyncNode.Selection
    var sparseBase: VersionVector?
    var ownHorizon: VersionVector
    var proof: SyncNode.WriterLogPlan?
}

/// What choosing a batch's versions came to.
enum ContentOutcome {
    /// The batch's content, and the subscription as it stands after the suspensions.
    case content(BatchContent, SyncSession.Outbound)
    /// The subscription moved meanwhile (an acknowledgement, a reset): stop for now.
    case superseded
    /// A stored version does not decode: the error frame to send, the subscription ended.
    case failed(Frame)
}

/// What serving one batch of a subscription came to.
enum BatchStep {
    /// A batch went: its frame.
    case sent(Frame)
    /// Nothing went (the peer already knows all, or the token expired and the subscription
    /// moved on): read again.
    case readAgain
    /// The subscription moved meanwhile (an acknowledgement, a reset): stop for now.
    case superseded
    /// The zone cannot be served: the error frame to send, the subscription ended.
    case ended(Frame)
}

extension SyncNode {
    /// Notes that an upstream that had writes skipped for it is gone: the subscription reads
    /// again from what the peer knows, so every such write goes now (Spec/replication.md §3.9).
    func rewindIfUpstreamLost(_ sub: inout SyncSession.Outbound, zone: RecordZone.ID, on id: ConnectionID) {
        guard sub.rewindPending else { return }
        sub.rewindPending = false
        sub.skipped = [:]
        statistics.upstreamRewinds &+= 1
        sub.token = ChangeToken(.init(kind: .zone, incarnation: sub.incarnation, vector: sub.peerKnowledge))
        logger.trace(
            "\(nodeID.short) rewinding \(zone) for conn \(id) to its knowledge \(sub.peerKnowledge): an upstream was lost"
        )
    }

    /// Serves the batch of `zone` on `id` that follows subscription `sub`: reads the next page,
    /// chooses what it carries, and builds the frame; the subscription moves past it. `budget`
    /// bounds the frame's payload.
    func serveBatch(
        of zone: RecordZone.ID, after sub: SyncSession.Outbound, session: SyncSession, budget: Int,
        on id: ConnectionID
    ) async -> BatchStep {
        let skipping: Set<NodeID> =
            configuration.skipsUpstreams && !sub.inResetPass && !sub.resetNext ? sub.upstreams : []
        // Knowledge is read before the batch: the peer may adopt it once it holds everything
        // the log had by the time the batch was read (Spec/replication.md §1.1).
        let k = await knowledge(of: zone)
        let page: ServedPage
        switch await readPage(of: zone, for: sub, budget: budget) {
        case .page(let p): page = p
        case .expired:
            await restartAfterExpiry(zone, sub: sub, on: id)
            return .readAgain
        case .failed(let frame): return .ended(frame)
        }
        // The subscription as it is now (acknowledgements may have arrived meanwhile).
        guard let now = sessions[id]?.outbound[zone], now.incarnation == sub.incarnation, now.token == sub.token else {
            return .superseded
        }
        let content: BatchContent
        var cur: SyncSession.Outbound
        switch await batchContent(
            of: page, zone: zone, cur: now, session: session, knowledge: k, skipping: skipping, on: id)
        {
        case .content(let c, let fresh):
            content = c
            cur = fresh
        case .superseded: return .superseded
        case .failed(let frame): return .ended(frame)
        }
        let selection = content.selection
        statistics.versionsLeftToUpstreams &+= selection.skippedCount
        cur.noteSkipped(selection.skipped)
        // What the peer may adopt stops below every write left out for its upstreams.
        let statable = Self.capped(k, below: cur.skipped, known: cur.knowledgeSent.union(cur.peerKnowledge))
        let recordCount = selection.count
        let caughtUp = !page.moreComing
        logger.trace(
            "\(nodeID.short) serving \(zone) to conn \(id): page of \(page.rows) sent \(recordCount) (\(selection.sparse.count) sparse) peerK=\(cur.peerKnowledge) caughtUp=\(caughtUp) K=\(k)"
        )
        if Self.nothingNew(in: page, records: recordCount, for: cur, statable: statable) {
            // The position moves in memory only (a resumption from the peer's older stored
            // token skips the same versions again).
            cur.token = page.token
            cur.noteCaughtUp()
            sessions[id]?.outbound[zone] = cur
            return .readAgain
        }
        // The first batch of a catch-up says how much is left, for the peer's progress.
        let remaining = await remaining(after: page, of: zone, subscription: &cur)
        // Only what the subscriber has not been told on this subscription (§3.5): it keeps the
        // union. A reset pass states it whole (knowledgeSent was emptied when it began). Entries
        // the peer has said it knows are left out too: adopting them changes nothing.
        let stated: VersionVector? =
            caughtUp ? statable.entries(above: cur.knowledgeSent.union(cur.peerKnowledge)) : nil
        if caughtUp { cur.knowledgeSent.formUnion(statable) }
        // A reset pass ends with the purge horizon: the subscriber takes it as its own, so the
        // records it creates again supersede the deletions purged here (§3.5.3).
        let horizon = Self.horizonSent(caughtUp: caughtUp, resetPass: cur.inResetPass, content.ownHorizon)
        let message = ChangesMessage(
            zone: zone, incarnation: cur.incarnation, batch: cur.nextBatch, isCaughtUp: caughtUp,
            isReset: cur.resetNext, token: page.token, knowledge: stated, remaining: remaining, horizon: horizon,
            records: selection.whole, sparseRecords: selection.sparse, base: content.sparseBase,
            writerLog: content.proof?.section)
        let frame = batchFrame(message, selection: selection, subscription: &cur, session: session)
        if let proof = content.proof { note(proof, in: &cur, on: id) }
        cur.noteSent(message, records: recordCount, stated: stated)
        sessions[id]?.outbound[zone] = cur
        countSent(frame, records: recordCount, to: session.peer?.node)
        return .sent(frame)
    }

    /// Whether `page`, with `records` records to send, has nothing new for subscription `cur`: it
    /// is the log's end, and the peer was told it is caught up and knows all this node would
    /// state (`statable`), or the page moved nothing.
    static func nothingNew(in page: ServedPage, records: Int, for cur: SyncSession.Outbound, statable: VersionVector)
        -> Bool
    {
        !page.moreComing && records == 0 && cur.sentAny && !cur.resetNext && !cur.wantedSent
            && (page.token == cur.token
                || (cur.caughtUpSent && statable.isDominated(by: cur.peerKnowledge.union(cur.knowledgeSent))))
    }

    /// Counts batch `frame`, carrying `records` records, as sent (to `peer`, when known).
    func countSent(_ frame: Frame, records: Int, to peer: NodeID?) {
        statistics.recordsSent &+= records
        statistics.batchesSent &+= 1
        if let peer {
            peerStatistics[peer, default: PeerStatistics()].recordsSent &+= records
            peerStatistics[peer, default: PeerStatistics()].bytesSent &+= frame.payload.count
        }
    }
}

extension SyncNode {
    /// Reads the page of `zone` that follows subscription `sub`'s token, bounded by the frame's
    /// `budget` while it is read (a page of large records never loads more than one frame's
    /// worth, or one record alone): it goes out as stored, so it fits.
    ///
    /// Every stored version's vector is dominated by the zone's: when the peer's knowledge
    /// covers that, the rest of the log would only be read to be skipped (the echo of what a
    /// node just applied from this peer, say), so the page is empty at the log's end. Not past
    /// a merge the peer may still need whatever its knowledge (§3.5.3 rule 6).
    func readPage(of zone: RecordZone.ID, for sub: SyncSession.Outbound, budget: Int) async -> PageOutcome {
        if !sub.resetNext, let end = try? await store.feedEnd(of: zone, compact: true),
            end.vector.isDominated(by: sub.peerKnowledge),
            (try? await store.holdsMerges(in: zone)) == false
        {
            let empty = EncodedZoneChanges(count: 0, bytes: [], ends: [], token: end.token, moreComing: false)
            return .page(ServedPage(encoded: empty, read: nil, token: end.token, moreComing: false))
        }
        var limit = configuration.batchRecords
        var read: ZoneChanges? = nil
        // Pages are read as the store keeps them (canonical encodings): versions the peer holds
        // are skipped by their vectors and whole ones copied as stored, so only those that travel
        // sparse are decoded (select(_:peerKnowledge:sparseBase:limits:)).
        var encoded: EncodedZoneChanges? = nil
        while true {
            do throws(ShoalError) {
                if let e = try await store.encodedChanges(
                    in: zone, since: sub.token, limit: limit, maxBytes: budget, compactToken: true)
                {
                    encoded = e
                    break
                }
                read = try await store.changes(
                    in: zone, since: sub.token, limit: limit, maxBytes: budget, compactToken: true)
                // Stored encodings within the budget can still re-encode larger (the page was read
                // by vector): read fewer records (the token must match what is sent).
                let records = read?.records ?? []
                if records.count <= 1 || records.reduce(0, { $0 &+ $1.encodedSize }) <= budget { break }
            } catch {
                if error.code == .changeTokenExpired && sub.token != nil { return .expired }
                return .failed(
                    Frame(
                        type: .error,
                        payload: ErrorMessage(code: error.code.name, message: "cannot serve zone \(zone): \(error)")
                            .encoded()))
            }
            limit = max(1, limit / 2)
        }
        guard let token = encoded?.token ?? read?.token, let moreComing = encoded?.moreComing ?? read?.moreComing else {
            return .expired
        }
        return .page(ServedPage(encoded: encoded, read: read, token: token, moreComing: moreComing))
    }

    /// Moves subscription `sub` of `zone` on `id` on after its token expired. When the peer's
    /// knowledge covers the purge horizon it reflects every purged deletion: go on from that
    /// knowledge. Otherwise restart from the beginning, sending every record (no skipping by
    /// its knowledge), and say so (§3.5.2).
    func restartAfterExpiry(_ zone: RecordZone.ID, sub: SyncSession.Outbound, on id: ConnectionID) async {
        let fromKnowledge = ChangeToken(.init(kind: .zone, incarnation: sub.incarnation, vector: sub.peerKnowledge))
        if !sub.resetNext, sub.token != fromKnowledge, let horizon = try? await store.purgeHorizon(of: zone),
            horizon.isDominated(by: sub.peerKnowledge)
        {
            logger.trace("\(nodeID.short) token of conn \(id) for \(zone) expired; its knowledge covers the horizon")
            sessions[id]?.outbound[zone]?.token = fromKnowledge
            return
        }
        logger.trace("\(nodeID.short) token of conn \(id) for \(zone) expired: resetting")
        sessions[id]?.outbound[zone]?.beginResetPass()
    }

    /// Chooses what a batch of `zone` on `id` carries from `page`: the versions the peer's
    /// knowledge does not cover (those left to its upstreams, `skipping`, left out), sparse
    /// against what both sides reflect (`k`, this node's knowledge, met with the peer's) when
    /// the peer accepts that, whole otherwise; their field deltas; and the writer log section
    /// that proves their writes (Spec/authenticated-writes.md §4). `cur` is the subscription
    /// after the page was read; it is read afresh after each suspension.
    func batchContent(
        of page: ServedPage, zone: RecordZone.ID, cur: SyncSession.Outbound, session: SyncSession,
        knowledge k: VersionVector, skipping: Set<NodeID>, on id: ConnectionID
    ) async -> ContentOutcome {
        var cur = cur
        let sparseBase: VersionVector? =
            session.peer.map { $0.capabilities & Capability.sparseRecords != 0 } == true
            ? k.meet(cur.peerKnowledge) : nil
        let ownHorizon = (try? await store.purgeHorizon(of: zone)) ?? VersionVector()
        var selection: Selection
        // Writer log sections are built from the versions as held here (decoded).
        let proves = authenticatesWrites(on: id)
        if let e = page.encoded {
            do throws(WireError) {
                selection = try Self.select(
                    e, peerKnowledge: cur.peerKnowledge, sparseBase: sparseBase, skipping: skipping,
                    horizon: ownHorizon, keepingVersions: proves, limits: configuration.limits)
            } catch {
                return .failed(
                    Frame(
                        type: .error,
                        payload: ErrorMessage(
                            code: ShoalError.Code.internalError.name,
                            message:
                                "cannot serve zone \(zone): a stored version does not decode (\(error)); node \(nodeID.short)'s store is damaged"
                        ).encoded()))
            }
        } else {
            selection = Self.select(
                page.read?.records ?? [], peerKnowledge: cur.peerKnowledge, sparseBase: sparseBase, skipping: skipping,
                horizon: ownHorizon)
        }
        if let b = sparseBase, !selection.sparse.isEmpty, speaksFieldDeltas(id) {
            await encodeFieldDeltas(&selection.sparse, base: b)
            guard let fresh = sessions[id]?.outbound[zone], fresh.incarnation == cur.incarnation,
                fresh.token == cur.token
            else { return .superseded }
            cur = fresh
        }
        var proof: WriterLogPlan? = nil
        if proves {
            var versions = selection.whole.isEmpty ? selection.wholeVersions : ProvenVersions(selection.whole)
            versions.append(contentsOf: selection.sparseVersions)
            proof = await writerLogPlan(
                for: versions, zone: zone, incarnation: cur.incarnation, knowledge: cur.peerKnowledge,
                sent: cur.writerLogSent, headsStated: cur.writerLogHeadsStated,
                horizon: Self.horizonSent(caughtUp: !page.moreComing, resetPass: cur.inResetPass, ownHorizon), on: id)
            guard let fresh = sessions[id]?.outbound[zone], fresh.incarnation == cur.incarnation,
                fresh.token == cur.token
            else { return .superseded }
            cur = fresh
        }
        return .content(
            BatchContent(selection: selection, sparseBase: sparseBase, ownHorizon: ownHorizon, proof: proof), cur)
    }

    /// How many changes remain after `page`, for the peer's progress: counted for the first
    /// batch of a catch-up (or of a reset pass), when counting is quick; otherwise the count
    /// runs in the background and the first batch after it finishes carries the result, less
    /// the rows read since. Nil when the batch carries none.
    func remaining(after page: ServedPage, of zone: RecordZone.ID, subscription cur: inout SyncSession.Outbound) async
        -> UInt64?
    {
        if cur.nextBatch == 1 || cur.resetNext {
            cur.pendingCount = nil
            guard page.moreComing else { return nil }
            return await remainingAfterFirstBatch(zone, token: page.token, subscription: &cur)
        }
        guard let pending = cur.pendingCount else { return nil }
        cur.rowsSinceCount &+= page.rows
        let outcome = pending.outcome
        guard outcome.done else { return nil }
        cur.pendingCount = nil
        return outcome.value.map { UInt64(max(0, $0 &- cur.rowsSinceCount)) }
    }

    /// The frame that carries `message` (whose whole records `selection` holds) to the
    /// subscriber of `cur` on `session`. Once the subscription's number is established, a batch
    /// that needs nothing more names it and states its token as a change to the last one, its
    /// vectors written against the knowledge the subscription stated so far, which the
    /// subscriber holds as well (§3.5.4); otherwise a `changes` frame, which establishes the
    /// number when there is one.
    func batchFrame(
        _ message: ChangesMessage, selection: Selection, subscription cur: inout SyncSession.Outbound,
        session: SyncSession
    ) -> Frame {
        let reference: VersionVector? =
            session.peer.map { $0.capabilities & Capability.vectorsAgainstStated != 0 } == true
            ? cur.vectorReference : nil
        if let n = cur.number, cur.numberSent,
            let live = LiveChangesMessage(message, subscription: n, previousToken: cur.tokenSent, reference: reference)
        {
            let payload =
                selection.wholeCountEncoded > 0
                ? live.encoded(count: selection.wholeCountEncoded, recordBytes: selection.wholeEncoded)
                : live.encoded()
            return Frame(type: .liveChanges, payload: payload)
        }
        var message = message
        if let n = cur.number, !cur.numberSent {
            message.subscription = n
            cur.numberSent = true
        }
        let payload =
            selection.wholeCountEncoded > 0
            ? message.encoded(count: selection.wholeCountEncoded, recordBytes: selection.wholeEncoded)
            : message.encoded()
        return Frame(type: .changes, payload: payload)
    }
}

extension SyncSession.Outbound {
    /// Widens, per node, the range of writes left out for the peer's upstreams by `skipped`,
    /// those a batch left out.
    mutating func noteSkipped(_ more: [NodeID: (low: HLC, high: HLC)]) {
        for (node, range) in more {
            let was = skipped[node]
            skipped[node] = (min(was?.low ?? range.low, range.low), max(was?.high ?? range.high, range.high))
        }
    }

    /// Notes that a batch went to the subscriber: `message`, the batch itself, with `records`
    /// versions, and the knowledge it stated (`stated`). The subscription's position moves to
    /// the batch's token; a caught-up batch ends a reset pass and ends the reading (``Reading``),
    /// unless a commit arrived while the batch was read.
    mutating func noteSent(_ message: ChangesMessage, records: Int, stated: VersionVector?) {
        tokenSent = message.token.bytes
        vectorReference = SyncSession.vectorReference(after: vectorReference, reset: message.isReset, stated: stated)
        if records > 0 { lastRecordsBatch = nextBatch }
        nextBatch &+= 1
        token = message.token
        lastSent = message.isCaughtUp ? .caughtUp : .batch
        wantedSent = false
        if message.isCaughtUp {
            noteCaughtUp()
            resetPass = .none
        } else if resetPass == .starting {
            resetPass = .running
        }
    }

    /// The subscriber has all there is: reading ends, unless a commit arrived while the store was
    /// read (then the pump reads again).
    mutating func noteCaughtUp() {
        if reading != .reading(again: true) { reading = .caughtUp }
    }

    /// Something besides a commit gives the subscriber more to receive (records it asked for
    /// whole, a lost upstream): a caught-up subscription is read again; one being read already
    /// is left as it is.
    mutating func markDue() {
        if reading == .caughtUp { reading = .due }
    }

    /// A pump is reading the store for the subscription now: it reads again before the reading
    /// ends (something was committed or asked for meanwhile). False when no pump is reading.
    mutating func readAgainIfReading() -> Bool {
        guard case .reading = reading else { return false }
        reading = .reading(again: true)
        return true
    }

    /// A pump starts reading the store for the subscription: false, and nothing changes, when
    /// there is nothing to read (caught up, or being read already) or no room in the window.
    mutating func beginReading() -> Bool {
        guard reading == .due, unacknowledged < window else { return false }
        reading = .reading(again: false)
        return true
    }

    /// The pump stops reading (window full, superseded, or caught up): a subscription still
    /// marked as being read is due again.
    mutating func endReading() {
        if case .reading = reading { reading = .due }
    }

    /// Whether the subscriber may acknowledge batch `batch`: one sent and not acknowledged yet,
    /// or the last one acknowledged again.
    func mayAcknowledge(_ batch: UInt64) -> Bool {
        batch <= nextBatch &- 1 && batch >= acknowledged
    }

    /// Notes the subscriber's acknowledgement of batch `batch` with the knowledge it stated:
    /// the window moves on, and versions that knowledge covers are not sent to it.
    mutating func noteAcknowledged(_ batch: UInt64, knowledge: VersionVector) {
        acknowledged = batch
        peerKnowledge = peerKnowledge.union(knowledge)
    }

    /// What a commit to the subscription's zone makes of it (Spec/replication.md §4).
    enum CommitEffect: Equatable {
        /// Nothing to do now: a batch being read reads again before going idle, news waiting
        /// keeps waiting, or the subscription is already due to be read.
        case wait
        /// Read the zone now and send what is new, within the window.
        case read
    }

    /// Notes a commit to the subscription's zone, at `now` when live batching is on (nil: off),
    /// with `batchRecords`, the records a batch holds at most.
    ///
    /// While a batch is being read, the commit makes it read again. News already
    /// waiting takes the commit in and goes once it holds a batch's worth of commits (each holds
    /// at least one change). A caught-up subscription reads at once, unless a batch with records
    /// is unacknowledged: then the commit is part of a burst, and its news waits the delay so
    /// that the commits made meanwhile travel together.
    mutating func noteCommit(at now: ContinuousClock.Instant?, batchRecords: Int) -> CommitEffect {
        if readAgainIfReading() { return .wait }
        if let waiting = heldNews {
            let commits = waiting.commits &+ 1
            heldNews = commits >= batchRecords ? nil : (waiting.since, commits)
            return heldNews == nil ? .read : .wait
        }
        guard reading == .caughtUp else { return .wait }
        reading = .due
        if let now, lastRecordsBatch > acknowledged, batchRecords > 1 {
            heldNews = (now, 1)
            return .wait
        }
        return .read
    }
}
