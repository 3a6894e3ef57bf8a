// SchemaMigrationTests: a store written by schema version 1 (records keyed by name, index entries
// keyed by zone, type and field, one row each) opens under version 8 (records keyed by change
// sequence, index entries as runs of names keyed by index ID and value, zone tombstone tables,
// merges and asset references listed, a base kept for conflict ancestors) with every row, token,
// ancestor, index entry and pending index change intact; a version-4 store counts the peers that
// acknowledged a zone as peers its deletion waits for.

import Testing
import ShoalWire
import CSQLite
@testable import ShoalStore

@Suite struct SchemaMigrationTests {
    /// Runs `sql` on a raw connection to the store in `dir`; the SQLite result code.
    static func exec(_ dir: TempDirectory, _ sql: String) -> Int32 {
        var h: OpaquePointer? = nil
        guard sqlite3_open(dir.path + "/store.sqlite", &h) == SQLITE_OK else { return SQLITE_CANTOPEN }
        defer { sqlite3_close(h) }
        return sqlite3_exec(h, sql, nil, nil, nil)
    }

    /// The first column of the first row of `sql`, as text ("" when none).
    static func scalar(_ dir: TempDirectory, _ sql: String) -> String {
        var h: OpaquePointer? = nil
        guard sqlite3_open(dir.path + "/store.sqlite", &h) == SQLITE_OK else { return "" }
        defer { sqlite3_close(h) }
        var s: OpaquePointer? = nil
        guard sqlite3_prepare_v2(h, sql, -1, &s, nil) == SQLITE_OK else { return "" }
        defer { sqlite3_finalize(s) }
        guard sqlite3_step(s) == SQLITE_ROW, let t = sqlite3_column_text(s, 0) else { return "" }
        return String(cString: t)
    }

