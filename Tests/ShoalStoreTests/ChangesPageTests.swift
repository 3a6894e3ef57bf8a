// ChangesPageTests: large change-feed pages, whose rows are decoded in parallel, match what the
// store holds record by record, in change order, and still report damage as internalError.

import Testing
import ShoalStore
import ShoalWire
import CSQLite
import ShoalSamples

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

    /// The encoded feed is the decoded feed's records' canonical bytes, page for page and token
    /// for token; a token this store did not issue gets nil (replication then decodes).
    @Test(arguments: [1, 700, 5_000])
    func encodedPagesAreTheDecodedPagesBytes(limit: Int) async throws {
        let dir = TempDirectory()
        let store = try await Self.filled(dir, count: 2_000)
        var token: ChangeToken? = nil
        var pages = 0
        repeat {
            let page = try await store.changes(in: notes, since: token, limit: limit)
            let encoded = try #require(try await store.encodedChanges(in: notes, since: token, limit: limit))
            #expect(encoded.count == page.records.count)
            #expect(encoded.bytes == page.records.flatMap { $0.encoded() })
            #expect(encoded.token == page.token && encoded.moreComing == page.moreComing)
            token = page.token
            pages += 1
            if !page.moreComing { break }
        } while true
        #expect(pages == 2_000 / limit + (2_000 % limit == 0 ? 0 : 1))
        // A token from another store resumes by vector: no encoded page.
        let other = TempDirectory()
        let peer = try await Store.temporary(other)
        try await peer.createZone(notes, incarnation: try await store.zone(notes).incarnation)
        let foreign = try await peer.changes(in: notes, since: nil).token
        #expect(try await store.encodedChanges(in: notes, since: foreign) == nil)
    }

    /// A page stops before the record that would take its stored bytes past `maxBytes` (a first
    /// record larger than that comes alone), by change sequence and by vector alike, and paging
    /// still yields every record once.
    @Test func pagesAreBoundedByBytesWhileTheyAreRead() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        // 60 records of 1–20 KiB, and one of 200 KiB, larger than any page.
        var rng = SplitMix64(seed: 0xB17E5)
        var saved = (0..<60).map { i in
            var r = note("big\(i)", "title \(i)")
            r["body"] = .bytes([UInt8](repeating: UInt8(i), count: 1_024 * Int(1 + rng.next() % 20)))
            return r
        }
        var huge = note("huge", "too large for a page")
        huge["body"] = .bytes([UInt8](repeating: 9, count: 200_000))
        saved.insert(huge, at: 30)
        try await store.modify(saving: saved, policy: .allKeys)
        let maxBytes = 64_000
        let other = TempDirectory()
        let peer = try await Store.temporary(other)
        try await peer.createZone(notes, incarnation: try await store.zone(notes).incarnation)
        let foreign = try await peer.changes(in: notes, since: nil).token
        for start in [nil, foreign] {
            var token: ChangeToken? = start
            var names = [String]()
            var pages = 0
            repeat {
                let page = try await store.changes(in: notes, since: token, limit: 1_000, maxBytes: maxBytes)
                let bytes = page.records.reduce(0) { $0 + $1.encodedSize }
                #expect(
                    page.records.count == 1 || bytes <= maxBytes,
                    "a page of \(page.records.count) records holds \(bytes) bytes")
                if let e = try await store.encodedChanges(in: notes, since: token, limit: 1_000, maxBytes: maxBytes) {
                    #expect(
                        e.bytes == page.records.flatMap { $0.encoded() } && e.token == page.token
                            && e.moreComing == page.moreComing)
                }
                names += page.records.map(\.id.name)
                token = page.token
                pages += 1
                if !page.moreComing { break }
            } while pages < 200
            #expect(
                names.sorted() == saved.map(\.id.name).sorted(),
                "every record once, starting from \(start == nil ? "nil" : "a foreign token")")
            #expect(pages >= 10, "\(pages) pages")
        }
    }

    /// Applying with the received encodings stores exactly what applying without them stores.
    @Test func applyingWithEncodingsStoresTheSameBytes() async throws {
        let source = TempDirectory(), d1 = TempDirectory(), d2 = TempDirectory()
        let store = try await Self.filled(source, count: 500)
        let records = try await store.changes(in: notes, since: nil, limit: 1_000).records
        let encodings = records.map { $0.encoded()[...] }
        let inc = try await store.zone(notes).incarnation
        let plain = try await Store.temporary(d1), fast = try await Store.temporary(d2)
        for s in [plain, fast] { try await s.createZone(notes, incarnation: inc) }
        // Half first (inserts), then everything again with newer versions of some (replacements).
        try await plain.apply(remoteChanges: Array(records.prefix(250)))
        try await fast.apply(remoteChanges: Array(records.prefix(250)), encodings: Array(encodings.prefix(250)))
        var edits = [Record]()
        for r in records.prefix(100) {
            var e = r
            e["title"] = .string("newer")
            edits.append(e)
        }
        let newer = try await store.modify(saving: edits).savedRecords
        let all = newer + records.suffix(250)
        try await plain.apply(remoteChanges: all)
        // Encodings for a prefix only: the rest are encoded by the store.
        try await fast.apply(remoteChanges: all, encodings: newer.map { $0.encoded()[...] })
        #expect(try await plain.digest(of: notes) == (try await fast.digest(of: notes)))
        #expect(try await fast.digest(of: notes).recordCount == 500)
        await #expect(throws: ShoalError.self) { try await fast.apply(remoteChanges: [], encodings: [encodings[0]]) }
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
