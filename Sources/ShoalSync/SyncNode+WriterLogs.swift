// SyncNode+WriterLogs: a node signs the head of its own log for a zone, and checks the checkpoints of others (Spec/authenticated-writes.md §3).

package import ShoalWire
import ShoalStore
import ShoalTrust

extension SyncNode {
    /// The checkpoint of this node's own log for `zone` at its head: the one held when it
    /// already covers the head, otherwise a new one signed with the device key and kept. Nil
    /// when the node has no device key (its zones are not authenticated), the zone is not
    /// live, or its log is empty.
    package func ownCheckpoint(of zone: RecordZone.ID) async -> WriterCheckpoint? {
        guard let signer else { return nil }
        let node = store.nodeID
        guard let head = try? await store.ownLogHead(of: zone), head.sequence > 0,
            let info = try? await store.zone(zone)
        else { return nil }
        if let held = try? await store.checkpoint(of: node, in: zone), held.sequence == head.sequence,
            held.incarnation == info.incarnation
        {
            return held
        }
        let checkpoint = signer.sign(
            WriterCheckpoint(
                zone: zone, incarnation: info.incarnation, writer: node,
                sequence: head.sequence, chain: head.chain))
        do {
            try await store.keepCheckpoint(checkpoint)
        } catch {
            logger.trace("could not keep the checkpoint of this node's log for \(zone) at #\(head.sequence): \(error)")
        }
        return checkpoint
    }
}

// MARK: Sending (Spec/authenticated-writes.md §4)

/// The versions a batch carries, in its order, as a writer log section is built from them: each
/// one's vector, and the version itself decoded only when an entry must be compared with it
/// (most entries are implied by the version the write made, which the vector alone shows).
struct ProvenVersions {
    /// Each version's vector.
    private(set) var vectors: [VersionVector] = []
    private var versions: [Record?] = []
    private var encoded: [ArraySlice<UInt8>?] = []

    init() {}

    init(_ records: [Record]) {
        for r in records { append(r) }
    }

    var isEmpty: Bool { vectors.isEmpty }

    mutating func append(_ r: Record) {
        vectors.append(r.versionVector)
        versions.append(r)
        encoded.append(nil)
    }

    mutating func append(contentsOf records: [Record]) {
        for r in records { append(r) }
    }

    /// A version kept as stored (`bytes`), whose vector was read already.
    mutating func append(encoded bytes: ArraySlice<UInt8>, vector: VersionVector) {
        vectors.append(vector)
        versions.append(nil)
        encoded.append(bytes)
    }

    /// Every version, decoded.
    /// - Throws: `WireError` for a stored version that does not decode (a damaged store).
    func decoded(limits: WireLimits) throws(WireError) -> [Record] {
        var out = [Record]()
        out.reserveCapacity(vectors.count)
        for (i, v) in versions.enumerated() {
            if let v {
                out.append(v)
            } else if let bytes = encoded[i] {
                out.append(try Record(decoding: Array(bytes), limits: limits))
            }
        }
        return out
    }
}

extension SyncNode {
    /// Whether batches on connection `id` carry writer log sections: this node has a device key
    /// and authenticates writes, and the peer's hello says it does too (capability bit 8).
    func authenticatesWrites(on id: ConnectionID) -> Bool {
        signer != nil && configuration.authenticatesWrites
            && (sessions[id]?.peer?.capabilities ?? 0) & Capability.authenticatedWrites != 0
    }

    /// What a batch proves of its writes, and where the subscriber's logs stand after it.
    struct WriterLogPlan {
        /// The section, nil when every write of the batch is held by the subscriber already.
        var section: WriterLogSection?
        /// Per writer, the sequence the subscriber holds once the batch is applied.
        var sent: [NodeID: UInt64]
        /// Writers whose key the section carries (first range on the connection).
        var keys: Set<NodeID>
    }

