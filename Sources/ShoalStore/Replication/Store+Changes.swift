// Store+Changes: the per-zone change feed and database feed, with change tokens that never lie.

public import ShoalWire

/// One page of a zone's change feed.
public struct ZoneChanges: Sendable {
    /// The latest version of every record changed since the token, tombstones included, in
    /// change order. Replication sends these as they are.
    public var records: [Record]
    /// Pass this to the next fetch.
    public var token: ChangeToken
    /// Whether more changes follow; fetch again with ``token``.
    public var moreComing: Bool

    /// The live records among ``records``.
    public var modifiedRecords: [Record] { records.filter { !$0.isDeleted } }
    /// The deletions among ``records``.
    public var deletions: [Tombstone] { records.compactMap(Tombstone.init) }
}

/// A page of a zone's change feed as stored canonical encodings (``Store/encodedChanges(in:since:limit:maxBytes:)``).
package struct EncodedZoneChanges: Sendable {
    /// How many records the page holds.
    package var count: Int
    /// Their canonical encodings, back to back, in change order.
    package var bytes: [UInt8]
    /// Where each record's encoding ends in ``bytes``.
    package var ends: [Int]
    /// Pass this to the next fetch.
    package var token: ChangeToken
    /// Whether more changes follow.
    package var moreComing: Bool

    /// A page of `count` records whose encodings are `bytes`, the `i`th ending at `ends[i]`.
    package init(count: Int, bytes: [UInt8], ends: [Int], token: ChangeToken, moreComing: Bool) {
        (self.count, self.bytes, self.ends, self.token, self.moreComing) = (count, bytes, ends, token, moreComing)
    }

    /// Record `i`'s encoding.
    package func record(_ i: Int) -> ArraySlice<UInt8> { bytes[(i == 0 ? 0 : ends[i - 1])..<ends[i]] }
}

/// What changed among a database's zones.
public struct DatabaseChanges: Sendable {
    /// Zones created or changed since the token, sorted by ID.
    public var changedZones: [RecordZone.ID]
    /// Zones deleted since the token, sorted by ID.
    public var deletedZones: [RecordZone.ID]
    /// Pass this to the next fetch.
    public var token: ChangeToken
}

extension Store {
    /// Largest `limit` accepted by ``changes(in:since:limit:)``.
    public static let maxChangesPerFetch = 10_000

    /// The changes of `zone` since `token` (everything when nil), oldest first.
    ///
    /// A token issued by this store resumes exactly by change sequence. Any other token (issued by
    /// a peer, or by a copy of this store) is answered from its version vector: every record whose
    /// version vector it does not dominate — found through the per-origin clock index, not a scan —
    /// and every live merge of concurrent writes (two or more heads), which replication may have
    /// to send whatever the holder's vector (Spec/replication.md §3.5.3 rule 6).
    /// The token of the last page carries the zone's version vector as of the last change included;
    /// mid-feed tokens keep the vector the fetch started from, so a token never claims changes its
    /// holder has not received.
    ///
    /// - Parameters:
    ///   - limit: records per page, 1…``maxChangesPerFetch``; `moreComing` says whether to fetch again.
    ///   - maxBytes: the most bytes of stored encodings a page reads; the page ends before the
    ///     record that would pass it (a first record larger than it comes alone). The bound holds
    ///     while the page is read, so a page of large records never loads more than this (plus
    ///     one record). Default: no bound but `limit`.
    /// - Throws: `zoneNotFound`; `changeTokenExpired` when the token is for another incarnation of
    ///   the zone, or older than its purge horizon (tombstones it never saw were purged) — fetch
    ///   again from nil and use ``allRecordIDs(in:)`` to find deletions; `invalidArguments` for
    ///   bytes that are not a zone token or a bad limit.
    public func changes(in zone: RecordZone.ID, since token: ChangeToken?, limit: Int = 1_000, maxBytes: Int = .max)
        throws(ShoalError) -> ZoneChanges
    {
        try changes(in: zone, since: token, limit: limit, maxBytes: maxBytes, compactToken: false)
    }

    /// ``changes(in:since:limit:maxBytes:)``; with `compactToken`, the token returned at the end
    /// of the feed is a replication token (``feedToken(_:start:more:lastSeq:compact:)``).
    package func changes(
        in zone: RecordZone.ID, since token: ChangeToken?, limit: Int, maxBytes: Int, compactToken: Bool
    ) throws(ShoalError) -> ZoneChanges {
        let start = try feedStart(zone, since: token, limit: limit)
        let z = start.zone
        var records: [Record]
        var more = false
        var lastSeq: UInt64 = 0
        if let afterSeq = start.afterSeq {
            // One range read of the table (keyed by change order); rows are copied out in runs
            // that other threads decode while the statement reads on.
            (records, more, lastSeq) = try readAndDecodeFeed(z, after: afterSeq, limit: limit, maxBytes: maxBytes)
        } else {
            let rows: [(seq: UInt64, record: Record)]
            (rows, more) = try changedSince(
                vector: start.vector ?? VersionVector(), in: z, limit: limit, maxBytes: maxBytes)
            lastSeq = rows.last?.seq ?? 0
            records = rows.map(\.record)
        }
        return ZoneChanges(
            records: records,
            token: feedToken(z, start: start.vector, more: more, lastSeq: lastSeq, compact: compactToken),
            moreComing: more)
    }

