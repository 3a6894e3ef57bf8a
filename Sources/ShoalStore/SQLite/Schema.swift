// Schema: the store's tables, and the identity row every store keeps (node ID, clock, incarnations).

import ShoalWire

/// The SQL schema (version 11). Every table is `WITHOUT ROWID` keyed by what is looked up.
///
/// - `meta(key, value)`: node ID, store and database incarnations, last HLC, database sequence,
///   and `zone_purge_seq`, the database sequence of the newest zone deletion purged.
/// - `zones`: one row per zone held, live or deleted (a deleted zone stays as a zone tombstone
///   until it is purged, Spec/replication.md §4.1).
/// - `records(zone, seq, name, type, deleted, bytes, previous, base)`: the latest version of every
///   record (tombstones included) as canonical ShoalWire bytes, **keyed by change order**: `seq`
///   is the zone's change sequence of the write that produced it, so the change feed is one range
///   read of the table and a new version is appended at its end; `records_by_name(zone, name)`
///   finds a record by name. `previous` holds the version before, and `base` (in zones with a
///   conflict resolver) the newest version a peer is known to hold too, for conflict ancestors
///   (`Store.BaseUpdate`, Spec/store.md §7.1).
///   (Version 1 keyed rows by name with indexes on `seq` and on `type`: every feed row cost a
///   second lookup and every write a third index; queries now filter the zone's rows by type.)
/// - `record_clock(zone, origin, hlc, name)`: one row per version-vector entry of every record, so
///   "what changed since vector V" is a range scan per origin (`hlc > V[origin]`).
/// - `refs(zone, target, source)`: live `deleteSelf` references, for cascading deletes.
/// - `merged_heads(zone, name)`: live records with two or more heads — merges of concurrent
///   writes no save has superseded yet. A server sends such a version whatever the subscriber's
///   knowledge when a head is a deletion or lies at or below its purge horizon
///   (Spec/replication.md §3.5.3 rule 6), so the read by knowledge, which finds versions by their
///   entries in `record_clock`, reads these as well.
/// - `asset_refs(hash, size, zone, name)`: the assets live records reference, one row per asset
///   and record, keyed by asset: the asset lane serves an asset only to a device that may read a
///   zone listed for it (Spec/replication.md §3.7), one range read per request.
/// - `index_decls(id, zone, type, field)`: declared secondary indexes; `id` (never reused) names
///   the index in its entries.
/// - `field_postings(idx, kind, value, run, names)`: the entries, keyed by index ID and value:
///   each row (a *run*) lists names of records holding that value (`PostingList`); a value has
///   a few runs, appended one per batch of additions and merged into one when a record leaves it.
/// - `field_index_log`: removals from `field_postings` not applied yet, in write order.
///   Additions are not logged: they are the indexed fields of the records written since
///   `index_progress(zone, seq)`, kept in memory and derived again from `records` on opening
///   (see `Store.flushIndexLog()`).
///   (Version 2 keyed entries and log rows by zone row, record type and field name: every key
///   comparison compared those strings too. Version 3 kept one row per entry in `field_index`
///   and logged additions as well: a batch of additions cost a b-tree insert per entry.)
/// - `peer_acks(zone, peer, vector)`: what each known peer has acknowledged, for tombstone purges.
/// - `zone_peers(zone, peer, incarnation, deleted)`: each peer's last announcement of each zone
///   held, for zone tombstone purges.
/// - `purged_zones(name, owner, incarnation, deleted_at)`: the incarnation of each zone whose
///   tombstone was purged, so a peer that comes back with it live is told it was deleted.
/// - `subscriptions(id, bytes)`: persisted subscriptions.
/// - `writer_entries(zone, writer, seq, hlc, bytes, chain, count)`: the entries of writers' logs
///   (Spec/authenticated-writes.md §2), keyed by log and by the sequence of the row's last entry.
///   A row of this node's own log holds one entry (`count` 1) as its canonical bytes, with the
///   chain value after it (so its checkpoint can end at any entry). A row of another writer's
///   log holds a run of `count` consecutive entries verified together, their chain value empty:
///   one entry as its bytes, or a page of them, each as its timestamp (8 bytes, little-endian),
///   its length (4 bytes, little-endian) and its bytes (``WriterLogPage``), so that a verified
///   range costs a row per page rather than per entry. `seq` and `hlc` are those of the row's
///   last entry; `writer_entries_by_hlc` finds the row holding a dot. The head of this node's own log for each
///   zone — sequence, timestamp and chain value of its last entry — is in `zones(log_seq,
///   log_hlc, log_chain)`; the heads of other writers' logs, as far as they were verified here,
///   in `writer_logs(zone, writer, seq, hlc, chain, reflected_seq, reflected_hlc)`, with how far
///   every entry is reflected in the zone (Spec/authenticated-writes.md §6).
///   While a writer's log holds entries kept implied (below), `writer_logs.chain` is the chain
///   value after its last proven entry, and `seq`/`hlc` those of its last entry.
/// - `writer_implied(zone, writer, seq, hlc, count, bytes)`: a peer's own entries taken on its
///   authenticated connection's word and not yet chained (Spec/authenticated-writes.md §5.1),
///   after the log's proven part in `writer_entries`: pages of up to 256, each entry as its
///   record's name (the stored version implies it) or its bytes (``ImpliedPage``), keyed like
///   `writer_entries`. They move there once their chain is checked.
/// - `writer_checkpoints(zone, writer, seq, bytes)`: the signed checkpoints held, own and
///   verified (§3), each as its canonical bytes.
/// - `writer_keys(writer, key)`: the public key (SubjectPublicKeyInfo DER) of the device each
///   writer's checkpoints are verified under, learnt with its first range (§4).
enum Schema {
    static let version: Int64 = 11

