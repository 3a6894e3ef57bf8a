// Store+WriterLogs: every write this node makes is entered in its log for the zone, in the same transaction (Spec/authenticated-writes.md §2).

package import ShoalWire

extension Store {
    /// Enters `new` in this node's log for its zone when it is a write this node just made: a
    /// version with this node as a head, newer than the log's last entry. Replicated versions
    /// (their writes of this node, if any, are entered already) and merges enter nothing.
    /// Called for every version written, in the writing transaction, so a rollback takes the
    /// entry back with the version. `tail`: the entry without its sequence when a
    /// ``SavePlanner`` computed it for a new record saved at this node's dot (nil: computed here).
    func enterOwnWrite(_ new: Record, in z: inout ZoneState, tail: [UInt8]? = nil) throws(ShoalError) {
        let hlc = new.versionVector[nodeID]
        guard hlc > z.log.hlc, new.heads.contains(where: { $0.node == nodeID }) else { return }
        let sequence = z.log.sequence &+ 1
        let bytes =
            tail.map { WriterLog.encodedEntry(sequence: sequence, tail: $0) }
            ?? WriterLog.encodedEntry(of: new, dot: Dot(node: nodeID, hlc: hlc), sequence: sequence)
        try appendEntry(
            WriterLog.EncodedEntry(sequence: sequence, hlc: hlc, bytes: bytes), of: nodeID, to: &z.log, zone: z)
    }

    /// Appends `entry`, the next of `writer`'s log for zone `z` whose head is `head`, and moves
    /// the head past it.
    func appendEntry(
        _ entry: WriterLog.EncodedEntry, of writer: NodeID, to head: inout WriterLogHead, zone z: ZoneState
    ) throws(ShoalError) {
        let previous = head.chain.isEmpty ? WriterLog.chainStart(zone: z.id, writer: writer) : head.chain
        try insertEntry(entry, chain: WriterLog.chain(previous, entry.bytes), of: writer, to: &head, zone: z)
    }

    /// Queues `entry` of this node's own log as `bytes` with `chain`, the chain value after it
    /// (a checkpoint of this node's may end at any entry, ``chainValue(of:in:at:)``), and moves
    /// `head` past it. The transaction keeps the queued entries before it commits, in pages
    /// (``insertPendingRows()``); other writers' entries are kept in pages without chain values
    /// (``appendVerified(_:of:checkpoint:in:)``): their logs are relayed up to the checkpoints
    /// their writers signed.
    func insertEntry(
        _ entry: WriterLog.EncodedEntry, chain: [UInt8], of writer: NodeID, to head: inout WriterLogHead,
        zone z: ZoneState
    ) throws(ShoalError) {
        pending.ownEntries.append(
            .init(zone: z.row, sequence: entry.sequence, hlc: entry.hlc, bytes: entry.bytes, chain: chain))
        head = WriterLogHead(sequence: entry.sequence, hlc: entry.hlc, chain: chain)
    }

    /// Keeps `run`, consecutive entries of `writer`'s log for zone row `zone` ending at sequence
    /// `lastSequence`, as one row: the entry itself (its chain value in the row's) when it is
    /// one, otherwise a page (``WriterLogPage``).
    func insertRun(_ run: ArraySlice<WriterLogPage.Entry>, of writer: NodeID, zoneRow zone: Int64, lastSequence: UInt64)
        throws(ShoalError)
    {
        guard let last = run.last else { return }
        let single = run.count == 1
        let s = try db.cached(
            "INSERT INTO writer_entries(zone, writer, seq, hlc, bytes, chain, count) VALUES(?, ?, ?, ?, ?, ?, ?)")
        try s.bind(1, zone).bind(2, writer).bind(3, Int64(bitPattern: lastSequence)).bind(4, Bytes.hlcKey(last.hlc))
            .bind(5, single ? last.bytes : WriterLogPage.encode(run)).bind(6, single ? last.chain : []).bind(
                7, Int64(run.count)
            )
            .runAndRewind()
    }