    /// The writer log section of a batch of `zone` (incarnation `incarnation`) for connection
    /// `id` carrying `versions` — whole, then sparse, in the batch's order, each as this node
    /// holds it. Per writer of the versions, the range runs from one past what the subscriber
    /// holds (`sent`: the heads it stated in `subscribe`, when `headsStated`, then moved by the
    /// ranges sent; otherwise read from its `knowledge` the first time) to the first checkpoint at or
    /// past the newest write the versions name: this node signs its own log there, and ends
    /// another writer's range at a checkpoint it verified. A writer whose entries are not held
    /// here gets no range (the subscriber then refuses its writes in a zone with a share).
    /// A batch that hands over the purge `horizon` proves its writes too: the subscriber takes
    /// the horizon as its own, and its saves over it carry the horizon's entries in their
    /// vectors, which whoever receives them checks against the writers' logs (§5 rule 2).
    func writerLogPlan(
        for versions: ProvenVersions, zone: RecordZone.ID, incarnation: NodeID, knowledge: VersionVector,
        sent: [NodeID: UInt64], headsStated: Bool, horizon: VersionVector? = nil, on id: ConnectionID
    ) async -> WriterLogPlan {
        var plan = WriterLogPlan(section: nil, sent: sent, keys: [])
        guard let signer, !versions.isEmpty || horizon?.isEmpty == false else { return plan }
        var need = [NodeID: HLC]()
        for v in versions.vectors {
            for e in v.entries where e.hlc > need[e.node] ?? .zero { need[e.node] = e.hlc }
        }
        for e in horizon?.entries ?? [] where e.hlc > need[e.node] ?? .zero { need[e.node] = e.hlc }
        var records: [Record]? = nil
        let keysSent = sessions[id]?.writerKeysSent ?? []
        var ranges = [WriterLogSection.Range]()
        for (writer, newest) in need.sorted(by: { $0.key < $1.key }) {
            do throws(ShoalError) {
                let held: UInt64
                if let s = plan.sent[writer] {
                    held = s
                } else if headsStated {
                    held = 0
                } else {
                    held = try await store.sequence(of: writer, in: zone, atMost: knowledge[writer])
                }
                plan.sent[writer] = held
                let target = try await store.sequence(of: writer, in: zone, atMost: newest)
                guard target > held else { continue }
                let checkpoint: WriterCheckpoint
                if writer == nodeID {
                    guard let chain = try await store.chainValue(of: writer, in: zone, at: target) else { continue }
                    checkpoint = signer.sign(
                        WriterCheckpoint(
                            zone: zone, incarnation: incarnation, writer: writer, sequence: target, chain: chain))
                } else {
                    guard let c = try await store.checkpoint(of: writer, in: zone, atLeast: target),
                        c.incarnation == incarnation
                    else { continue }
                    checkpoint = c
                }
                guard
                    let items = try await rangeItems(
                        of: writer, in: zone, after: held, count: checkpoint.sequence &- held, versions: versions,
                        records: &records)
                else { continue }
                var key: [UInt8]? = nil
                if !keysSent.contains(writer) {
                    key = writer == nodeID ? signer.publicKeyDER : try await store.writerKey(of: writer)
                    guard key != nil else { continue }
                    plan.keys.insert(writer)
                }
                ranges.append(
                    WriterLogSection.Range(
                        writer: writer, publicKey: key, firstSequence: held &+ 1,
                        items: items,
                        seal: .init(chain: checkpoint.chain, signature: checkpoint.signature)))
                plan.sent[writer] = checkpoint.sequence
            } catch {
                logger.trace("\(nodeID.short) cannot prove \(writer.short)'s writes in \(zone) to conn \(id): \(error)")
            }
        }
        if !ranges.isEmpty { plan.section = WriterLogSection(ranges: ranges) }
        return plan
    }
}

extension SyncNode {
    /// The items of `writer`'s range of `count` entries after sequence `held`, beside the batch's
    /// `versions` (decoded into `records` the first time an entry must be compared with them):
    /// implied by the versions their writes made, read only where none did. Nil when the log
    /// here does not hold them all.
    func rangeItems(
        of writer: NodeID, in zone: RecordZone.ID, after held: UInt64, count: UInt64, versions: ProvenVersions,
        records: inout [Record]?
    ) async throws(ShoalError) -> [WriterLogSection.Item]? {
        let made = WriterLog.madeBy(writer, vectors: versions.vectors)
        // Most ranges are the writes their batch's versions made: the timestamps alone say so.
        let stamps = try await store.entryTimestamps(of: writer, in: zone, after: held, limit: Int(clamping: count))
        guard UInt64(stamps.count) == count else { return nil }
        var implied = [WriterLogSection.Item]()
        implied.reserveCapacity(stamps.count)
        for hlc in stamps {
            guard let i = made[hlc] else { break }
            implied.append(.implied(record: i))
        }
        if implied.count == stamps.count { return implied }
        let entries = try await store.entries(of: writer, in: zone, after: held, limit: Int(clamping: count)) {
            made[$0] == nil
        }
        guard UInt64(entries.count) == count else { return nil }
        // Versions are decoded only when an entry no version made must be compared.
        if records == nil, entries.contains(where: { $0.entry != nil }) {
            do throws(WireError) {
                records = try versions.decoded(limits: configuration.limits)
            } catch {
                throw .internalError(
                    "a stored version of zone \(zone) does not decode (\(error)); the store is damaged")
            }
        }
        return WriterLog.items(for: entries, of: writer, versions: records ?? [], made: made)
    }