    /// A page of the change feed as the records' stored canonical encodings, back to back, for
    /// replication to send without decoding and re-encoding them; nil when `token` does not
    /// resume by this store's change sequence (then use ``changes(in:since:limit:maxBytes:)``).
    /// Pages, tokens, the byte bound and errors are those of ``changes(in:since:limit:maxBytes:)``.
    /// With `compactToken`, as ``changes(in:since:limit:maxBytes:compactToken:)``.
    package func encodedChanges(
        in zone: RecordZone.ID, since token: ChangeToken?, limit: Int = 1_000, maxBytes: Int = .max,
        compactToken: Bool = false
    ) throws(ShoalError) -> EncodedZoneChanges? {
        let start = try feedStart(zone, since: token, limit: limit)
        guard let afterSeq = start.afterSeq else { return nil }
        let (batch, more, lastSeq) = try readFeed(start.zone, after: afterSeq, limit: limit, maxBytes: maxBytes)
        return EncodedZoneChanges(
            count: batch.count, bytes: batch.packedBytes, ends: batch.rowEnds,
            token: feedToken(start.zone, start: start.vector, more: more, lastSeq: lastSeq, compact: compactToken),
            moreComing: more)
    }

    /// Whether `zone` holds a live merge of concurrent writes (two or more heads), which a server
    /// may have to send whatever the subscriber's knowledge (Spec/replication.md §3.5.3 rule 6).
    package func holdsMerges(in zone: RecordZone.ID) throws(ShoalError) -> Bool {
        let z = try liveZone(zone)
        let s = try db.statement("SELECT 1 FROM merged_heads WHERE zone = ? LIMIT 1")
        defer { s.reset() }
        s.bind(1, z.row)
        return try s.step()
    }

    /// The end of `zone`'s feed: the zone's version vector (which dominates every stored version's,
    /// tombstones included) and the token a fetch reaching the end returns now.
    /// - Throws: `zoneNotFound` for a zone not held (or deleted).
    package func feedEnd(of zone: RecordZone.ID, compact: Bool = false) throws(ShoalError) -> (
        vector: VersionVector, token: ChangeToken
    ) {
        let z = try liveZone(zone)
        return (z.vector, feedToken(z, start: nil, more: false, lastSeq: z.seq, compact: compact))
    }

    /// Checks a feed request; where it starts: after a change sequence of this store, or (nil)
    /// from a vector, for tokens this store did not issue.
    func feedStart(_ zone: RecordZone.ID, since token: ChangeToken?, limit: Int) throws(ShoalError) -> (
        zone: ZoneState, vector: VersionVector?, afterSeq: UInt64?
    ) {
        let z = try liveZone(zone)
        guard (1...Self.maxChangesPerFetch).contains(limit) else {
            throw .invalidArguments("changes(in: \(zone), limit: \(limit)): limit must be 1…\(Self.maxChangesPerFetch)")
        }
        guard let token else { return (z, nil, 0) }
        let c = try decode(token, kind: .zone, what: "zone \(zone)")
        guard c.incarnation == z.incarnation else {
            throw .changeTokenExpired(
                "the token is for incarnation \(c.incarnation.short) of zone \(zone), which was deleted; the zone is now incarnation \(z.incarnation.short)"
            )
        }
        guard z.horizon.isDominated(by: c.vector) else {
            throw .changeTokenExpired(
                "the token for zone \(zone) predates tombstones purged from this store (its vector \(c.vector) does not cover the purge horizon \(z.horizon))"
            )
        }
        if let cur = c.cursor, cur.source == incarnation, cur.sequence <= z.seq {
            return (z, c.vector, cur.sequence)
        }
        return (z, c.vector, nil)
    }

    /// Up to `limit` rows of `z` after change sequence `afterSeq`, in change order, copied out of
    /// SQLite, stopping before the row that would take the bytes past `maxBytes` (the first row is
    /// always taken); whether more follow, and the last row's sequence.
    func readFeed(_ z: ZoneState, after afterSeq: UInt64, limit: Int, maxBytes: Int = .max) throws(ShoalError) -> (
        RowBatch, more: Bool, lastSeq: UInt64
    ) {
        var batch = RowBatch(capacity: min(limit, 1024))
        let (more, lastSeq) = try scanFeed(
            z, after: afterSeq, limit: limit, maxBytes: maxBytes, into: &batch, run: limit
        ) { _ in }
        return (batch, more, lastSeq)
    }

