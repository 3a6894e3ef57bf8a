// ShoalErrorTests: the codes not provoked elsewhere, for real — a locked database gives
// requestRateLimited with retryAfter, a damaged row gives internalError, never a trap.

import Testing
import ShoalStore
import ShoalWire
import CSQLite

@Suite struct ShoalErrorTests {
    /// Runs SQL on a second, raw connection to the store's database.
    static func raw(_ dir: TempDirectory, _ sql: String) -> OpaquePointer? {
        var h: OpaquePointer? = nil
        guard sqlite3_open(dir.path + "/store.sqlite", &h) == SQLITE_OK else { return nil }
        sqlite3_exec(h, sql, nil, nil, nil)
        return h
    }

    @Test func lockedDatabaseIsRateLimited() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir) { $0.busyTimeout = .milliseconds(50) }
        try await store.createZone(notes)
        let h = Self.raw(dir, "BEGIN EXCLUSIVE; INSERT INTO meta(key, value) VALUES('lock', 1);")
        defer { sqlite3_exec(h, "ROLLBACK", nil, nil, nil); sqlite3_close(h) }
        let e = await expectCode(.requestRateLimited) { try await store.save(note("n", "x")) }
        #expect(e?.retryAfter != nil)
        #expect(e?.message.contains("locked") == true)
    }

    @Test func damagedRowIsAnInternalError() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.save(note("n", "x"))
        try await store.save(note("m", "y"))
        sqlite3_close(Self.raw(dir, "UPDATE records SET bytes = x'0102030405' WHERE name = 'n'"))
        let e = await expectCode(.internalError) { _ = try await store.record(for: Record.ID(name: "n", zone: notes)) }
        #expect(e?.message.contains("notes/n") == true)
        await expectCode(.internalError) { _ = try await store.changes(in: notes, since: nil) }
        await expectCode(.internalError) { _ = try await store.records(matching: Query(recordType: "Note"), in: notes) }
        // The other record is untouched.
        #expect(try await store.record(for: Record.ID(name: "m", zone: notes))["title"] == .string("y"))
        #expect(ShoalError.Code.internalError.description == "internalError")
    }
}