    /// Notes that a batch carrying `plan`'s section went to the subscriber `cur` on `id`.
    func note(_ plan: WriterLogPlan, in cur: inout SyncSession.Outbound, on id: ConnectionID) {
        cur.writerLogSent = plan.sent
        sessions[id]?.writerKeysSent.formUnion(plan.keys)
        statistics.writerRangesSent &+= plan.section?.ranges.count ?? 0
    }
}

// MARK: Receiving (Spec/authenticated-writes.md §5, §6)

extension SyncNode {
    /// What checking a batch's writes found.
    struct WriteCheck {
        /// The names of the records whose versions are left out: they hold writes, not held
        /// here, of a writer whose device may not write the zone (a removed member, relayed by a
        /// member that held the share from before the removal).
        var left = Set<String>()
        /// Per writer, the verified entries (by ascending sequence) a version of the batch that
        /// is not left out shows: once the batch is stored they are reflected (§6).
        var shown = [NodeID: [(sequence: UInt64, hlc: HLC)]]()
        /// The peer's own runs taken on the connection's word, kept with the batch (§5.1).
        var runs = [ImpliedRun]()
    }

    /// What checking a range found: the sequence and timestamp of each of its entries, and the
    /// run to keep with the batch when it was taken on the connection's word.
    struct CheckedRange {
        var places: [(sequence: UInt64, hlc: HLC)]
        var run: ImpliedRun? = nil
    }

    /// Verifies and keeps the ranges of batch `m`'s writer log section, then, in a zone with a
    /// share, checks that every write its versions show is a verified entry of a writer whose
    /// device may write the zone. `versions` are the batch's, whole then sparse as rebuilt, nil
    /// where one could not be rebuilt. Nothing of the batch is applied when this throws.
    /// - Throws: `permissionFailure` for a writer bound to another device; `invalidArguments` for
    ///   a range or version that does not prove out (a forged or unproven write); `resyncNeeded`
    ///   when a range leans on a version that could not be rebuilt here.
    func checkWrites(
        of m: ChangesMessage, versions: [Record?], rebuiltAhead: DecodedChanges.RebuiltRanges? = nil, from peer: NodeID,
        on id: ConnectionID
    ) async throws(SyncFailure) -> WriteCheck {
        let what = "batch \(m.batch) of zone \(m.zone) from \(peer.short)"
        let shared = await heldShare(m.zone) != nil
        guard authenticatesWrites(on: id) else {
            if shared && signer != nil && configuration.authenticatesWrites {
                throw refusal(
                    "\(what): the peer does not authenticate writes (capability bit 8), and zone \(m.zone) has a share, whose writes must be proven by their writers (Spec/authenticated-writes.md §4)",
                    knowledgeOnly: false, code: .permissionFailure)
            }
            return WriteCheck()
        }
        // Entries no version of the batch shows, by dot; an entry rebuilt from a version is
        // needed only to check that version, which holds its dot in `rebuilt`.
        var known = [Dot: WriteEntry]()
        var implied = [ImpliedEntry]()
        var rebuilt = RebuiltDots(count: versions.count)
        var outsiders = Set<NodeID>()
        var shownBy = [NodeID: [(index: Int, sequence: UInt64, hlc: HLC)]]()
        // Entries rebuilt ahead are those of these versions only in a batch without sparse records.
        let ahead = m.sparseRecords.isEmpty && rebuiltAhead?.count == m.writerLog?.ranges.count ? rebuiltAhead : nil
        var check = WriteCheck()
        var taken = [NodeID: HLC]()
        for (r, range) in (m.writerLog?.ranges ?? []).enumerated() {
            guard
                let checked = try await verify(
                    range, of: m, versions: versions, rebuilt: ahead?[r] ?? nil, shared: shared, from: peer, on: id)
            else {
                outsiders.insert(range.writer)
                continue
            }
            if let run = checked.run {
                check.runs.append(run)
                taken[run.writer] = run.items.last?.hlc
            }
            for (item, e) in zip(range.items, checked.places) {
                let dot = Dot(node: range.writer, hlc: e.hlc)
                if case .whole(let whole) = item {
                    known[dot] = whole
                } else if let i = Self.index(of: item), i < rebuilt.count {
                    rebuilt.add(dot, at: i)
                    implied.append(ImpliedEntry(dot: dot, item: item, sequence: e.sequence))
                    shownBy[range.writer, default: []].append((i, e.sequence, e.hlc))
                }
            }
        }
        guard shared else { return check }
        check.left = try await checkVersions(
            versions, rebuilt: rebuilt, zone: m.zone, known: known, implied: implied, outsiders: outsiders,
            taken: taken, horizon: m.horizon, what: what)
        for (writer, list) in shownBy {
            check.shown[writer] = list.compactMap { e in
                guard let v = versions[e.index], !check.left.contains(v.id.name) else { return nil }
                return (e.sequence, e.hlc)
            }
        }
        return check
    }