    /// ``readFeed(_:after:limit:maxBytes:)`` decoded: every ``feedRun`` rows read go to another
    /// thread to decode while the statement reads the next (on a machine with one core, decoding waits).
    func readAndDecodeFeed(_ z: ZoneState, after afterSeq: UInt64, limit: Int, maxBytes: Int = .max) throws(ShoalError)
        -> ([Record], more: Bool, lastSeq: UInt64)
    {
        guard System.coreCount > 1, limit > Self.feedRun else {
            let (batch, more, lastSeq) = try readFeed(z, after: afterSeq, limit: limit, maxBytes: maxBytes)
            return (try batch.decode(zone: z.id, limits: configuration.limits), more, lastSeq)
        }
        let pipeline = PipelinedDecode(zone: z.id, limits: configuration.limits)
        var batch = RowBatch(capacity: Self.feedRun)
        let (more, lastSeq) = try scanFeed(
            z, after: afterSeq, limit: limit, maxBytes: maxBytes, into: &batch, run: Self.feedRun
        ) { full in
            pipeline.add(full)
        }
        return (try pipeline.finish(decodingHere: batch), more, lastSeq)
    }

    /// Reads up to `limit` feed rows after `afterSeq` into `batch`, and no row that would take the
    /// bytes read past `maxBytes` (but always the first); each time it holds `run` rows it goes to
    /// `emit` and a new batch starts. Returns whether more rows follow and the last row's
    /// sequence; `batch` keeps the rows not emitted.
    private func scanFeed(
        _ z: ZoneState, after afterSeq: UInt64, limit: Int, maxBytes: Int, into batch: inout RowBatch, run: Int,
        _ emit: (RowBatch) -> Void
    ) throws(ShoalError) -> (more: Bool, lastSeq: UInt64) {
        let s = try db.cached("SELECT seq, name, bytes FROM records WHERE zone = ? AND seq > ? ORDER BY seq LIMIT ?")
        defer { s.reset() }  // a statement left on a row would pin this connection's read snapshot
        s.bind(1, z.row).bind(2, Int64(bitPattern: afterSeq)).bind(3, limit + 1)
        var read = 0
        var bytes = 0
        var lastSeq: UInt64 = 0
        while try s.step() {
            if read == limit { return (true, lastSeq) }
            let size = s.blobSize(2)
            if read > 0, size > maxBytes &- bytes { return (true, lastSeq) }
            bytes &+= size
            lastSeq = UInt64(bitPattern: s.int64(0))
            let name = s.text(1)
            s.withBlob(2) { raw in batch.append(name: name, bytes: raw) }
            read += 1
            if batch.count == run && read < limit {
                emit(batch)
                batch = RowBatch(capacity: run)
            }
        }
        return (false, lastSeq)
    }

    /// Rows per run of ``readAndDecodeFeed(_:after:limit:)``.
    static let feedRun = 1_024

    /// The token after a page: mid-feed, the vector the fetch started from and the page's last
    /// sequence; at the end, the zone's vector and sequence — or, `compact`, for a zone that has
    /// never purged a tombstone, an empty vector and the sequence (a replication token:
    /// Spec/replication.md §1.1).
    ///
    /// A compact token resumes by this store's sequence like any other; a token this store can no
    /// longer resume by sequence (another incarnation of its database) restarts the pass from the
    /// beginning, the subscriber's knowledge skipping what it holds. With no purge horizon there
    /// is nothing for the vector to be checked against, and a live batch then carries one vector
    /// (its knowledge), not two: with 16 writers, about 400 bytes less. A zone with a horizon
    /// keeps full tokens: which tokens a purge expires stays as it was.
    func feedToken(_ z: ZoneState, start: VersionVector?, more: Bool, lastSeq: UInt64, compact: Bool = false)
        -> ChangeToken
    {
        if compact && !more && z.horizon.isEmpty {
            return ChangeToken(
                .init(
                    kind: .zone, incarnation: z.incarnation, vector: VersionVector(),
                    cursor: .init(source: incarnation, sequence: z.seq)))
        }
        if more {
            return ChangeToken(
                .init(
                    kind: .zone, incarnation: z.incarnation, vector: start ?? z.horizon,
                    cursor: .init(source: incarnation, sequence: lastSeq)))
        }
        return ChangeToken(
            .init(
                kind: .zone, incarnation: z.incarnation, vector: z.vector,
                cursor: .init(source: incarnation, sequence: z.seq)))
    }

