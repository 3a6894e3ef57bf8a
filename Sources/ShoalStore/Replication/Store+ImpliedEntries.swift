// Store+ImpliedEntries: a peer's own writes kept as the versions that imply them, their chain checked when first needed (Spec/authenticated-writes.md §5.1).

package import ShoalWire

/// A run of a writer's log taken from the writer itself over its authenticated connection
/// (Spec/authenticated-writes.md §5.1): its entries follow the log held here without a gap,
/// and they are kept before their chain is checked against `checkpoint`, whose signature the
/// caller verified. The chain is checked when the log is first read past them (to relay it, to
/// extend it from another peer, or to check a version against one of them).
package struct ImpliedRun: Sendable {
    /// One entry of the run.
    package enum Item: Sendable {
        /// The write that made the batch's version of `record` (the `index`th of the batch, when
        /// known): that version's vector names the writer alone, at `hlc`, so the version shows
        /// the write whole and implies its entry.
        case made(record: String, hlc: HLC, index: Int? = nil)
        /// An entry given as its canonical bytes.
        case entry(WriterLog.EncodedEntry)

        /// The write's timestamp.
        package var hlc: HLC {
            switch self {
            case .made(_, let hlc, _): return hlc
            case .entry(let e): return e.hlc
            }
        }
    }

    /// Whose log.
    package var writer: NodeID
    /// The sequence of the first item.
    package var firstSequence: UInt64
    /// The entries, in order.
    package var items: [Item]
    /// The writer's checkpoint at the run's last entry, its signature verified by the caller.
    package var checkpoint: WriterCheckpoint

    package init(writer: NodeID, firstSequence: UInt64, items: [Item], checkpoint: WriterCheckpoint) {
        self.writer = writer
        self.firstSequence = firstSequence
        self.items = items
        self.checkpoint = checkpoint
    }
}

/// How a row of `writer_implied` holds a run of entries not yet chained (Schema): per entry, a
/// kind byte (0: implied by the stored version of the record named, 1: the entry's canonical
/// bytes), its timestamp (8 bytes, little-endian), the length of what follows (4 bytes,
/// little-endian), then the record's name (UTF-8) or the entry's bytes.
enum ImpliedPage {
    /// One entry of a row.
    struct Item {
        var sequence: UInt64
        var hlc: HLC
        /// Whether `bytes` is the entry itself (otherwise the name of the record implying it).
        var isEntry: Bool
        var bytes: ArraySlice<UInt8>
    }

    static func append(isEntry: Bool, hlc: HLC, _ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        out.append(isEntry ? 1 : 0)
        withUnsafeBytes(of: hlc.rawValue.littleEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: bytes.count).littleEndian) { out.append(contentsOf: $0) }
        out.append(contentsOf: bytes)
    }

    static func encode(_ items: [Item]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(items.reduce(0) { $0 &+ 13 &+ $1.bytes.count })
        for i in items { append(isEntry: i.isEntry, hlc: i.hlc, i.bytes, to: &out) }
        return out
    }

    /// The entries of a row whose last entry has sequence `last` and which holds `count` of them;
    /// nil when the row does not read as that (a damaged store).
    static func items(of bytes: [UInt8], count: Int64, last: UInt64) -> [Item]? {
        guard count >= 1, count <= Int64(WriterLogPage.maxEntries), UInt64(count) <= last else { return nil }
        var out = [Item]()
        out.reserveCapacity(Int(count))
        var at = 0
        var sequence = last &- UInt64(count) &+ 1
        for _ in 0..<count {
            guard bytes.count &- at >= 13, bytes[at] <= 1 else { return nil }
            var hlc: UInt64 = 0
            var length: UInt32 = 0
            for i in 0..<8 { hlc |= UInt64(bytes[at &+ 1 &+ i]) << (8 &* UInt64(i)) }
            for i in 0..<4 { length |= UInt32(bytes[at &+ 9 &+ i]) << (8 &* UInt32(i)) }
            let isEntry = bytes[at] == 1
            at &+= 13
            guard Int(length) <= bytes.count &- at else { return nil }
            out.append(
                Item(
                    sequence: sequence, hlc: HLC(rawValue: hlc), isEntry: isEntry,
                    bytes: bytes[at..<(at &+ Int(length))]))
            at &+= Int(length)
            sequence &+= 1
        }
        return at == bytes.count ? out : nil
    }
}

