// ChangesPageTests: large change-feed pages, whose rows are decoded in parallel, match what the
// store holds record by record, in change order, and still report damage as internalError.

import Testing
import ShoalStore
import ShoalWire
import CSQLite

@Suite struct ChangesPageTests {
    /// Saves `count` notes in batches, then rewrites every third so change order differs from name order.
    static func filled(_ dir: TempDirectory, count: Int) async throws -> Store {
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.modify(saving: (0..<count).map { note("n\($0)", "title \($0)") }, policy: .allKeys)
        var edits = [Record]()
        for i in stride(from: 0, to: count, by: 3) {
            var r = try await store.record(for: Record.ID(name: "n\(i)", zone: notes))
            r["title"] = .string("edited \(i)")
            edits.append(r)
        }
        try await store.modify(saving: edits)
        return store
    }

    @Test(arguments: [1, 700, 5_000])
    func largePagesMatchRecordByRecordInChangeOrder(limit: Int) async throws {
        let dir = TempDirectory()
        let count = 3_000
        let store = try await Self.filled(dir, count: count)
        var token: ChangeToken? = nil
        var seen = [Record]()
        repeat {
            let page = try await store.changes(in: notes, since: token, limit: limit)
            #expect(page.records.count <= limit)
            #expect(page.moreComing == (seen.count + page.records.count < count))
            seen += page.records
            token = page.token
            if !page.moreComing { break }
        } while true
        #expect(seen.count == count)
        #expect(Set(seen.map(\.id)).count == count)
        for r in seen { #expect(try await store.record(for: r.id) == r) }
        // Change order: the untouched records first (in save order), then the edits.
        let edited = seen.suffix(count / 3)
        #expect(edited.allSatisfy { $0["title"] != nil && "\($0["title"]!)".contains("edited") })
        #expect(try await store.changes(in: notes, since: token).records.isEmpty)
    }

    @Test func damagedRowInALargePageIsAnInternalError() async throws {
        let dir = TempDirectory()
        let store = try await Self.filled(dir, count: 2_000)
        var h: OpaquePointer? = nil
        #expect(sqlite3_open(dir.path + "/store.sqlite", &h) == SQLITE_OK)
        #expect(sqlite3_exec(h, "UPDATE records SET bytes = x'01' WHERE name = 'n1501'", nil, nil, nil) == SQLITE_OK)
        #expect(sqlite3_changes(h) == 1)
        sqlite3_close(h)
        let e = await expectCode(.internalError) { _ = try await store.changes(in: notes, since: nil, limit: 10_000) }
        #expect(e?.message.contains("notes/n1501") == true)
    }
}