    /// Notes, once batch `m` of a zone is stored, the entries its versions show as reflected
    /// (Spec/authenticated-writes.md §6), so that adopting knowledge need not read them back.
    func noteReflected(_ check: WriteCheck, zone: RecordZone.ID) async {
        for (writer, shown) in check.shown where !shown.isEmpty {
            do {
                try await store.noteReflected(of: writer, in: zone, shown: shown)
            } catch {
                // Not lost: the reflected prefix is then found by reading the zone.
                logger.trace(
                    "\(nodeID.short) could not note \(shown.count) reflected entries of \(writer.short) in \(zone): \(error)"
                )
            }
        }
    }

    /// An entry of a batch's range that a version of the batch implies, rebuilt as a
    /// ``WriteEntry`` only when another version shows its dot.
    struct ImpliedEntry {
        var dot: Dot
        var item: WriterLogSection.Item
        var sequence: UInt64
    }

    /// Verifies one range and keeps its new entries, or takes it on the connection's word
    /// (``takenOnWord(_:of:versions:shared:from:on:what:)``, kept with the batch); returns where
    /// its entries stand, or nil for a writer whose device may not write the zone (nothing of
    /// it is kept). `rebuilt`: the range's entries rebuilt from `versions` already (by the read
    /// loop, ``decodeAhead(_:on:)``).
    func verify(
        _ range: WriterLogSection.Range, of m: ChangesMessage, versions: [Record?],
        rebuilt: Result<[WriterLog.EncodedEntry], WriterLog.Mismatch>? = nil, shared: Bool, from peer: NodeID,
        on id: ConnectionID
    ) async throws(SyncFailure) -> CheckedRange? {
        let writer = range.writer, zone = m.zone
        let what =
            "batch \(m.batch) of zone \(zone) from \(peer.short), range of \(writer.short) from #\(range.firstSequence)"
        switch try await takenOnWord(range, of: m, versions: versions, shared: shared, from: peer, on: id, what: what) {
        case .taken(let checked): return checked
        case .outsider: return nil
        case .no: break
        }
        let entries = try entries(
            of: range, rebuilt: rebuilt ?? WriterLog.encodedEntries(of: range, versions: versions), versions: versions,
            zone: zone, from: peer, what: what)
        let head = try await reading(what) { () throws(ShoalError) in try await store.logHead(of: writer, in: zone) }
        if range.firstSequence > head.sequence &+ 1 {
            // A range that does not join the log held here cannot be checked.
            guard shared else { return CheckedRange(places: []) }
            throw refusal(
                "\(what): this node holds \(head.sequence) entries of that log, so the range leaves a gap; refused whole (Spec/authenticated-writes.md §4)",
                knowledgeOnly: false)
        }
        // Entries held already must be the same entries: the log is one history.
        let overlap = Int(clamping: min(UInt64(entries.count), head.sequence &+ 1 &- range.firstSequence))
        if overlap > 0 {
            let held = try await reading(what) { () throws(ShoalError) in
                try await store.entries(of: writer, in: zone, after: range.firstSequence &- 1, limit: overlap)
            }
            guard held.map(WriterLog.EncodedEntry.init) == Array(entries.prefix(overlap)) else {
                throw refusal(
                    "\(what): its entries differ from those of that log held here; refused whole (Spec/authenticated-writes.md §5)",
                    knowledgeOnly: false)
            }
        }
        guard overlap < entries.count else { return CheckedRange(places: entries.map { ($0.sequence, $0.hlc) }) }
        guard writer != nodeID else {
            throw refusal(
                "\(what): it holds writes of node \(nodeID.short) (this node) past its newest, #\(head.sequence); refused whole (Spec/authenticated-writes.md §5)",
                knowledgeOnly: false)
        }
        guard let key = try await writerKey(for: range, zone: zone, shared: shared, from: peer, on: id, what: what)
        else { return nil }
        guard let seal = range.seal else {
            throw refusal(
                "\(what): the range is not sealed by a checkpoint; refused whole (Spec/authenticated-writes.md §4)",
                knowledgeOnly: false)
        }
        let checkpoint = WriterCheckpoint(
            zone: zone, incarnation: m.incarnation, writer: writer, sequence: range.lastSequence,
            chain: seal.chain, signature: seal.signature)
        guard checkpoint.signer(key: key.der) == key.device else {
            throw refusal(
                "\(what): its checkpoint's signature does not verify under the writer's device key; refused whole (Spec/authenticated-writes.md §3)",
                knowledgeOnly: false)
        }
        let fresh = Array(entries[overlap...])
        let kept = try await reading(what) { () throws(ShoalError) in
            try await store.appendVerified(fresh, of: writer, checkpoint: checkpoint, in: zone)
        }
        guard kept else {
            throw refusal(
                "\(what): its entries do not hash to its checkpoint, or do not follow the log held here; refused whole (Spec/authenticated-writes.md §2.1)",
                knowledgeOnly: false)
        }
        statistics.writerEntriesVerified &+= fresh.count
        return CheckedRange(places: entries.map { ($0.sequence, $0.hlc) })
    }