extension Store {
    /// Keeps `runs` in the transaction applying `batch`: an item a version of the batch made is
    /// kept as that version's record name when `keepingMade` (every version of the batch is
    /// then stored as it arrived, so the stored version implies the entry until it is replaced,
    /// ``materializeImplied(over:in:)``), and as the entry rebuilt from the batch's version
    /// otherwise.
    /// - Throws: `invalidArguments` for a run that does not continue its log here, whose
    ///   timestamps do not increase, whose checkpoint is not at its end, or that names a version
    ///   the batch does not hold as that write.
    func keepImplied(_ runs: [ImpliedRun], batch: [Record], keepingMade: Bool) throws(ShoalError) {
        var names: [String: Int]? = nil
        for run in runs {
            var z = try liveZone(run.checkpoint.zone)
            try keepImplied(run, batch: batch, names: &names, keepingMade: keepingMade, in: &z)
            zones[z.id] = z
        }
    }

    /// As ``keepImplied(_:batch:keepingMade:)`` for one run; `names` indexes the batch by record
    /// name, made the first time an item's index does not name its record.
    func keepImplied(
        _ run: ImpliedRun, batch: [Record], names: inout [String: Int]?, keepingMade: Bool, in z: inout ZoneState
    ) throws(ShoalError) {
        let writer = run.writer, c = run.checkpoint
        let what = "the run of \(writer)'s log for zone \(z.id) from #\(run.firstSequence)"
        guard writer != nodeID, !run.items.isEmpty, run.firstSequence >= 1,
            run.firstSequence <= UInt64.max &- UInt64(run.items.count)
        else {
            throw .invalidArguments("\(what) is empty, starts at 0, or is this node's own log")
        }
        let lastSequence = run.firstSequence &+ UInt64(run.items.count &- 1)
        guard c.zone == z.id, c.writer == writer, c.incarnation == z.incarnation, c.sequence == lastSequence else {
            throw .invalidArguments("\(what) does not end at its checkpoint (\(c))")
        }
        let head = try logHead(of: writer, in: z.id)
        guard run.firstSequence == head.sequence &+ 1 else {
            throw .invalidArguments("\(what) does not follow the \(head.sequence) entries held here")
        }
        var previous = head.hlc
        for item in run.items {
            guard item.hlc > previous else { throw .invalidArguments("\(what): its timestamps do not increase") }
            previous = item.hlc
        }
        var start = 0
        while start < run.items.count {
            let end = min(start &+ WriterLogPage.maxEntries, run.items.count)
            var page = [UInt8]()
            for k in start..<end {
                let sequence = run.firstSequence &+ UInt64(k)
                switch run.items[k] {
                case .made(let name, let hlc, let hint):
                    var index = hint
                    if index.map({ $0 < 0 || $0 >= batch.count || batch[$0].id.name != name }) ?? true {
                        if names == nil { names = Self.names(of: batch) }
                        index = names?[name]
                    }
                    guard let i = index, batch[i].versionVector.entries.count == 1,
                        batch[i].versionVector[writer] == hlc
                    else {
                        throw .invalidArguments(
                            "\(what): entry #\(sequence) names record \(name), which the batch does not hold as that write"
                        )
                    }
                    if keepingMade {
                        ImpliedPage.append(isEntry: false, hlc: hlc, name.utf8, to: &page)
                    } else {
                        let bytes = WriterLog.encodedEntry(
                            of: batch[i], dot: Dot(node: writer, hlc: hlc), sequence: sequence)
                        ImpliedPage.append(isEntry: true, hlc: hlc, bytes, to: &page)
                    }
                case .entry(let e):
                    guard e.sequence == sequence else {
                        throw .invalidArguments("\(what): entry #\(e.sequence) is out of place")
                    }
                    ImpliedPage.append(isEntry: true, hlc: e.hlc, e.bytes, to: &page)
                }
            }
            let s = try db.cached(
                "INSERT INTO writer_implied(zone, writer, seq, hlc, bytes, count) VALUES(?, ?, ?, ?, ?, ?)")
            try s.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: run.firstSequence &+ UInt64(end &- 1)))
                .bind(4, Bytes.hlcKey(run.items[end &- 1].hlc)).bind(5, page).bind(6, Int64(end &- start))
                .runAndRewind()
            start = end
        }
        // The chain stays where the log was last proven (its start for a log first met here).
        let s = try db.cached(
            """
            INSERT INTO writer_logs(zone, writer, seq, hlc, chain) VALUES(?, ?, ?, ?, ?)
            ON CONFLICT(zone, writer) DO UPDATE SET seq = excluded.seq, hlc = excluded.hlc
            """)
        try s.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: lastSequence))
            .bind(4, Int64(bitPattern: previous.rawValue)).bind(5, WriterLog.chainStart(zone: z.id, writer: writer))
            .runAndRewind()
        try keep(c, zone: z)
        z.implied.insert(writer)
    }

    /// Before `old`, a stored version, is replaced or removed: when it implies an entry kept
    /// as its record's name (``keepImplied(_:batch:keepingMade:)``), that entry is
    /// rebuilt from it and kept as its bytes, so no entry is lost with the version.
    func materializeImplied(over old: Record, in z: ZoneState) throws(ShoalError) {
        let vector = old.versionVector
        guard vector.entries.count == 1, let e = vector.entries.first, z.implied.contains(e.node) else { return }
        let s = try db.cached(
            "SELECT seq, count, bytes FROM writer_implied WHERE zone = ? AND writer = ? AND hlc >= ? ORDER BY hlc LIMIT 1"
        )
        s.bind(1, z.row).bind(2, e.node).bind(3, Bytes.hlcKey(e.hlc))
        guard try s.step() else {
            s.reset()
            return
        }
        let last = UInt64(bitPattern: s.int64(0))
        let bytes = s.blob(2)
        let items = ImpliedPage.items(of: bytes, count: s.int64(1), last: last)
        s.reset()
        guard var items else { throw damagedImplied(e.node, in: z.id, at: last) }
        // Another record's version naming the same write (only an open zone would take one)
        // implies nothing.
        guard let k = items.firstIndex(where: { $0.hlc == e.hlc }), !items[k].isEntry,
            items[k].bytes.elementsEqual(old.id.name.utf8)
        else { return }
        items[k].isEntry = true
        items[k].bytes =
            WriterLog.encodedEntry(of: old, dot: Dot(node: e.node, hlc: e.hlc), sequence: items[k].sequence)[...]
        let u = try db.cached("UPDATE writer_implied SET bytes = ? WHERE zone = ? AND writer = ? AND seq = ?")
        try u.bind(1, ImpliedPage.encode(items)).bind(2, z.row).bind(3, e.node).bind(4, Int64(bitPattern: last))
            .runAndRewind()
    }

    /// Checks the chain over the first `rows` rows of `writer`'s entries kept implied in zone
    /// `z`, from the chain value of the log's proven part: each entry is rebuilt from the stored
    /// version that implies it (or read as kept), hashed on, and compared with every checkpoint
    /// held among them. The entries move to the log's proven part, and a checkpoint they do not
    /// hash to is dropped (its writer signed what it did not send: its writes here are then not
    /// relayed past it). Returns how many checkpoints were dropped.
    /// - Throws: `internalError` for a damaged store (an entry whose version no longer shows it).
    @discardableResult
    func proveImplied(
        of writer: NodeID, in z: inout ZoneState, rows limit: Int = .max, through: UInt64 = .max
    ) throws(ShoalError) -> Int {
        guard z.implied.contains(writer) else { return 0 }
        let rowsRead = try db.cached(
            "SELECT seq, count, bytes FROM writer_implied WHERE zone = ? AND writer = ? ORDER BY seq")
        rowsRead.bind(1, z.row).bind(2, writer)
        var rows = [(last: UInt64, count: Int64, bytes: [UInt8])]()
        var more = false
        while try rowsRead.step() {
            // Rows up to the one holding `through`, at most `limit` of them.
            guard rows.count < limit, (rows.last?.last ?? 0) < through else {
                more = true
                break
            }
            rows.append((UInt64(bitPattern: rowsRead.int64(0)), rowsRead.int64(1), rowsRead.blob(2)))
        }
        rowsRead.reset()
        guard let lastRow = rows.last?.last else {
            z.implied.remove(writer)
            return 0
        }
        var chain = try logHead(of: writer, in: z.id).chain
        if chain.isEmpty { chain = WriterLog.chainStart(zone: z.id, writer: writer) }
        let first = rows.first.map { $0.last &- UInt64(max($0.count, 1)) &+ 1 } ?? 1
        let held = try db.cached(
            "SELECT seq, bytes FROM writer_checkpoints WHERE zone = ? AND writer = ? AND seq >= ? AND seq <= ?")
        held.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: first)).bind(4, Int64(bitPattern: lastRow))
        var checkpoints = [UInt64: [UInt8]]()
        while try held.step() {
            let bytes = held.blob(1)
            guard let c = try? WriterCheckpoint(decoding: bytes) else {
                held.reset()
                throw .internalError(
                    "a checkpoint of \(writer)'s log for zone \(z.id) is damaged; the store is damaged")
            }
            checkpoints[UInt64(bitPattern: held.int64(0))] = c.chain
        }
        held.reset()
        var dropped = [UInt64]()
        var run = [WriterLogPage.Entry]()
        var runLast: UInt64 = 0
        for row in rows {
            guard let items = ImpliedPage.items(of: row.bytes, count: row.count, last: row.last) else {
                throw damagedImplied(writer, in: z.id, at: row.last)
            }
            for item in items {
                let bytes = item.isEntry ? Array(item.bytes) : try impliedEntry(item, of: writer, in: z)
                chain = WriterLog.chain(chain, bytes)
                if let c = checkpoints[item.sequence], c != chain { dropped.append(item.sequence) }
                run.append((hlc: item.hlc, bytes: bytes, chain: []))
                runLast = item.sequence
                if run.count == WriterLogPage.maxEntries {
                    try insertRun(run[...], of: writer, zoneRow: z.row, lastSequence: runLast)
                    run.removeAll(keepingCapacity: true)
                }
            }
        }
        if !run.isEmpty { try insertRun(run[...], of: writer, zoneRow: z.row, lastSequence: runLast) }
        try db.cached("UPDATE writer_logs SET chain = ? WHERE zone = ? AND writer = ?").bind(1, chain).bind(2, z.row)
            .bind(3, writer).runAndRewind()
        try db.cached("DELETE FROM writer_implied WHERE zone = ? AND writer = ? AND seq <= ?").bind(1, z.row)
            .bind(2, writer).bind(3, Int64(bitPattern: lastRow)).runAndRewind()
        let drop = try db.cached("DELETE FROM writer_checkpoints WHERE zone = ? AND writer = ? AND seq = ?")
        for sequence in dropped {
            try drop.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: sequence)).runAndRewind()
        }
        if !more { z.implied.remove(writer) }
        impliedCheckpointsDropped &+= dropped.count
        return dropped.count
    }

    /// The entry `item` (kept as its record's name) stands for, rebuilt from the stored version
    /// of that record, which shows the write whole.
    func impliedEntry(_ item: ImpliedPage.Item, of writer: NodeID, in z: ZoneState) throws(ShoalError) -> [UInt8] {
        let name = String(decoding: item.bytes, as: UTF8.self)
        guard let stored = try loadStored(z, name)?.record, stored.versionVector.entries.count == 1,
            stored.versionVector[writer] == item.hlc
        else {
            throw .internalError(
                "entry #\(item.sequence) of \(writer)'s log for zone \(z.id) is kept as implied by record \(name), whose stored version does not show it; the store is damaged"
            )
        }
        return WriterLog.encodedEntry(of: stored, dot: Dot(node: writer, hlc: item.hlc), sequence: item.sequence)
    }

    /// Proves `writer`'s entries kept implied in `zone` up to sequence `through` (all by
    /// default), if any (``proveImplied(of:in:rows:through:)``): done before the log is read
    /// there, `rows` rows (by default up to 16,384 entries, each a record read back) per
    /// transaction, so that a long run does not make one long transaction (and write-ahead log).
    /// A relay proves a long run a batch at a time, as far as each batch it serves reaches.
    func proveIfImplied(
        _ writer: NodeID, in zone: RecordZone.ID, through: UInt64 = .max, rows: Int = provingRows
    ) throws(ShoalError) {
        while zones[zone]?.implied.contains(writer) == true,
            let first = try impliedStart(of: writer, in: zone), first <= through
        {
            try writeTransaction(replication: true) { () throws(ShoalError) in
                var z = try liveZone(zone)
                try proveImplied(of: writer, in: &z, rows: rows, through: through)
                zones[zone] = z
            }
        }
    }

    /// The sequence of `writer`'s first entry kept implied in `zone` (nil: none).
    func impliedStart(of writer: NodeID, in zone: RecordZone.ID) throws(ShoalError) -> UInt64? {
        let z = try liveZone(zone)
        let s = try db.cached(
            "SELECT seq, count FROM writer_implied WHERE zone = ? AND writer = ? ORDER BY seq LIMIT 1")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, writer)
        guard try s.step() else { return nil }
        return UInt64(bitPattern: s.int64(0)) &- UInt64(max(s.int64(1), 1)) &+ 1
    }

    /// The rows of implied entries one transaction proves.
    static let provingRows = 64

    /// Whether `writer`'s log for `zone` holds entries kept implied, not yet chained.
    package func holdsImplied(of writer: NodeID, in zone: RecordZone.ID) -> Bool {
        zones[zone]?.implied.contains(writer) == true
    }

    func damagedImplied(_ writer: NodeID, in zone: RecordZone.ID, at last: UInt64) -> ShoalError {
        .internalError(
            "a row of \(writer)'s implied entries for zone \(zone) ending at #\(last) is damaged; the store is damaged")
    }
}