    /// The first `limit` records of `z` whose vectors `v` does not dominate or that are live
    /// merges with two or more heads (`merged_heads`), by change sequence,
    /// within `maxBytes` as ``scanFeed`` bounds a page (per origin of the zone, the clock rows
    /// with `hlc > v[origin]`), and whether more follow. Only the page's records are read and
    /// decoded; for the rest, their names and sequences.
    func changedSince(vector v: VersionVector, in z: ZoneState, limit: Int, maxBytes: Int = .max) throws(ShoalError)
        -> ([(seq: UInt64, record: Record)], more: Bool)
    {
        var names = Set<String>()
        let s = try db.statement("SELECT name FROM record_clock WHERE zone = ? AND origin = ? AND hlc > ?")
        for e in z.vector.entries where e.hlc > v[e.node] {
            s.reset()
            s.bind(1, z.row).bind(2, Bytes.nodeID(e.node)).bind(3, Bytes.hlcKey(v[e.node]))
            while try s.step() { names.insert(s.text(0)) }
        }
        // Merges the vector may cover, which a server may still have to send (rule 6).
        let merged = try db.statement("SELECT name FROM merged_heads WHERE zone = ?")
        merged.bind(1, z.row)
        while try merged.step() { names.insert(merged.text(0)) }
        merged.reset()
        var order = [(seq: UInt64, name: String)]()
        order.reserveCapacity(names.count)
        let seqOf = try db.statement("SELECT seq FROM records WHERE zone = ? AND name = ?")
        for name in names {
            seqOf.reset()
            seqOf.bind(1, z.row).bind(2, name)
            if try seqOf.step() { order.append((UInt64(bitPattern: seqOf.int64(0)), name)) }
        }
        seqOf.reset()
        order.sort { $0.seq < $1.seq }
        var rows = [(seq: UInt64, record: Record)]()
        var bytes = 0
        let get = try db.statement("SELECT bytes FROM records WHERE zone = ? AND name = ?")
        defer { get.reset() }
        for (seq, name) in order {
            if rows.count == limit { return (rows, true) }
            get.reset()
            get.bind(1, z.row).bind(2, name)
            guard try get.step() else { continue }
            let size = get.blobSize(0)
            if !rows.isEmpty, size > maxBytes &- bytes { return (rows, true) }
            bytes &+= size
            rows.append(
                (
                    seq,
                    try get.withBlob(0) { (raw) throws(ShoalError) -> Record in
                        try decodeRow(raw, zone: z.id, name: name)
                    }
                ))
        }
        return (rows, false)
    }

    /// Decodes a token and checks its kind.
    func decode(_ token: ChangeToken, kind: ChangeToken.Contents.Kind, what: String) throws(ShoalError)
        -> ChangeToken.Contents
    {
        let c: ChangeToken.Contents
        do throws(WireError) {
            c = try token.contents(limits: configuration.limits)
        } catch {
            throw .invalidArguments(
                "the change token for \(what) does not decode (\(error)); pass back a token this API returned, or nil to start over"
            )
        }
        guard c.kind == kind else {
            throw .invalidArguments("a \(c.kind) change token was passed for \(what), which needs a \(kind) token")
        }
        return c
    }

    /// The zones created, changed or deleted since `token` (all when nil), in `scope` (all when nil).
    /// - Throws: `changeTokenExpired` for a token of another database, or one older than a purged
    ///   zone deletion (Spec/store.md §6); `invalidArguments` for bad bytes.
    public func databaseChanges(since token: ChangeToken?, scope: DatabaseScope? = nil) throws(ShoalError)
        -> DatabaseChanges
    {
        var after: UInt64 = 0
        if let token {
            let c = try decode(token, kind: .database, what: "the database")
            guard c.incarnation == databaseIncarnation else {
                throw .changeTokenExpired("the database token is for another store's database (\(c.incarnation.short))")
            }
            if let cur = c.cursor, cur.source == incarnation, cur.sequence <= databaseSequence { after = cur.sequence }
            // A zone deletion after the token whose tombstone is gone would never be reported.
            guard after >= zonePurgeSequence else {
                throw .changeTokenExpired(
                    "zone deletions made since this database token were purged, so it cannot list them; the zones you hold that databaseChanges(since: nil) does not list were deleted"
                )
            }
        }
        var changed = [RecordZone.ID](), deleted = [RecordZone.ID]()
        for z in zones.values where z.databaseSequence > after && (scope == nil || z.scope == scope) {
            if z.deleted {
                if token != nil { deleted.append(z.id) }
            } else {
                changed.append(z.id)
            }
        }
        let t = ChangeToken(
            .init(
                kind: .database, incarnation: databaseIncarnation, vector: VersionVector(),
                cursor: .init(source: incarnation, sequence: databaseSequence)))
        return DatabaseChanges(changedZones: changed.sorted(), deletedZones: deleted.sorted(), token: t)
    }
}