    /// The entries of `range` as `rebuilt` from the batch's `versions`.
    /// - Throws: `resyncNeeded` when one is implied by a version that could not be rebuilt here
    ///   (the subscription starts over with whole versions); `invalidArguments` for a mismatch.
    func entries(
        of range: WriterLogSection.Range, rebuilt: Result<[WriterLog.EncodedEntry], WriterLog.Mismatch>,
        versions: [Record?], zone: RecordZone.ID, from peer: NodeID, what: String
    ) throws(SyncFailure) -> [WriterLog.EncodedEntry] {
        switch rebuilt {
        case .success(let e): return e
        case .failure(let mismatch):
            if range.items.contains(where: {
                Self.index(of: $0).map { $0 < versions.count && versions[$0] == nil } ?? false
            }) {
                // The entries cannot be rebuilt here, and the range is not sent again: the
                // subscription starts over with whole versions, as for any sparse record that
                // cannot be rebuilt (Spec/replication.md §3.5.1).
                wholeVersionsNeeded.insert(PeerZone(peer: peer, zone: zone))
                statistics.wholeVersionRequests &+= 1
                throw SyncFailure(
                    .resyncNeeded,
                    "\(what) proves writes by versions this node could not rebuild; reconnecting to receive whole versions"
                )
            }
            throw refusal("\(what): \(mismatch); refused whole (Spec/authenticated-writes.md §5)", knowledgeOnly: false)
        }
    }

    /// Whether a range was taken on the connection's word.
    enum OnWord {
        /// Not: it is checked as it arrives.
        case no
        /// Its writer's device may not write the zone (nothing of it is kept).
        case outsider
        /// Taken: its run is kept with the batch.
        case taken(CheckedRange)
    }

