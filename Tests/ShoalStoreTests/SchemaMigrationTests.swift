// SchemaMigrationTests: a store written by schema version 1 (records keyed by name, index entries
// keyed by zone, type and field) opens under version 3 (records keyed by change sequence, index
// entries keyed by index ID) with every row, token, ancestor and index entry intact.

import Testing
import ShoalStore
import ShoalWire
import CSQLite

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
            // Applied entries in `field_index`; the edits and the delete below stay in the log.
            #expect(try await store.records(matching: Query(recordType: "Note", predicate: .compare("title", .equal, .string("title 3"))), in: notes).records.count == 1)
            stale = try await store.record(for: Record.ID(name: "n3", zone: notes))
            var edited = stale
            edited["title"] = .string("edited")
            try await store.save(edited)
            try await store.delete(Record.ID(name: "n7", zone: notes))
            feed = try await store.changes(in: notes, since: nil)
            digest = try await store.digest(of: notes)
            #expect(try await store.indexLogRows().stored == 3)  // n3's title removed and added, n7's removed
        }
        #expect(Self.exec(dir, Self.downgrade) == SQLITE_OK)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "1")

        let store = try await Store.temporary(dir)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "3")
        #expect(Self.scalar(dir, "SELECT count(*) FROM sqlite_master WHERE name = 'records_by_type'") == "0")
        // The index answers from carried-over entries and log rows, without decoding the zone.
        func titled(_ t: String) async throws -> [String] {
            let q = Query(recordType: "Note", predicate: .compare("title", .equal, .string(t)))
            return try await store.records(matching: q, in: notes).records.map(\.id.name)
        }
        #expect(try await store.indexLogRows() == (counted: 3, stored: 3))
        #expect(try await titled("edited") == ["n3"])
        #expect(try await store.lastQueryDecodeCount == 1)
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
