// PendingRowsTests: clock and index-log rows are queued and inserted in batches; whatever the
// mix of inserts, replacements, deletes and rollbacks, `record_clock` must hold exactly one row per
// version-vector entry of every stored record, and the index log its changes in write order.

import Testing
@testable import ShoalStore
import ShoalWire

extension Store {
    /// `record_clock`'s rows, and the rows the stored records' vectors call for.
    func clockRows() throws -> (stored: [String], expected: [String]) {
        var stored = [String]()
        let s = try db.statement("SELECT zone, hex(origin), hlc, name FROM record_clock")
        while try s.step() { stored.append("\(s.int64(0)) \(s.text(1)) \(s.int64(2)) \(s.text(3))") }
        var expected = [String]()
        for z in zones.values {
            let r = try db.statement("SELECT name, bytes FROM records WHERE zone = ?")
            r.bind(1, z.row)
            while try r.step() {
                let name = r.text(0)
                let rec = try r.withBlob(1) { (raw) throws(ShoalError) -> Record in
                    try decodeRow(raw, zone: z.id, name: name)
                }
                for e in rec.versionVector.entries {
                    expected.append(
                        "\(z.row) \(Hex.string(Bytes.nodeID(e.node)).uppercased()) \(Bytes.hlcKey(e.hlc)) \(name)")
                }
            }
        }
        return (stored.sorted(), expected.sorted())
    }
}

@Suite struct PendingRowsTests {
    /// Bulk saves crossing the batch size with a tail, edits, deletes, a batch undone to its
    /// savepoint and redone, and a peer batch holding two versions of one record.
    @Test func clockRowsFollowEveryVersion() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(d1)
        let b = try await Store.temporary(d2)
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        try await a.declareIndex(zone: notes, recordType: "Note", field: "title")

        let first = try await a.modify(saving: (0..<75).map { note("n\($0)", "t\($0)") }, atomically: false)
            .savedRecords
        var edited = first[3]
        edited["title"] = .string("edited")
        // New-looking batch naming a stored record: undone to its savepoint, then redone.
        try await a.modify(
            saving: (75..<120).map { note("n\($0)", "t\($0)") } + [note("n5", "again")], policy: .allKeys)
        let v2 = try await a.save(edited)
        try await a.delete(first[7].id)
        let rows = try await a.clockRows()
        #expect(rows.stored == rows.expected)
        #expect(rows.stored.count == 120)

        // One peer batch: a record's first version, then the version replacing it.
        let feed = try await a.changes(in: notes, since: nil).records
        try await b.apply(remoteChanges: [first[3], v2] + feed + [first[3]])
        #expect(try await b.record(for: v2.id) == v2)
        let peer = try await b.clockRows()
        #expect(peer.stored == peer.expected)
        #expect(peer.stored.count == 120)
        let logged = try await a.indexLogRows()
        #expect(logged.counted == logged.stored && logged.stored == 3)  // n3's, n5's and n7's old titles
        #expect(await a.pendingIndexAdditions > 120)
        #expect(
            try await a.records(
                matching: Query(recordType: "Note", predicate: .compare("title", .equal, .string("edited"))), in: notes
            ).records.map(\.id) == [v2.id])
        #expect(
            try await a.records(
                matching: Query(recordType: "Note", predicate: .compare("title", .equal, .string("t3"))), in: notes
            ).records.isEmpty)
        #expect(
            try await a.records(
                matching: Query(recordType: "Note", predicate: .compare("title", .equal, .string("again"))), in: notes
            ).records.map(\.id.name) == ["n5"])
    }
}