    /// Takes `range` on the connection's word (Spec/authenticated-writes.md §5.1) when it is
    /// the peer's own log, continues the log held here, and every item is the write that made a
    /// version of the batch (a whole version whose vector names the peer alone): mutual TLS
    /// already proves those writes the peer's, so the entries are not rebuilt or chained now.
    /// The key and the checkpoint's signature are checked as for any range; the run is kept
    /// with the batch, its chain checked when the log is first read past it.
    func takenOnWord(
        _ range: WriterLogSection.Range, of m: ChangesMessage, versions: [Record?], shared: Bool, from peer: NodeID,
        on id: ConnectionID, what: String
    ) async throws(SyncFailure) -> OnWord {
        let writer = range.writer
        guard configuration.takesOwnWritesOnWord, writer == peer, writer != nodeID, m.sparseRecords.isEmpty,
            let seal = range.seal, !range.items.isEmpty
        else { return .no }
        var items = [ImpliedRun.Item]()
        items.reserveCapacity(range.items.count)
        for item in range.items {
            guard case .implied(let i) = item, i >= 0, i < versions.count, let e = versions[i]?.versionVector.entries,
                e.count == 1, e[0].node == writer, let name = versions[i]?.id.name
            else { return .no }
            items.append(.made(record: name, hlc: e[0].hlc, index: i))
        }
        let (head, info) = try await reading(what) { () throws(ShoalError) in
            (try await store.logHead(of: writer, in: m.zone), try await store.zone(m.zone))
        }
        guard range.firstSequence == head.sequence &+ 1, info.incarnation == m.incarnation else { return .no }
        // Out of order: the full check refuses it, naming the entry.
        var previous = head.hlc
        for item in items {
            guard item.hlc > previous else { return .no }
            previous = item.hlc
        }
        guard let key = try await writerKey(for: range, zone: m.zone, shared: shared, from: peer, on: id, what: what)
        else { return .outsider }
        let checkpoint = WriterCheckpoint(
            zone: m.zone, incarnation: m.incarnation, writer: writer, sequence: range.lastSequence,
            chain: seal.chain, signature: seal.signature)
        guard checkpoint.signer(key: key.der) == key.device else {
            throw refusal(
                "\(what): its checkpoint's signature does not verify under the writer's device key; refused whole (Spec/authenticated-writes.md §3)",
                knowledgeOnly: false)
        }
        statistics.writerEntriesTaken &+= items.count
        let places = items.indices.map { (range.firstSequence &+ UInt64($0), items[$0].hlc) }
        return .taken(
            CheckedRange(
                places: places,
                run: ImpliedRun(
                    writer: writer, firstSequence: range.firstSequence, items: items, checkpoint: checkpoint)))
    }

    /// `body`'s result; a store failure becomes the failure to check `what`.
    func reading<T>(_ what: String, _ body: () async throws(ShoalError) -> T) async throws(SyncFailure) -> T {
        do throws(ShoalError) {
            return try await body()
        } catch {
            throw SyncFailure(error.code, "could not check \(what): \(error)")
        }
    }

    static func index(of item: WriterLogSection.Item) -> Int? {
        switch item {
        case .implied(let i), .impliedAt(let i, _), .partial(let i, _, _): return i
        case .whole: return nil
        }
    }

    /// The device key `range`'s checkpoint is verified under: the one it carries, or the one
    /// kept for its writer. The writer's node ID is bound to that device for good (Spec/security.md
    /// §5), one node ID per device; the peer's own writes are its device's; and in a zone with a
    /// share the device must be its owner or a read-write member (nil when it is not: its
    /// entries are not kept, and neither is its key).
    func writerKey(
        for range: WriterLogSection.Range, zone: RecordZone.ID, shared: Bool, from peer: NodeID, on id: ConnectionID,
        what: String
    ) async throws(SyncFailure) -> (der: [UInt8], device: DeviceID)? {
        let writer = range.writer
        let kept = try await reading(what) { () throws(ShoalError) in try await store.writerKey(of: writer) }
        guard let der = range.publicKey ?? kept else {
            throw refusal(
                "\(what): no device key is known here for that writer, and the range carries none; refused whole (Spec/authenticated-writes.md §4)",
                knowledgeOnly: false)
        }
        if let kept, kept != der {
            throw refusal(
                "\(what): the range carries a device key other than the one that writer's checkpoints are verified under here; refused whole (Spec/security.md §5)",
                knowledgeOnly: false, code: .permissionFailure)
        }
        let device = ShareSigner.device(ofKey: der)
        if writer == peer, let d = sessions[id]?.device, d != device {
            throw refusal(
                "\(what): the peer's own writes are signed by device \(device), not by the peer's device \(d); refused whole (Spec/security.md §5)",
                knowledgeOnly: false, code: .permissionFailure)
        }
        let (bound, other) = try await reading(what) { () throws(ShoalError) in
            (try await store.boundDevice(of: writer), try await store.boundNode(of: device))
        }
        if let bound, bound != device {
            throw refusal(
                "\(what): node \(writer.short) is bound here to device \(bound), not to the device that signed the range, \(device); refused whole (Spec/security.md §5)",
                knowledgeOnly: false, code: .permissionFailure)
        }
        if bound == nil, let other, other != writer {
            throw refusal(
                "\(what): device \(device) speaks for node \(other.short) here, so it cannot write as node \(writer.short); refused whole (Spec/security.md §5)",
                knowledgeOnly: false, code: .permissionFailure)
        }
        if shared, await access(device, zone) < .write {
            statistics.refusedForPermission &+= 1
            logger.trace(
                "\(nodeID.short) \(what): its writer's device \(device) may not write zone \(zone); its writes are left out (Spec/security.md §6.2)"
            )
            return nil
        }
        try await reading(what) { () throws(ShoalError) in
            if bound == nil { try await store.bind(writer, to: device) }
            if kept == nil { try await store.keepWriterKey(der, of: writer) }
        }
        return (der, device)
    }