    /// Puts a version-4 store's index entries back as version 3 kept them (`field_index`, one row
    /// per entry), with `extraLog` (SQL) run first: what version 3 would have logged that version
    /// 4 keeps in memory. The downgrade below starts from there.
    static func indexToVersion3(_ dir: TempDirectory, extraLog: String) throws {
        var h: OpaquePointer? = nil
        guard sqlite3_open(dir.path + "/store.sqlite", &h) == SQLITE_OK, let h else {
            throw ShoalError.internalError("cannot open")
        }
        defer { sqlite3_close(h) }
        guard
            sqlite3_exec(
                h,
                extraLog + """
                    ; CREATE TABLE field_index(
                        idx INTEGER NOT NULL, kind INTEGER NOT NULL, value BLOB, name TEXT NOT NULL,
                        PRIMARY KEY(idx, kind, value, name)) WITHOUT ROWID
                    """, nil, nil, nil) == SQLITE_OK
        else { throw ShoalError.internalError("setup") }
        var read: OpaquePointer? = nil, write: OpaquePointer? = nil
        sqlite3_prepare_v2(h, "SELECT idx, kind, value, names FROM field_postings", -1, &read, nil)
        sqlite3_prepare_v2(h, "INSERT OR IGNORE INTO field_index VALUES(?, ?, ?, ?)", -1, &write, nil)
        defer { sqlite3_finalize(read); sqlite3_finalize(write) }
        while sqlite3_step(read) == SQLITE_ROW {
            var names = [String]()
            let raw = UnsafeRawBufferPointer(
                start: sqlite3_column_blob(read, 3), count: Int(sqlite3_column_bytes(read, 3)))
            try PostingList.forEach(raw, index: 0) { names.append($0) }
            for name in names {
                sqlite3_bind_int64(write, 1, sqlite3_column_int64(read, 0))
                sqlite3_bind_int64(write, 2, sqlite3_column_int64(read, 1))
                sqlite3_bind_value(write, 3, sqlite3_column_value(read, 2))
                sqlite3_bind_text(write, 4, name, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
                guard sqlite3_step(write) == SQLITE_DONE else { throw ShoalError.internalError("insert") }
                sqlite3_reset(write)
            }
        }
        sqlite3_finalize(read)
        read = nil
        guard sqlite3_exec(h, "DROP TABLE field_postings; DROP TABLE index_progress", nil, nil, nil) == SQLITE_OK else {
            throw ShoalError.internalError("drop")
        }
    }

    /// Takes away what version 9 added: the writers' log entries and the head of this node's log.
    static let dropVersion9 = """
        DROP TABLE writer_entries; DROP TABLE writer_logs; DROP TABLE writer_checkpoints; ALTER TABLE zones DROP COLUMN log_seq; ALTER TABLE zones DROP COLUMN log_hlc;
        ALTER TABLE zones DROP COLUMN log_chain; UPDATE meta SET value = 8 WHERE key = 'schema';
        """

    /// Rewrites a version-3 store's `records` and index tables into version 1's layout, as an old
    /// Shoal left them.
    static let downgrade = """
        BEGIN;
        CREATE TABLE index_decls_v1(
            zone INTEGER NOT NULL, type TEXT NOT NULL, field TEXT NOT NULL,
            PRIMARY KEY(zone, type, field)) WITHOUT ROWID;
        INSERT INTO index_decls_v1 SELECT zone, type, field FROM index_decls;
        CREATE TABLE field_index_v1(
            zone INTEGER NOT NULL, type TEXT NOT NULL, field TEXT NOT NULL, kind INTEGER NOT NULL,
            value BLOB, name TEXT NOT NULL,
            PRIMARY KEY(zone, type, field, kind, value, name)) WITHOUT ROWID;
        INSERT INTO field_index_v1 SELECT d.zone, d.type, d.field, f.kind, f.value, f.name
            FROM field_index f JOIN index_decls d ON d.id = f.idx;
        CREATE TABLE field_index_log_v1(
            id INTEGER PRIMARY KEY, zone INTEGER NOT NULL, type TEXT NOT NULL, field TEXT NOT NULL,
            kind INTEGER NOT NULL, value BLOB, name TEXT NOT NULL, present INTEGER NOT NULL);
        INSERT INTO field_index_log_v1 SELECT l.id, d.zone, d.type, d.field, l.kind, l.value, l.name, l.present
            FROM field_index_log l JOIN index_decls d ON d.id = l.idx;
        DROP TABLE field_index;
        DROP TABLE field_index_log;
        DROP TABLE index_decls;
        ALTER TABLE index_decls_v1 RENAME TO index_decls;
        ALTER TABLE field_index_v1 RENAME TO field_index;
        ALTER TABLE field_index_log_v1 RENAME TO field_index_log;
        CREATE TABLE records_v1(
            zone INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, seq INTEGER NOT NULL,
            deleted INTEGER NOT NULL, bytes BLOB NOT NULL, previous BLOB,
            PRIMARY KEY(zone, name)) WITHOUT ROWID;
        INSERT INTO records_v1 SELECT zone, name, type, seq, deleted, bytes, previous FROM records;
        DROP TABLE records;
        ALTER TABLE records_v1 RENAME TO records;
        CREATE UNIQUE INDEX records_by_seq ON records(zone, seq);
        CREATE INDEX records_by_type ON records(zone, type, deleted);
        UPDATE meta SET value = 1 WHERE key = 'schema';
        COMMIT;
        """

    /// Version 4 kept no announcements: the 4 → 5 step takes every peer that acknowledged a live
    /// zone as having announced it, so the zone's deletion waits for that peer.
    @Test func versionFourStoreWaitsForThePeersThatAcknowledgedAZone() async throws {
        let dir = TempDirectory()
        let peer = NodeID(high: 4, low: 4)
        do {
            let store = try await Store.temporary(dir)
            try await store.createZone(notes)
            try await store.createZone(RecordZone.ID(name: "other"))
            try await store.acknowledge(peer: peer, zone: notes, vector: VersionVector())
        }
        #expect(
            Self.exec(
                dir,
                Self.dropVersion9
                    + "DROP TABLE zone_peers; DROP TABLE purged_zones; DROP TABLE merged_heads; DROP TABLE asset_refs; ALTER TABLE records DROP COLUMN base; UPDATE meta SET value = 4 WHERE key = 'schema'"
            ) == SQLITE_OK)
        let store = try await Store.temporary(dir)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "11")
        try await store.deleteZone(notes)
        try await store.deleteZone(RecordZone.ID(name: "other"))
        #expect(try await store.zoneTombstones().map(\.waitingFor) == [[peer], []])
        #expect(try await store.purgeZoneTombstones(retention: nil) == 1)
        #expect(await store.zoneAnnouncements().map(\.zone) == [notes])
    }

    /// Version 5 did not list live merges: the 5 → 6 step finds them among the live records.
    @Test func versionFiveStoreListsItsMerges() async throws {
        let dir = TempDirectory(), other = TempDirectory()
        do {
            let a = try await Store.temporary(dir)
            let b = try await Store.temporary(other)
            let inc = try await a.createZone(notes).incarnation
            try await b.createZone(notes, incarnation: inc)
            var r = Record(recordType: "Note", id: Record.ID(name: "n", zone: notes))
            r["title"] = .string("T")
            let v1 = try await a.save(r)
            try await b.apply(remoteChanges: [v1])
            var ea = v1, eb = v1
            ea["title"] = .string("a")
            eb["body"] = .string("b")
            try await a.save(ea)
            try await a.apply(remoteChanges: [try await b.save(eb)])
            var single = Record(recordType: "Note", id: Record.ID(name: "single", zone: notes))
            single["title"] = .string("S")
            try await a.save(single)
        }
        #expect(Self.scalar(dir, "SELECT COUNT(*) FROM merged_heads") == "1")
        #expect(
            Self.exec(
                dir,
                Self.dropVersion9
                    + "DROP TABLE merged_heads; DROP TABLE asset_refs; ALTER TABLE records DROP COLUMN base; UPDATE meta SET value = 5 WHERE key = 'schema'"
            ) == SQLITE_OK)
        _ = try await Store.temporary(dir)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "11")
        #expect(Self.scalar(dir, "SELECT name FROM merged_heads") == "n")
    }

    /// Version 6 did not list asset references: the 6 → 7 step finds them in the live records
    /// (an asset field, a list of assets; a deleted record's none).
    @Test func versionSixStoreListsItsAssetReferences() async throws {
        let dir = TempDirectory()
        func asset(_ n: UInt8) -> Asset { Asset(hash: ContentHash(bytes: [UInt8](repeating: n, count: 32))!, size: 10) }
        let other = RecordZone.ID(name: "other")
        do {
            let store = try await Store.temporary(dir)
            try await store.createZone(notes)
            try await store.createZone(other)
            var a = note("a", "A"), b = note("b", "B"), c = note("c", "C"), d = note("d", "D", zone: other)
            a["file"] = .asset(asset(1))
            b["files"] = .list(.asset([asset(1), asset(2)]))
            c["file"] = .asset(asset(3))
            d["file"] = .asset(asset(1))
            for r in [a, b, c, d] { try await store.save(r) }
            try await store.delete(c.id)
        }
        #expect(Self.scalar(dir, "SELECT COUNT(*) FROM asset_refs") == "4")
        #expect(
            Self.exec(
                dir,
                Self.dropVersion9
                    + "DROP TABLE asset_refs; ALTER TABLE records DROP COLUMN base; UPDATE meta SET value = 6 WHERE key = 'schema'"
            ) == SQLITE_OK)
        let store = try await Store.temporary(dir)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "11")
        #expect(Self.scalar(dir, "SELECT COUNT(*) FROM asset_refs") == "4")
        #expect(try await store.zones(referencing: asset(1)) == [notes, other])
        #expect(try await store.zones(referencing: asset(2)) == [notes])
        #expect(try await store.zones(referencing: asset(3)) == [])
    }

    /// Version 7 kept no base: the 7 → 8 step adds the column, empty, and the ancestor of a
    /// conflict is the previous version until a save in a zone with a resolver keeps a base.
    @Test func versionSevenStoreKeepsABaseFromItsNextSave() async throws {
        let dir = TempDirectory()
        let v0: Record
        do {
            let store = try await Store.temporary(dir)
            try await store.createZone(notes)
            v0 = try await store.save(note("n", "v0"))
        }
        #expect(
            Self.exec(
                dir,
                Self.dropVersion9
                    + "ALTER TABLE records DROP COLUMN base; UPDATE meta SET value = 7 WHERE key = 'schema'")
                == SQLITE_OK)
        let store = try await Store.temporary(dir)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "11")
        #expect(Self.scalar(dir, "SELECT COUNT(*) FROM pragma_table_info('records') WHERE name = 'base'") == "1")
        await store.setConflictResolver({ $0.merged }, for: notes)
        for t in ["v1", "v2"] {
            var r = try await store.record(for: v0.id)
            r["title"] = .string(t)
            try await store.save(r)
        }
        #expect(Self.scalar(dir, "SELECT COUNT(*) FROM records WHERE base IS NOT NULL") == "1")
        let z = try await store.liveZone(notes)
        #expect(try await store.loadKept(z, "n").base == v0)
    }

    @Test func versionOneStoreOpensWithRowsTokensAndAncestors() async throws {
        let dir = TempDirectory()
        var feed: ZoneChanges
        var digest: ZoneDigest
        var stale: Record
        do {
            let store = try await Store.temporary(dir)
            try await store.createZone(notes)
            try await store.declareIndex(zone: notes, recordType: "Note", field: "title")
            for i in 0..<20 { try await store.save(note("n\(i)", "title \(i)")) }
            // Applied entries in `field_postings`; the edits and the delete below stay pending.
            #expect(
                try await store.records(
                    matching: Query(recordType: "Note", predicate: .compare("title", .equal, .string("title 3"))),
                    in: notes
                ).records.count == 1)
            stale = try await store.record(for: Record.ID(name: "n3", zone: notes))
            var edited = stale
            edited["title"] = .string("edited")
            try await store.save(edited)
            try await store.delete(Record.ID(name: "n7", zone: notes))
            feed = try await store.changes(in: notes, since: nil)
            digest = try await store.digest(of: notes)
            #expect(try await store.indexLogRows().stored == 2)  // n3's old title and n7's removed
            #expect(await store.pendingIndexAdditions == 1)  // n3's new title
        }
        // Version 3 logged additions too: n3's new title is a log row there.
        try Self.indexToVersion3(
            dir,
            extraLog: """
                INSERT INTO field_index_log(idx, kind, value, name, present)
                SELECT id, \(FieldValue.Kind.string.rawValue), 'edited', 'n3', 1 FROM index_decls
                """)
        #expect(Self.exec(dir, Self.dropVersion9) == SQLITE_OK)
        #expect(Self.exec(dir, Self.downgrade) == SQLITE_OK)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "1")

        let store = try await Store.temporary(dir)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "11")
        #expect(Self.scalar(dir, "SELECT count(*) FROM sqlite_master WHERE name = 'records_by_type'") == "0")
        // The index answers from carried-over entries and log rows, without decoding the zone.
        func titled(_ t: String) async throws -> [String] {
            let q = Query(recordType: "Note", predicate: .compare("title", .equal, .string(t)))
            return try await store.records(matching: q, in: notes).records.map(\.id.name)
        }
        #expect(try await store.indexLogRows() == (counted: 3, stored: 3))
        #expect(await store.pendingIndexAdditions == 0)
        #expect(try await titled("edited") == ["n3"])
        #expect(await store.lastQueryDecodeCount == 1)
        #expect(try await titled("title 3") == [])
        #expect(try await titled("title 7") == [])
        #expect(try await titled("title 12") == ["n12"])
        // Same feed, in the same order, and the old token resumes with nothing new.
        let again = try await store.changes(in: notes, since: nil)
        #expect(again.records == feed.records)
        #expect(try await store.changes(in: notes, since: feed.token).records.isEmpty)
        #expect(try await store.digest(of: notes) == digest)
        #expect(try await store.allRecordIDs(in: notes).count == 19)
        // The kept previous version is still the ancestor of a conflicting save.
        var late = stale
        late["title"] = .string("late")
        let e = await expectCode(.serverRecordChanged) { try await store.save(late) }
        #expect(e?.ancestorRecord == stale)
        // Writes continue the sequence.
        try await store.save(note("n20", "new"))
        let next = try await store.changes(in: notes, since: feed.token)
        #expect(next.records.map(\.id.name) == ["n20"])
    }
}