    /// The head of this node's log for `zone`: how many writes it entered, the last one's
    /// timestamp, and the chain value after it (the chain's start for an empty log).
    /// - Throws: `zoneNotFound` for a zone that is not live.
    package func ownLogHead(of zone: RecordZone.ID) throws(ShoalError) -> WriterLogHead {
        let z = try liveZone(zone)
        var head = z.log
        if head.chain.isEmpty { head.chain = WriterLog.chainStart(zone: zone, writer: nodeID) }
        return head
    }

    /// The entries of `writer`'s log for `zone` after sequence `after`, at most `limit`, in
    /// order.
    /// - Throws: `zoneNotFound`; `internalError` for an entry the store cannot read (damaged).
    package func entries(of writer: NodeID, in zone: RecordZone.ID, after: UInt64, limit: Int) throws(ShoalError)
        -> [WriteEntry]
    {
        try entries(of: writer, in: zone, after: after, limit: limit) { _ in true }.map {
            (_, entry) throws(ShoalError) -> WriteEntry in
            guard let entry else { throw .internalError("an entry of \(writer)'s log for zone \(zone) was not read") }
            return entry
        }
    }

    /// As ``entries(of:in:after:limit:)``, each with its timestamp, decoding only the entries
    /// `decoding` asks for (nil for the others): a sender skips the writes a batch's versions
    /// show whole.
    /// - Throws: `zoneNotFound`; `internalError` for an entry the store cannot read (damaged).
    package func entries(
        of writer: NodeID, in zone: RecordZone.ID, after: UInt64, limit: Int,
        decoding: (HLC) -> Bool
    ) throws(ShoalError) -> [(hlc: HLC, entry: WriteEntry?)] {
        try proveIfImplied(writer, in: zone, through: after &+ UInt64(max(limit, 0)))
        let z = try liveZone(zone)
        // Rows hold runs of entries keyed by their last: the first row past `after` may begin
        // before it.
        let s = try db.cached(
            "SELECT seq, hlc, bytes, count FROM writer_entries WHERE zone = ? AND writer = ? AND seq > ? ORDER BY seq")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: after))
        var out = [(hlc: HLC, entry: WriteEntry?)]()
        while out.count < limit, try s.step() {
            let bytes = s.blob(2)
            for item in try Self.items(of: bytes, row: s, writer: writer, zone: zone) where item.sequence > after {
                out.append(
                    (
                        item.hlc,
                        decoding(item.hlc) ? try Self.decodeEntry(Array(bytes[item.bytes]), of: writer, in: zone) : nil
                    ))
                if out.count == limit { break }
            }
        }
        return out
    }

    /// The timestamps of the entries of `writer`'s log for `zone` after sequence `after`, at most
    /// `limit`, in order, read without their bytes: a sender needs no more of the entries its
    /// batch's versions imply (``entries(of:in:after:limit:decoding:)`` reads the others).
    /// - Throws: `zoneNotFound`; `internalError` for a row the store cannot read (damaged).
    package func entryTimestamps(of writer: NodeID, in zone: RecordZone.ID, after: UInt64, limit: Int)
        throws(ShoalError) -> [HLC]
    {
        try proveIfImplied(writer, in: zone, through: after &+ UInt64(max(limit, 0)))
        let z = try liveZone(zone)
        let s = try db.cached(
            "SELECT seq, hlc, bytes, count FROM writer_entries WHERE zone = ? AND writer = ? AND seq > ? ORDER BY seq")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: after))
        var out = [HLC]()
        while out.count < limit, try s.step() {
            guard s.int64(3) > 1 else {
                out.append(HLC(rawValue: UInt64(bitPattern: s.int64(1)) ^ (1 << 63)))
                continue
            }
            for item in try Self.items(of: s.blob(2), row: s, writer: writer, zone: zone) where item.sequence > after {
                out.append(item.hlc)
                if out.count == limit { break }
            }
        }
        return out
    }

    /// The entries of the current row of `s` (`seq, hlc, bytes, count` of `writer_entries`),
    /// whose bytes are `bytes`.
    /// - Throws: `internalError` for a row that does not read (a damaged store).
    static func items(of bytes: [UInt8], row s: SQLiteStatement, writer: NodeID, zone: RecordZone.ID) throws(ShoalError)
        -> [WriterLogPage.Item]
    {
        let last = (
            sequence: UInt64(bitPattern: s.int64(0)), hlc: HLC(rawValue: UInt64(bitPattern: s.int64(1)) ^ (1 << 63))
        )
        guard let items = WriterLogPage.items(of: bytes, count: s.int64(3), last: last) else {
            throw .internalError(
                "a row of \(writer)'s log for zone \(zone) ending at #\(last.sequence) is damaged; the store is damaged"
            )
        }
        return items
    }

    /// The entry of the write `dot` in `zone`, if its writer's log here holds one.
    /// - Throws: `zoneNotFound`; `internalError` for an entry the store cannot read (damaged).
    package func entry(of dot: Dot, in zone: RecordZone.ID) throws(ShoalError) -> WriteEntry? {
        try proveIfImplied(dot.node, in: zone)
        let z = try liveZone(zone)
        // The row holding the dot, if any, is the first whose last entry is not older.
        let s = try db.cached(
            "SELECT seq, hlc, bytes, count FROM writer_entries WHERE zone = ? AND writer = ? AND hlc >= ? ORDER BY hlc LIMIT 1"
        )
        defer { s.reset() }
        s.bind(1, z.row).bind(2, dot.node).bind(3, Bytes.hlcKey(dot.hlc))
        guard try s.step() else { return nil }
        let bytes = s.blob(2)
        guard
            let item = try Self.items(of: bytes, row: s, writer: dot.node, zone: zone).first(where: {
                $0.hlc == dot.hlc
            })
        else { return nil }
        return try Self.decodeEntry(Array(bytes[item.bytes]), of: dot.node, in: zone)
    }

    /// The entries of the writes `dots` in `zone` that the writers' logs here hold, by dot.
    /// - Throws: `zoneNotFound`; `internalError` for an entry the store cannot read (damaged).
    package func entries(of dots: Set<Dot>, in zone: RecordZone.ID) throws(ShoalError) -> [Dot: WriteEntry] {
        var out = [Dot: WriteEntry]()
        for d in dots {
            if let e = try entry(of: d, in: zone) { out[d] = e }
        }
        return out
    }

    /// The head of `writer`'s log for `zone` as far as this store holds it: its own log's for
    /// this node, otherwise what was verified or kept implied here (an empty log, with the
    /// chain's start, when nothing was). While the log holds entries kept implied, `chain` is
    /// the value after its last proven entry (``proveIfImplied(_:in:)`` moves it to the head).
    /// - Throws: `zoneNotFound` for a zone that is not live.
    package func logHead(of writer: NodeID, in zone: RecordZone.ID) throws(ShoalError) -> WriterLogHead {
        if writer == nodeID { return try ownLogHead(of: zone) }
        let z = try liveZone(zone)
        let s = try db.cached("SELECT seq, hlc, chain FROM writer_logs WHERE zone = ? AND writer = ?")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, writer)
        guard try s.step() else { return WriterLogHead(chain: WriterLog.chainStart(zone: zone, writer: writer)) }
        return WriterLogHead(
            sequence: UInt64(bitPattern: s.int64(0)), hlc: HLC(rawValue: UInt64(bitPattern: s.int64(1))),
            chain: s.blob(2))
    }

    /// Stores `entries` of `writer`'s log for `zone`, which follow the head held here without a
    /// gap, when hashing them on from that head gives `checkpoint`'s chain at its sequence; the
    /// checkpoint is kept and the head moves to it. Returns false, storing nothing, when they do
    /// not (a gap, a repeat, timestamps that do not increase, another chain, another zone,
    /// writer or incarnation). The caller has checked the checkpoint's signature: the store
    /// holds no keys.
    /// - Throws: `zoneNotFound` for a zone that is not live; `invalidArguments` for this node's
    ///   own log, which only its own writes extend.
    package func appendVerified(
        _ entries: [WriteEntry], of writer: NodeID, checkpoint: WriterCheckpoint,
        in zone: RecordZone.ID
    ) throws(ShoalError) -> Bool {
        try appendVerified(entries.map(WriterLog.EncodedEntry.init), of: writer, checkpoint: checkpoint, in: zone)
    }

    /// As ``appendVerified(_:of:checkpoint:in:)`` for entries as their canonical bytes.
    package func appendVerified(
        _ entries: [WriterLog.EncodedEntry], of writer: NodeID, checkpoint: WriterCheckpoint,
        in zone: RecordZone.ID
    ) throws(ShoalError) -> Bool {
        guard writer != nodeID else {
            throw .invalidArguments(
                "entries of this node's own log (\(writer)) come only from its own writes, never from a peer")
        }
        try proveIfImplied(writer, in: zone)
        let z = try liveZone(zone)
        guard checkpoint.zone == zone, checkpoint.writer == writer, checkpoint.incarnation == z.incarnation else {
            return false
        }
        let head = try logHead(of: writer, in: zone)
        guard let last = entries.last, checkpoint.sequence == last.sequence,
            let chains = WriterLog.pageChains(from: head.chain, after: (head.sequence, head.hlc), entries),
            chains.last == checkpoint.chain
        else { return false }
        try writeTransaction(replication: true) { () throws(ShoalError) in
            var moved = head
            // Kept in pages: a row per run of entries, not per entry (WriterLogPage).
            let run: [WriterLogPage.Entry] = entries.map { (hlc: $0.hlc, bytes: $0.bytes, chain: []) }
            var start = 0
            for chain in chains {
                let end = min(start &+ WriterLogPage.maxEntries, run.count)
                let last = entries[end &- 1]
                try insertRun(run[start..<end], of: writer, zoneRow: z.row, lastSequence: last.sequence)
                moved = WriterLogHead(sequence: last.sequence, hlc: last.hlc, chain: chain)
                start = end
            }
            // An upsert: replacing the row would reset how far the log is reflected.
            let s = try db.cached(
                """
                INSERT INTO writer_logs(zone, writer, seq, hlc, chain) VALUES(?, ?, ?, ?, ?)
                ON CONFLICT(zone, writer) DO UPDATE SET seq = excluded.seq, hlc = excluded.hlc, chain = excluded.chain
                """)
            try s.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: moved.sequence)).bind(
                4, Int64(bitPattern: moved.hlc.rawValue)
            )
            .bind(5, moved.chain).runAndRewind()
            try keep(checkpoint, zone: z)
        }
        return true
    }

    /// Keeps `checkpoint` (this node's own, once signed, or one verified with its entries).
    /// - Throws: `zoneNotFound` for a zone that is not live; `invalidArguments` for a checkpoint
    ///   of another zone or incarnation, or past the head of its log here.
    package func keepCheckpoint(_ checkpoint: WriterCheckpoint) throws(ShoalError) {
        let z = try liveZone(checkpoint.zone)
        guard checkpoint.incarnation == z.incarnation else {
            throw .invalidArguments(
                "the checkpoint of \(checkpoint.writer) is for incarnation \(checkpoint.incarnation) of zone \(checkpoint.zone), which is at \(z.incarnation) here"
            )
        }
        let head = try logHead(of: checkpoint.writer, in: checkpoint.zone)
        guard checkpoint.sequence <= head.sequence else {
            throw .invalidArguments(
                "the checkpoint of \(checkpoint.writer) covers \(checkpoint.sequence) entries; the log holds \(head.sequence)"
            )
        }
        try writeTransaction { () throws(ShoalError) in try keep(checkpoint, zone: z) }
    }

    func keep(_ checkpoint: WriterCheckpoint, zone z: ZoneState) throws(ShoalError) {
        guard checkpoint.signature.count == WriterCheckpoint.signatureBytes else {
            throw .invalidArguments("the checkpoint of \(checkpoint.writer) is not signed; sign it before keeping it")
        }
        let s = try db.cached("INSERT OR REPLACE INTO writer_checkpoints(zone, writer, seq, bytes) VALUES(?, ?, ?, ?)")
        try s.bind(1, z.row).bind(2, checkpoint.writer).bind(3, Int64(bitPattern: checkpoint.sequence)).bind(
            4, checkpoint.encoded()
        ).runAndRewind()
    }

    /// The newest checkpoint of `writer`'s log for `zone` held here at or below sequence
    /// `atMost`, if any: where a range sent to a peer may end.
    /// - Throws: `zoneNotFound`; `internalError` for a checkpoint the store cannot read.
    package func checkpoint(of writer: NodeID, in zone: RecordZone.ID, atMost: UInt64 = .max) throws(ShoalError)
        -> WriterCheckpoint?
    {
        let z = try liveZone(zone)
        let s = try db.cached(
            "SELECT bytes FROM writer_checkpoints WHERE zone = ? AND writer = ? AND seq <= ? ORDER BY seq DESC LIMIT 1")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: min(atMost, UInt64(Int64.max))))
        guard try s.step() else { return nil }
        do {
            return try WriterCheckpoint(decoding: s.blob(0))
        } catch {
            throw .internalError(
                "a checkpoint of \(writer)'s log for zone \(zone) is damaged (\(error)); the store is damaged")
        }
    }

    /// The heads of the writers' logs for `zone` held here, this node's own included: the
    /// sequence of each writer's last entry (writers with none are left out). A subscriber states
    /// them so that the ranges it is sent join what it holds (Spec/authenticated-writes.md §4).
    /// - Throws: `zoneNotFound` for a zone that is not live.
    package func logHeads(in zone: RecordZone.ID) throws(ShoalError) -> [NodeID: UInt64] {
        let z = try liveZone(zone)
        var out = [NodeID: UInt64]()
        if z.log.sequence > 0 { out[nodeID] = z.log.sequence }
        let s = try db.cached("SELECT writer, seq FROM writer_logs WHERE zone = ?")
        defer { s.reset() }
        s.bind(1, z.row)
        while try s.step() {
            guard let writer = Bytes.nodeID(s.blob(0)), s.int64(1) > 0 else { continue }
            out[writer] = UInt64(bitPattern: s.int64(1))
        }
        return out
    }

    /// The chain value of this node's own log (`writer`) for `zone` after entry `sequence` (the
    /// chain's start for 0); nil when the log does not reach it, or for another writer, whose
    /// chain values are kept at its head and checkpoints only.
    /// - Throws: `zoneNotFound` for a zone that is not live.
    package func chainValue(of writer: NodeID, in zone: RecordZone.ID, at sequence: UInt64) throws(ShoalError)
        -> [UInt8]?
    {
        if sequence == 0 { return WriterLog.chainStart(zone: zone, writer: writer) }
        guard writer == nodeID else { return nil }
        let z = try liveZone(zone)
        let s = try db.cached(
            "SELECT seq, hlc, bytes, count, chain FROM writer_entries WHERE zone = ? AND writer = ? AND seq >= ? ORDER BY seq LIMIT 1"
        )
        defer { s.reset() }
        s.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: sequence))
        guard try s.step() else { return nil }
        if s.int64(3) == 1 { return UInt64(bitPattern: s.int64(0)) == sequence ? s.blob(4) : nil }
        let bytes = s.blob(2)
        guard
            let item = try Self.items(of: bytes, row: s, writer: writer, zone: zone).first(where: {
                $0.sequence == sequence
            }),
            !item.chain.isEmpty
        else { return nil }
        return Array(bytes[item.chain])
    }

    /// The sequence of the newest entry of `writer`'s log for `zone` held here whose timestamp is
    /// at most `hlc` (0 when there is none): how much of the log a peer whose knowledge of the
    /// writer is `hlc` holds, as this node can tell.
    /// - Throws: `zoneNotFound` for a zone that is not live.
    package func sequence(of writer: NodeID, in zone: RecordZone.ID, atMost hlc: HLC) throws(ShoalError) -> UInt64 {
        guard hlc != .zero else { return 0 }
        let z = try liveZone(zone)
        let found = try newestSequence(
            atMost: hlc, of: writer, in: z,
            before:
                "SELECT seq FROM writer_entries WHERE zone = ? AND writer = ? AND hlc <= ? ORDER BY hlc DESC LIMIT 1",
            next:
                "SELECT seq, hlc, bytes, count FROM writer_entries WHERE zone = ? AND writer = ? AND hlc > ? ORDER BY hlc LIMIT 1"
        ) { (s) throws(ShoalError) in
            // A row of one entry past `hlc` holds none at most `hlc`.
            s.int64(3) > 1
                ? try Self.items(of: s.blob(2), row: s, writer: writer, zone: zone).map { ($0.sequence, $0.hlc) } : []
        }
        guard z.implied.contains(writer) else { return found }
        let implied = try newestSequence(
            atMost: hlc, of: writer, in: z,
            before:
                "SELECT seq FROM writer_implied WHERE zone = ? AND writer = ? AND hlc <= ? ORDER BY hlc DESC LIMIT 1",
            next:
                "SELECT seq, hlc, bytes, count FROM writer_implied WHERE zone = ? AND writer = ? AND hlc > ? ORDER BY hlc LIMIT 1"
        ) { (s) throws(ShoalError) in
            let last = UInt64(bitPattern: s.int64(0))
            guard let items = ImpliedPage.items(of: s.blob(2), count: s.int64(3), last: last) else {
                throw damagedImplied(writer, in: zone, at: last)
            }
            return items.map { ($0.sequence, $0.hlc) }
        }
        return max(found, implied)
    }

    /// The newest sequence at most `hlc` among the rows of one table of `writer`'s log in zone
    /// `z` (`before` finds the last row whose last entry is at most `hlc`; every entry of it is;
    /// `next`, the row after it, may begin with some that are too: `items` reads them).
    func newestSequence(
        atMost hlc: HLC, of writer: NodeID, in z: ZoneState, before: StaticString, next: StaticString,
        items: (SQLiteStatement) throws(ShoalError) -> [(sequence: UInt64, hlc: HLC)]
    ) throws(ShoalError) -> UInt64 {
        let b = try db.cached(before)
        b.bind(1, z.row).bind(2, writer).bind(3, Bytes.hlcKey(hlc))
        var found: UInt64 = try b.step() ? UInt64(bitPattern: b.int64(0)) : 0
        b.reset()
        let n = try db.cached(next)
        defer { n.reset() }
        n.bind(1, z.row).bind(2, writer).bind(3, Bytes.hlcKey(hlc))
        guard try n.step() else { return found }
        for item in try items(n) where item.hlc <= hlc { found = max(found, item.sequence) }
        return found
    }

    /// The oldest checkpoint of `writer`'s log for `zone` held here at or past sequence
    /// `atLeast`, if any: where a range that must reach that entry can end.
    /// - Throws: `zoneNotFound`; `internalError` for a checkpoint the store cannot read.
    package func checkpoint(of writer: NodeID, in zone: RecordZone.ID, atLeast: UInt64) throws(ShoalError)
        -> WriterCheckpoint?
    {
        while true {
            let z = try liveZone(zone)
            let s = try db.cached(
                "SELECT bytes FROM writer_checkpoints WHERE zone = ? AND writer = ? AND seq >= ? ORDER BY seq LIMIT 1")
            s.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: min(atLeast, UInt64(Int64.max))))
            guard try s.step() else {
                s.reset()
                return nil
            }
            let c: WriterCheckpoint
            do {
                c = try WriterCheckpoint(decoding: s.blob(0))
                s.reset()
            } catch {
                s.reset()
                throw .internalError(
                    "a checkpoint of \(writer)'s log for zone \(zone) is damaged (\(error)); the store is damaged")
            }
            // A checkpoint among entries kept implied is relayed only once they hash to it (it
            // may be dropped then: the next one is looked up).
            guard z.implied.contains(writer), let start = try impliedStart(of: writer, in: zone), c.sequence >= start
            else { return c }
            try proveIfImplied(writer, in: zone, through: c.sequence)
        }
    }

    /// The public key (SubjectPublicKeyInfo DER) `writer`'s checkpoints are verified under, when
    /// one was learnt.
    /// - Throws: `internalError` if SQLite fails.
    package func writerKey(of writer: NodeID) throws(ShoalError) -> [UInt8]? {
        let s = try db.cached("SELECT key FROM writer_keys WHERE writer = ?")
        defer { s.reset() }
        s.bind(1, writer)
        return try s.step() ? s.blob(0) : nil
    }

    /// Keeps `key` as the one `writer`'s checkpoints are verified under. The caller checked that
    /// it belongs to the device bound to `writer` (Spec/security.md §5).
    /// - Throws: `internalError` if SQLite fails.
    package func keepWriterKey(_ key: [UInt8], of writer: NodeID) throws(ShoalError) {
        try writeTransaction(replication: true) { () throws(ShoalError) in
            let s = try db.cached("INSERT OR REPLACE INTO writer_keys(writer, key) VALUES(?, ?)")
            try s.bind(1, writer).bind(2, key).runAndRewind()
        }
    }

    /// How far `writer`'s log for `zone` is **reflected** here (Spec/authenticated-writes.md §6):
    /// the sequence and timestamp of the newest entry of the longest gapless prefix whose every
    /// entry the zone shows — the stored version of its record covers its dot, or the zone's
    /// purge horizon does. Knowledge of the writer is adopted only up to that timestamp. The
    /// prefix only grows; it is kept, and read on from where it stopped. This node's own log is
    /// reflected whole (its writes are its own).
    /// - Throws: `zoneNotFound`; `internalError` for a row the store cannot read.
    package func reflected(of writer: NodeID, in zone: RecordZone.ID) throws(ShoalError) -> (sequence: UInt64, hlc: HLC)
    {
        if writer == nodeID {
            let head = try ownLogHead(of: zone)
            return (head.sequence, head.hlc)
        }
        let z = try liveZone(zone)
        let row = try db.cached(
            "SELECT seq, reflected_seq, reflected_hlc FROM writer_logs WHERE zone = ? AND writer = ?")
        row.bind(1, z.row).bind(2, writer)
        guard try row.step() else {
            row.reset()
            return (0, .zero)
        }
        let head = UInt64(bitPattern: row.int64(0))
        var through = (sequence: UInt64(bitPattern: row.int64(1)), hlc: HLC(rawValue: UInt64(bitPattern: row.int64(2))))
        row.reset()
        guard through.sequence < head else { return through }
        let horizon = z.horizon[writer]
        let versions = try db.cached("SELECT bytes FROM records WHERE zone = ? AND name = ?")
        var moved = false
        reading: while through.sequence < head {
            let batch = try entries(of: writer, in: zone, after: through.sequence, limit: 256)
            if batch.isEmpty { break }
            for e in batch {
                var shown = horizon >= e.hlc
                if !shown {
                    versions.bind(1, z.row).bind(2, e.record)
                    if try versions.step() {
                        let vector = versions.withBlob(0) { raw in
                            try? Record.versionVector(ofEncoded: raw, limits: configuration.limits)
                        }
                        shown = (vector?[writer] ?? .zero) >= e.hlc
                    }
                    versions.reset()
                }
                guard shown else { break reading }
                through = (e.sequence, e.hlc)
                moved = true
            }
        }
        if moved {
            try writeTransaction(replication: true) { () throws(ShoalError) in
                let s = try db.cached(
                    "UPDATE writer_logs SET reflected_seq = ?, reflected_hlc = ? WHERE zone = ? AND writer = ?")
                try s.bind(1, Int64(bitPattern: through.sequence)).bind(2, Int64(bitPattern: through.hlc.rawValue))
                    .bind(3, z.row)
                    .bind(4, writer).runAndRewind()
            }
        }
        return through
    }

    /// Moves how far `writer`'s log for `zone` is reflected (``reflected(of:in:)``) over
    /// `shown`, entries (by ascending sequence) whose versions a batch just stored here — each
    /// stored version covers its write — as far as they continue the reflected prefix without a
    /// gap. What they leave out is found by reading the zone later, as before.
    /// - Throws: `zoneNotFound`; `internalError` if SQLite fails.
    package func noteReflected(of writer: NodeID, in zone: RecordZone.ID, shown: [(sequence: UInt64, hlc: HLC)])
        throws(ShoalError)
    {
        guard writer != nodeID, !shown.isEmpty else { return }
        let z = try liveZone(zone)
        let row = try db.cached(
            "SELECT seq, reflected_seq, reflected_hlc FROM writer_logs WHERE zone = ? AND writer = ?")
        row.bind(1, z.row).bind(2, writer)
        guard try row.step() else {
            row.reset()
            return
        }
        let head = UInt64(bitPattern: row.int64(0))
        let from = UInt64(bitPattern: row.int64(1))
        row.reset()
        var through: (sequence: UInt64, hlc: HLC)? = nil
        var next = from &+ 1
        for e in shown where e.sequence >= next && e.sequence <= head {
            guard e.sequence == next else { break }
            through = e
            next &+= 1
        }
        guard let through else { return }
        try writeTransaction(replication: true) { () throws(ShoalError) in
            let s = try db.cached(
                "UPDATE writer_logs SET reflected_seq = ?, reflected_hlc = ? WHERE zone = ? AND writer = ? AND reflected_seq = ?"
            )
            try s.bind(1, Int64(bitPattern: through.sequence)).bind(2, Int64(bitPattern: through.hlc.rawValue)).bind(
                3, z.row
            )
            .bind(4, writer).bind(5, Int64(bitPattern: from)).runAndRewind()
        }
    }

    static func decodeEntry(_ bytes: [UInt8], of writer: NodeID, in zone: RecordZone.ID) throws(ShoalError)
        -> WriteEntry
    {
        do {
            return try WriteEntry(decoding: bytes)
        } catch {
            throw .internalError(
                "an entry of \(writer)'s log for zone \(zone) is damaged (\(error)); the store is damaged")
        }
    }
}