    /// Checks rules 1 and 2 of Spec/authenticated-writes.md §5 for `versions` of a zone with a
    /// share: every head, slot stamp and creation of another writer is a verified entry of it
    /// with matching digests, the type and parent are those a head wrote, and no vector entry
    /// names a write past the newest verified entry of its writer. `versions` are the batch's
    /// (nil: not rebuilt here, not checked). `known` holds the entries the batch brought whole;
    /// `rebuilt` the dots of those rebuilt from each version (their digests are its own, so
    /// they are not hashed again), and `implied` lists those entries,
    /// looked up only for a dot some other version shows; `taken`, the last timestamp of each run
    /// taken on the connection's word, kept with the batch. Versions holding an unheld write of one
    /// of `outsiders` (writers whose device may not write the zone) are left out instead: their
    /// names are returned. A purge `horizon` the batch hands over is held to rule 2 as a
    /// vector is: adopting it makes this node count every write under it as seen. A write
    /// under the purge horizon held here counts as proven (it was proven when that horizon was
    /// made or adopted). The horizon's entries of `outsiders` are not checked: their writes are
    /// left out wherever they show, so counting them as seen hides no write that counts.
    func checkVersions(
        _ versions: [Record?], rebuilt: RebuiltDots, zone: RecordZone.ID, known: [Dot: WriteEntry],
        implied: [ImpliedEntry] = [], outsiders: Set<NodeID>, taken: [NodeID: HLC] = [:],
        horizon: VersionVector? = nil, what: String
    ) async throws(SyncFailure) -> Set<String> {
        var wanted = Set<Dot>()
        var writers = Set<NodeID>()
        for e in horizon?.entries ?? [] where e.node != nodeID { writers.insert(e.node) }
        // Versions every other writer's dot of which an entry rebuilt from the version itself
        // covers (an initial sync's, for one): such an entry shows the version as it is, so
        // checking the version against its entries cannot fail and is skipped.
        // The versions are read in place (`versions[i]?.…`): binding each to a name copied it.
        var provenByItself = [Bool](repeating: false, count: versions.count)
        for i in versions.indices {
            guard let vector = versions[i]?.versionVector else { continue }
            for e in vector.entries where e.node != nodeID { writers.insert(e.node) }
            var all = true
            versions[i]?.forEachDot { d in
                guard d.node != nodeID, !rebuilt.contains(d, at: i) else { return }
                all = false
                if known[d] == nil { wanted.insert(d) }
            }
            provenByItself[i] = all
        }
        var entries = known
        var newest = [NodeID: HLC]()
        if !wanted.isEmpty {
            for e in implied where wanted.contains(e.dot) {
                guard
                    let entry = WriterLog.entry(
                        for: e.item, sequence: e.sequence, writer: e.dot.node, versions: versions)
                else { continue }
                entries[e.dot] = entry
                wanted.remove(e.dot)
            }
        }
        do throws(ShoalError) {
            if !wanted.isEmpty { for (d, e) in try await store.entries(of: wanted, in: zone) { entries[d] = e } }
            let held = writers.isEmpty ? VersionVector() : try await store.purgeHorizon(of: zone)
            for w in writers {
                newest[w] = max(try await store.logHead(of: w, in: zone).hlc, held[w], taken[w] ?? .zero)
            }
        } catch {
            throw SyncFailure(error.code, "could not check \(what): \(error)")
        }
        // An outsider's writes are left out wherever they show, so a horizon over them hides none.
        for e in horizon?.entries ?? []
        where e.node != nodeID && !outsiders.contains(e.node) && e.hlc > newest[e.node] ?? .zero {
            throw refusal(
                "\(what): its purge horizon names a write of node \(e.node.short) at \(e.hlc), past the newest entry of its log held here; refused whole (Spec/authenticated-writes.md §5)",
                knowledgeOnly: false)
        }
        var left = Set<String>()
        for i in versions.indices {
            guard let vector = versions[i]?.versionVector else { continue }
            if !outsiders.isEmpty, let v = versions[i],
                Self.dots(of: v).contains(where: { outsiders.contains($0.node) && entries[$0] == nil })
            {
                left.insert(v.id.name)
                continue
            }
            if let e = vector.entries.first(where: { $0.node != nodeID && $0.hlc > newest[$0.node] ?? .zero }) {
                throw refusal(
                    "\(what): record \(versions[i]?.id.description ?? "?") names a write of node \(e.node.short) at \(e.hlc), past the newest entry of its log held here; refused whole (Spec/authenticated-writes.md §5)",
                    knowledgeOnly: false)
            }
            if provenByItself[i] { continue }
            guard let v = versions[i] else { continue }
            try checkProven(v, at: i, rebuilt: rebuilt, entries: entries, zone: zone, what: what)
        }
        return left
    }