    static func create(
        _ db: SQLiteDatabase, synchronous: Store.Configuration.Synchronous, cacheKibibytes: Int,
        limits: WireLimits
    ) throws(ShoalError) {
        try db.execute("PRAGMA journal_mode=WAL")
        try db.execute("PRAGMA synchronous=\(synchronous.rawValue)")
        try db.execute("PRAGMA foreign_keys=OFF")
        try db.execute("PRAGMA cache_size=-\(max(cacheKibibytes, 64))")
        try db.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value ANY NOT NULL) WITHOUT ROWID")
        try migrate(db, limits: limits)
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS zones(
                id INTEGER PRIMARY KEY, name TEXT NOT NULL, owner TEXT NOT NULL,
                scope INTEGER NOT NULL, read_only INTEGER NOT NULL, incarnation BLOB NOT NULL,
                seq INTEGER NOT NULL, vector BLOB NOT NULL, horizon BLOB NOT NULL,
                deleted INTEGER NOT NULL, deletion BLOB, db_seq INTEGER NOT NULL,
                log_seq INTEGER NOT NULL DEFAULT 0, log_hlc INTEGER NOT NULL DEFAULT 0, log_chain BLOB,
                UNIQUE(name, owner));
            \(recordsTable("records"));
            CREATE UNIQUE INDEX IF NOT EXISTS records_by_name ON records(zone, name);
            CREATE TABLE IF NOT EXISTS record_clock(
                zone INTEGER NOT NULL, origin BLOB NOT NULL, hlc INTEGER NOT NULL, name TEXT NOT NULL,
                PRIMARY KEY(zone, origin, hlc, name)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS refs(
                zone INTEGER NOT NULL, target TEXT NOT NULL, source TEXT NOT NULL,
                PRIMARY KEY(zone, target, source)) WITHOUT ROWID;
            \(mergedHeadsTable);
            \(assetRefsTable);
            \(indexTables);
            CREATE TABLE IF NOT EXISTS peer_acks(
                zone INTEGER NOT NULL, peer BLOB NOT NULL, vector BLOB NOT NULL,
                PRIMARY KEY(zone, peer)) WITHOUT ROWID;
            \(zoneTombstoneTables);
            CREATE TABLE IF NOT EXISTS subscriptions(id TEXT PRIMARY KEY, bytes BLOB NOT NULL) WITHOUT ROWID;
            \(writerEntriesTable);
            """)
    }

    /// Writers' logs (version 9): their entries, the heads of other writers' logs verified here,
    /// and the checkpoints held.
    static let writerEntriesTable = """
        CREATE TABLE IF NOT EXISTS writer_entries(
            zone INTEGER NOT NULL, writer BLOB NOT NULL, seq INTEGER NOT NULL, hlc INTEGER NOT NULL, bytes BLOB NOT NULL,
            chain BLOB NOT NULL, count INTEGER NOT NULL DEFAULT 1, PRIMARY KEY(zone, writer, seq)) WITHOUT ROWID;
        CREATE UNIQUE INDEX IF NOT EXISTS writer_entries_by_hlc ON writer_entries(zone, writer, hlc);
        CREATE TABLE IF NOT EXISTS writer_logs(
            zone INTEGER NOT NULL, writer BLOB NOT NULL, seq INTEGER NOT NULL, hlc INTEGER NOT NULL, chain BLOB NOT NULL,
            reflected_seq INTEGER NOT NULL DEFAULT 0, reflected_hlc INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY(zone, writer)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS writer_checkpoints(
            zone INTEGER NOT NULL, writer BLOB NOT NULL, seq INTEGER NOT NULL, bytes BLOB NOT NULL,
            PRIMARY KEY(zone, writer, seq)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS writer_keys(writer BLOB PRIMARY KEY, key BLOB NOT NULL) WITHOUT ROWID;
        \(writerImpliedTable)
        """

    /// A peer's own entries kept before their chain is checked (version 11).
    static let writerImpliedTable = """
        CREATE TABLE IF NOT EXISTS writer_implied(
            zone INTEGER NOT NULL, writer BLOB NOT NULL, seq INTEGER NOT NULL, hlc INTEGER NOT NULL, bytes BLOB NOT NULL,
            count INTEGER NOT NULL, PRIMARY KEY(zone, writer, seq)) WITHOUT ROWID;
        CREATE UNIQUE INDEX IF NOT EXISTS writer_implied_by_hlc ON writer_implied(zone, writer, hlc)
        """

    /// Live records with two or more heads (version 6).
    static let mergedHeadsTable = """
        CREATE TABLE IF NOT EXISTS merged_heads(
            zone INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY(zone, name)) WITHOUT ROWID
        """

    /// What zone tombstone purges keep: each peer's last announcement of each zone held, and the
    /// incarnations purged (version 5).
    static let zoneTombstoneTables = """
        CREATE TABLE IF NOT EXISTS zone_peers(
            zone INTEGER NOT NULL, peer BLOB NOT NULL, incarnation BLOB NOT NULL, deleted INTEGER NOT NULL,
            PRIMARY KEY(zone, peer)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS purged_zones(
            name TEXT NOT NULL, owner TEXT NOT NULL, incarnation BLOB NOT NULL, deleted_at INTEGER NOT NULL,
            PRIMARY KEY(name, owner)) WITHOUT ROWID
        """

    /// The `records` table of this schema version, under `name`.
    static func recordsTable(_ name: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(name)(
            zone INTEGER NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
            deleted INTEGER NOT NULL, bytes BLOB NOT NULL, previous BLOB, base BLOB,
            PRIMARY KEY(zone, seq)) WITHOUT ROWID
        """
    }

    /// The `records` table of versions 2 to 7 (without `base`), which the 1 → 2 step writes.
    static let recordsTableV2 = """
        CREATE TABLE IF NOT EXISTS records_v2(
            zone INTEGER NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
            deleted INTEGER NOT NULL, bytes BLOB NOT NULL, previous BLOB,
            PRIMARY KEY(zone, seq)) WITHOUT ROWID
        """

    /// The declared indexes, their entries and their log, as this schema version keeps them.
    static let indexTables = """
        CREATE TABLE IF NOT EXISTS index_decls(
            id INTEGER PRIMARY KEY AUTOINCREMENT, zone INTEGER NOT NULL, type TEXT NOT NULL, field TEXT NOT NULL,
            UNIQUE(zone, type, field));
        CREATE TABLE IF NOT EXISTS field_postings(
            idx INTEGER NOT NULL, kind INTEGER NOT NULL, value BLOB, run INTEGER NOT NULL, names BLOB NOT NULL,
            PRIMARY KEY(idx, kind, value, run)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS field_index_log(
            id INTEGER PRIMARY KEY, idx INTEGER NOT NULL, kind INTEGER NOT NULL,
            value BLOB, name TEXT NOT NULL, present INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS index_progress(zone INTEGER PRIMARY KEY, seq INTEGER NOT NULL)
        """

    /// Version 3's index tables (the 2 → 3 step writes them; 3 → 4 converts them).
    static let indexTablesV3 = """
        CREATE TABLE IF NOT EXISTS index_decls(
            id INTEGER PRIMARY KEY AUTOINCREMENT, zone INTEGER NOT NULL, type TEXT NOT NULL, field TEXT NOT NULL,
            UNIQUE(zone, type, field));
        CREATE TABLE IF NOT EXISTS field_index(
            idx INTEGER NOT NULL, kind INTEGER NOT NULL, value BLOB, name TEXT NOT NULL,
            PRIMARY KEY(idx, kind, value, name)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS field_index_log(
            id INTEGER PRIMARY KEY, idx INTEGER NOT NULL, kind INTEGER NOT NULL,
            value BLOB, name TEXT NOT NULL, present INTEGER NOT NULL)
        """

    /// Brings a store written by an older schema version to this one, one transaction per step.
    ///
    /// Version 1 → 2: `records` re-keyed from (zone, name) to (zone, seq); the rows are copied as
    /// they are (bytes, sequence numbers and tokens stay valid).
    /// Version 2 → 3: declared indexes get IDs, and index entries and log rows are keyed by them
    /// instead of by zone, type and field; every entry and pending log row is carried over.
    /// Version 3 → 4: entries become runs of names per value (`field_postings`, one run per
    /// value); pending log rows stay as they are (a flush applies additions and removals alike),
    /// and every zone's `index_progress` is its current sequence (version 3 logged every change).
    /// Version 4 → 5: `zone_peers` and `purged_zones` are added; every peer that acknowledged a
    /// live zone counts as having announced it live (version 4 recorded no announcements), so its
    /// deletion waits for them as for the peers that announce it from now on.
    /// Version 5 → 6: `merged_heads` is added and filled from the live records' heads.
    /// Version 6 → 7: `asset_refs` is added and filled from the live records' asset fields
    /// (decoded with the store's `limits`).
    /// Version 7 → 8: `records` gains the `base` column, empty: until a record is written again
    /// in a zone with a resolver, its conflicts find their ancestor in `previous`, as before.
    /// Version 8 → 9: `writer_entries` is added, and `zones` the head of this node's own log. Each
    /// zone's log starts with an entry for every write of this node its records still show (a
    /// head, or a slot's stamp), in timestamp order, as the versions show them
    /// (Spec/authenticated-writes.md §7).
    /// Version 9 → 10: `writer_entries` gains `count`, 1 for every row kept so far (one entry
    /// each); verified ranges are kept in pages from then on.
    /// Version 10 → 11: `writer_implied` is added, empty.
    static func migrate(_ db: SQLiteDatabase, limits: WireLimits) throws(ShoalError) {
        let s = try db.statement("SELECT value FROM meta WHERE key = 'schema'")
        let found: Int64? = try s.step() ? s.int64(0) : nil
        s.reset()
        guard var stored = found, stored < version else { return }
        guard stored >= 1 else {
            throw .internalError(
                "the store at \(db.path) has schema version \(stored); this Shoal reads versions 1 to \(version)")
        }
        if stored == 1 {
            try db.transaction { () throws(ShoalError) in
                try db.execute(
                    """
                    \(recordsTableV2);
                    INSERT INTO records_v2(zone, seq, name, type, deleted, bytes, previous)
                        SELECT zone, seq, name, type, deleted, bytes, previous FROM records;
                    DROP TABLE records;
                    ALTER TABLE records_v2 RENAME TO records;
                    UPDATE meta SET value = 2 WHERE key = 'schema';
                    """)
            }
            stored = 2
        }
        if stored == 2 {
            try db.transaction { () throws(ShoalError) in
                try db.execute(
                    """
                    ALTER TABLE index_decls RENAME TO index_decls_v2;
                    ALTER TABLE field_index RENAME TO field_index_v2;
                    ALTER TABLE field_index_log RENAME TO field_index_log_v2;
                    \(indexTablesV3);
                    INSERT INTO index_decls(zone, type, field) SELECT zone, type, field FROM index_decls_v2 ORDER BY zone, type, field;
                    INSERT INTO field_index(idx, kind, value, name)
                        SELECT d.id, f.kind, f.value, f.name FROM field_index_v2 f
                        JOIN index_decls d ON d.zone = f.zone AND d.type = f.type AND d.field = f.field;
                    INSERT INTO field_index_log(id, idx, kind, value, name, present)
                        SELECT l.id, d.id, l.kind, l.value, l.name, l.present FROM field_index_log_v2 l
                        JOIN index_decls d ON d.zone = l.zone AND d.type = l.type AND d.field = l.field;
                    DROP TABLE index_decls_v2;
                    DROP TABLE field_index_v2;
                    DROP TABLE field_index_log_v2;
                    UPDATE meta SET value = 3 WHERE key = 'schema';
                    """)
            }
            stored = 3
        }
        if stored == 3 {
            try db.transaction { () throws(ShoalError) in
                try db.execute(
                    """
                    \(indexTables);
                    INSERT OR REPLACE INTO index_progress(zone, seq) SELECT id, seq FROM zones;
                    """)
                let read = try db.statement(
                    "SELECT idx, kind, value, name FROM field_index ORDER BY idx, kind, value, name")
                let write = try db.statement(
                    "INSERT INTO field_postings(idx, kind, value, run, names) VALUES(?, ?, ?, 1, ?)")
                var names = [String]()
                var current: (Int64, Int, IndexValue)? = nil
                func emit() throws(ShoalError) {
                    guard let (idx, kind, value) = current, !names.isEmpty else { return }
                    write.bind(1, idx).bind(2, kind)
                    value.bind(write, 3)
                    write.bind(4, PostingList.encode(names))
                    try write.runAndRewind()
                    names.removeAll(keepingCapacity: true)
                }
                while try read.step() {
                    let key = (read.int64(0), read.int(1), IndexValue(column: 2, of: read))
                    if let c = current, c.0 != key.0 || c.1 != key.1 || IndexValue.compare(c.2, key.2) != 0 {
                        try emit()
                    }
                    current = key
                    names.append(read.text(3))
                }
                try emit()
                read.reset()
                try db.execute("DROP TABLE field_index; UPDATE meta SET value = 4 WHERE key = 'schema'")
            }
            stored = 4
        }
        if stored == 4 {
            try db.transaction { () throws(ShoalError) in
                try db.execute(
                    """
                    \(zoneTombstoneTables);
                    INSERT OR IGNORE INTO zone_peers(zone, peer, incarnation, deleted)
                        SELECT a.zone, a.peer, z.incarnation, 0 FROM peer_acks a JOIN zones z ON z.id = a.zone WHERE z.deleted = 0;
                    UPDATE meta SET value = 5 WHERE key = 'schema';
                    """)
            }
            stored = 5
        }
        if stored == 5 {
            try db.transaction { () throws(ShoalError) in
                try db.execute(mergedHeadsTable)
                let read = try db.statement("SELECT zone, name, bytes FROM records WHERE deleted = 0")
                let add = try db.statement("INSERT OR IGNORE INTO merged_heads(zone, name) VALUES(?, ?)")
                while try read.step() {
                    let heads = read.withBlob(2) { raw in (try? Record.headedVector(ofEncoded: raw))?.heads.count ?? 0 }
                    guard heads >= 2 else { continue }
                    try add.bind(1, read.int64(0)).bind(2, read.text(1)).run()
                    add.reset()
                }
                read.reset()
                try db.execute("UPDATE meta SET value = 6 WHERE key = 'schema'")
            }
            stored = 6
        }
        if stored == 6 {
            try db.transaction { () throws(ShoalError) in
                try db.execute(assetRefsTable)
                try fillAssetRefs(db, limits: limits)
                try db.execute("UPDATE meta SET value = 7 WHERE key = 'schema'")
            }
            stored = 7
        }
        if stored == 7 {
            try db.transaction { () throws(ShoalError) in
                try db.execute(
                    "ALTER TABLE records ADD COLUMN base BLOB; UPDATE meta SET value = 8 WHERE key = 'schema'")
            }
            stored = 8
        }
        if stored == 8 {
            try db.transaction { () throws(ShoalError) in
                try db.execute(
                    """
                    ALTER TABLE zones ADD COLUMN log_seq INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE zones ADD COLUMN log_hlc INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE zones ADD COLUMN log_chain BLOB;
                    \(writerEntriesTable);
                    """)
                try startOwnLogs(db, limits: limits)
                try db.execute("UPDATE meta SET value = 9 WHERE key = 'schema'")
            }
            stored = 9
        }
        if stored == 9 {
            try db.transaction { () throws(ShoalError) in
                // A store made at version 9 lacks the column; one migrated from 8 just now has it.
                let has = try db.statement(
                    "SELECT count(*) FROM pragma_table_info('writer_entries') WHERE name = 'count'")
                let present = try has.step() && has.int64(0) > 0
                has.reset()
                if !present { try db.execute("ALTER TABLE writer_entries ADD COLUMN count INTEGER NOT NULL DEFAULT 1") }
                try db.execute("UPDATE meta SET value = 10 WHERE key = 'schema'")
            }
            stored = 10
        }
        if stored == 10 {
            try db.transaction { () throws(ShoalError) in
                try db.execute("\(writerImpliedTable); UPDATE meta SET value = 11 WHERE key = 'schema'")
            }
        }
    }

    struct Meta {
        var nodeID: NodeID
        var incarnation: NodeID
        var databaseIncarnation: NodeID
        var clock: HLC
        var databaseSequence: UInt64
        /// The database sequence of the newest zone deletion purged (0: none).
        var zonePurgeSequence: UInt64 = 0
    }

    static func loadOrCreateMeta(_ db: SQLiteDatabase, newIdentifier: () -> NodeID = { NodeID.random() })
        throws(ShoalError) -> Meta
    {
        try db.transaction { () throws(ShoalError) -> Meta in
            var values: [String: (Int64, [UInt8])] = [:]
            let s = try db.statement("SELECT key, value FROM meta")
            while try s.step() { values[s.text(0)] = (s.int64(1), s.blob(1)) }
            if values.isEmpty {
                let m = Meta(
                    nodeID: newIdentifier(), incarnation: newIdentifier(), databaseIncarnation: newIdentifier(),
                    clock: .zero, databaseSequence: 0)
                try setMeta(db, "schema", version)
                try setMeta(db, "node", Bytes.nodeID(m.nodeID))
                try setMeta(db, "incarnation", Bytes.nodeID(m.incarnation))
                try setMeta(db, "db_incarnation", Bytes.nodeID(m.databaseIncarnation))
                try setMeta(db, "clock", 0)
                try setMeta(db, "db_seq", 0)
                return m
            }
            guard let schema = values["schema"]?.0, schema == version else {
                throw .internalError(
                    "the store at \(db.path) has schema version \(values["schema"]?.0 ?? 0); this Shoal reads version \(version)"
                )
            }
            func id(_ key: String) throws(ShoalError) -> NodeID {
                guard let b = values[key]?.1, let n = Bytes.nodeID(b) else {
                    throw .internalError(
                        "the store's meta row \(key) is missing or not 16 bytes in \(db.path); the store is damaged")
                }
                return n
            }
            return Meta(
                nodeID: try id("node"), incarnation: try id("incarnation"),
                databaseIncarnation: try id("db_incarnation"),
                clock: HLC(rawValue: UInt64(bitPattern: values["clock"]?.0 ?? 0)),
                databaseSequence: UInt64(bitPattern: values["db_seq"]?.0 ?? 0),
                zonePurgeSequence: UInt64(bitPattern: values["zone_purge_seq"]?.0 ?? 0))
        }
    }

    static func setMeta(_ db: SQLiteDatabase, _ key: String, _ value: Int64) throws(ShoalError) {
        let s = try db.statement("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)")
        try s.bind(1, key).bind(2, value).run()
    }

    static func setMeta(_ db: SQLiteDatabase, _ key: String, _ value: [UInt8]) throws(ShoalError) {
        let s = try db.statement("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)")
        try s.bind(1, key).bind(2, value).run()
    }
}

/// Byte forms of node IDs, HLCs and vectors in the store's columns.
enum Bytes {
    static func nodeID(_ n: NodeID) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(16)
        for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: n.high >> UInt64(s))) }
        for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: n.low >> UInt64(s))) }
        return out
    }

    static func nodeID(_ b: some Collection<UInt8>) -> NodeID? {
        guard b.count == 16 else { return nil }
        var hi: UInt64 = 0, lo: UInt64 = 0
        for (i, x) in b.enumerated() {
            if i < 8 { hi = hi << 8 | UInt64(x) } else { lo = lo << 8 | UInt64(x) }
        }
        return NodeID(high: hi, low: lo)
    }

    /// An HLC as a signed integer that sorts like the unsigned value (top bit flipped).
    static func hlcKey(_ h: HLC) -> Int64 { Int64(bitPattern: h.rawValue ^ (1 << 63)) }

    /// A vector: 24 bytes per entry (node, big-endian timestamp), sorted by node.
    static func vector(_ v: VersionVector) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(24 * v.count)
        for e in v.entries {
            out += nodeID(e.node)
            for s in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: e.hlc.rawValue >> UInt64(s)))
            }
        }
        return out
    }

    static func vector(_ b: [UInt8], _ what: @autoclosure () -> String) throws(ShoalError) -> VersionVector {
        guard b.count % 24 == 0 else {
            throw .internalError("\(what()) is \(b.count) bytes, not a multiple of 24; the store is damaged")
        }
        var entries = [VersionVector.Entry]()
        var i = 0
        while i < b.count {
            guard let node = nodeID(b[i..<i + 16]) else { break }
            var h: UInt64 = 0
            for k in 16..<24 { h = h << 8 | UInt64(b[i + k]) }
            if let p = entries.last?.node, node <= p {
                throw .internalError("\(what()) has unsorted nodes; the store is damaged")
            }
            if h == 0 { throw .internalError("\(what()) has a zero entry; the store is damaged") }
            entries.append(.init(node: node, hlc: HLC(rawValue: h)))
            i += 24
        }
        return VersionVector(sortedEntries: entries)
    }
}