extension Schema {
    /// Starts this node's log for every zone of a store from before logs (the 8 → 9 step): an
    /// entry for every write of this node the zone's records still show — a head, or a slot's
    /// stamp — in timestamp order, each as the version shows it. A write whose slots were all
    /// replaced since shows nothing and has no entry: nobody can ask for it.
    static func startOwnLogs(_ db: SQLiteDatabase, limits: WireLimits) throws(ShoalError) {
        let meta = try db.statement("SELECT value FROM meta WHERE key = 'node'")
        guard try meta.step(), let node = Bytes.nodeID(meta.blob(0)) else {
            meta.reset()
            return  // a store with no node yet has no writes
        }
        meta.reset()
        let zones = try db.statement("SELECT id, name, owner FROM zones")
        var rows = [(Int64, RecordZone.ID)]()
        while try zones.step() {
            rows.append((zones.int64(0), RecordZone.ID(name: zones.text(1), owner: zones.text(2))))
        }
        zones.reset()
        let read = try db.statement("SELECT name, bytes FROM records WHERE zone = ?")
        let insert = try db.statement(
            "INSERT INTO writer_entries(zone, writer, seq, hlc, bytes, chain) VALUES(?, ?, ?, ?, ?, ?)")
        let head = try db.statement("UPDATE zones SET log_seq = ?, log_hlc = ?, log_chain = ? WHERE id = ?")
        for (row, zone) in rows {
            // Every write of this node its records show, by timestamp: one record per write.
            var writes = [(hlc: HLC, version: Record)]()
            read.bind(1, row)
            while try read.step() {
                let name = read.text(0)
                let version = try read.withBlob(1) { (raw) throws(ShoalError) -> Record in
                    do {
                        return try Record(decoding: raw, limits: limits)
                    } catch {
                        throw .internalError(
                            "record \(name) of zone \(zone) could not be read while starting its writer log (\(error)); the store is damaged"
                        )
                    }
                }
                var dots = Set<HLC>()
                if version.heads.contains(where: { $0.node == node }) { dots.insert(version.versionVector[node]) }
                for f in version.fields where f.stamp?.node == node { if let h = f.stamp?.hlc { dots.insert(h) } }
                for h in dots { writes.append((h, version)) }
            }
            read.reset()
            writes.sort { $0.hlc < $1.hlc }
            var log = WriterLogHead(chain: WriterLog.chainStart(zone: zone, writer: node))
            for w in writes {
                let dot = Dot(node: node, hlc: w.hlc)
                let entry = WriterLog.entry(of: w.version, dot: dot, sequence: log.sequence &+ 1)
                let bytes = entry.encoded()
                let chain = WriterLog.chain(log.chain, bytes)
                try insert.bind(1, row).bind(2, node).bind(3, Int64(bitPattern: entry.sequence)).bind(
                    4, Bytes.hlcKey(entry.hlc)
                )
                .bind(5, bytes).bind(6, chain).runAndRewind()
                log = WriterLogHead(sequence: entry.sequence, hlc: entry.hlc, chain: chain)
            }
            try head.bind(1, Int64(bitPattern: log.sequence)).bind(2, Int64(bitPattern: log.hlc.rawValue)).bind(
                3, log.sequence == 0 ? [] : log.chain
            )
            .bind(4, row).runAndRewind()
        }
    }
}
