// SchemaMigrationTests: a store written by schema version 1 (records keyed by name) opens under
// version 2 (records keyed by change sequence) with every row, token and ancestor intact.

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

    /// Rewrites a version-2 store's `records` table into version 1's layout, as an old Shoal left it.
    static let downgrade = """
        BEGIN;
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
            for i in 0..<20 { try await store.save(note("n\(i)", "title \(i)")) }
            stale = try await store.record(for: Record.ID(name: "n3", zone: notes))
            var edited = stale
            edited["title"] = .string("edited")
            try await store.save(edited)
            try await store.delete(Record.ID(name: "n7", zone: notes))
            feed = try await store.changes(in: notes, since: nil)
            digest = try await store.digest(of: notes)
        }
        #expect(Self.exec(dir, Self.downgrade) == SQLITE_OK)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "1")

        let store = try await Store.temporary(dir)
        #expect(Self.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "2")
        #expect(Self.scalar(dir, "SELECT count(*) FROM sqlite_master WHERE name = 'records_by_type'") == "0")
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