    /// Rule 1 of Spec/authenticated-writes.md §5 for version `v`, the `i`th of its batch: every
    /// head, slot stamp and creation of another writer is one of that writer's `entries` (or
    /// rebuilt from `v` itself, `rebuilt`), and its type and parent are those one of its saving
    /// heads wrote.
    func checkProven(
        _ v: Record, at i: Int, rebuilt: RebuiltDots, entries: [Dot: WriteEntry], zone: RecordZone.ID,
        what: String
    ) throws(SyncFailure) {
        for e in v.versionVector.entries where e.node != nodeID {
            let w = e.node
            if let mismatch = WriterLog.check(
                v, writer: w, isRebuilt: { rebuilt.contains($0, at: i) }, entry: { entries[Dot(node: w, hlc: $0)] })
            {
                throw refusal(
                    "\(what): \(mismatch); refused whole (Spec/authenticated-writes.md §5)", knowledgeOnly: false)
            }
        }
        // The type and parent are those one of its saving heads wrote; an entry rebuilt from
        // this version at a saving head holds them by construction.
        let saves = v.heads.filter { !$0.isDeletion }
        guard !saves.isEmpty, !saves.contains(where: { $0.node == nodeID }) else { return }
        if saves.contains(where: { rebuilt.contains(Dot(node: $0.node, hlc: v.versionVector[$0.node]), at: i) }) {
            return
        }
        let system = WriteEntry.Slot(
            name: "", digest: WriterLog.systemDigest(recordType: v.recordType, parent: v.parent, zone: zone))
        let written = saves.contains { h in
            entries[Dot(node: h.node, hlc: v.versionVector[h.node])]?.slots.contains(system) ?? false
        }
        if !written {
            throw refusal(
                "\(what): record \(v.id) has a type or parent none of its heads wrote; refused whole (Spec/authenticated-writes.md §5)",
                knowledgeOnly: false)
        }
    }

    /// The writes a version shows by dot: its heads, its slots' stamps and its creation.
    static func dots(of v: Record) -> Set<Dot> {
        var out = Set<Dot>()
        v.forEachDot { out.insert($0) }
        return out
    }

    /// `shown`, knowledge a caught-up batch of `zone` stated as far as the zone shows it, held
    /// to each writer's reflected prefix in a zone with a share (Spec/authenticated-writes.md §6):
    /// a relay that withheld a write cannot make this node skip it.
    func reflectedKnowledge(_ shown: VersionVector, zone: RecordZone.ID, on id: ConnectionID) async -> VersionVector {
        guard authenticatesWrites(on: id), await heldShare(zone) != nil else { return shown }
        let horizon = (try? await store.purgeHorizon(of: zone)) ?? VersionVector()
        var out = VersionVector()
        for e in shown.entries {
            if e.node == nodeID {
                out.advance(e.node, to: e.hlc)
                continue
            }
            // Purged writes count as shown: the horizon covers them.
            let through = max((try? await store.reflected(of: e.node, in: zone))?.hlc ?? .zero, horizon[e.node])
            let hlc = min(e.hlc, through)
            if hlc != .zero { out.advance(e.node, to: hlc) }
        }
        return out
    }
}

extension Record {
    /// Calls `body` with each write this version shows by dot (``SyncNode/dots(of:)``), repeats
    /// included. A method, so that `versions[i]?.forEachDot` reads an element in place.
    func forEachDot(_ body: (Dot) -> Void) {
        for h in heads { body(Dot(node: h.node, hlc: versionVector[h.node])) }
        // Read in place: iterating the array would copy every field.
        fields.withUnsafeBufferPointer { fields in
            for i in fields.indices { if let s = fields[i].stamp { body(s) } }
        }
        if let c = creation { body(c) }
    }
}
