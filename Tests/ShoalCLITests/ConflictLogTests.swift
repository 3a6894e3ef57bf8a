// ConflictLogTests: the daemon's line for a conflict names the record, the field, the value this
// node lost, and what became of the conflict.

import Foundation
import Testing
import ShoalStore
import ShoalWire
@testable import shoal

@Suite struct ConflictLogTests {
    @Test func theLineNamesTheFieldTheLostValueAndTheOutcome() async throws {
        let root = NSTemporaryDirectory() + "shoal-conflict-log-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try Store.open(directory: root + "/a"), b = try Store.open(directory: root + "/b")
        let notes = RecordZone.ID(name: "notes")
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        let base = try await a.save(
            {
                var r = Record(recordType: "Note", id: Record.ID(name: "n1", zone: notes));
                r["title"] = .string("draft"); return r
            }())
        try await b.apply(remoteChanges: [base])
        var ea = base, eb = base
        ea["title"] = .string("from a")
        eb["title"] = .string("from b")
        let va = try await a.save(ea)
        try await Task.sleep(for: .milliseconds(3))
        let vb = try await b.save(eb)
        let events = await a.conflictEvents()
        try await a.apply(remoteChanges: [vb])
        var line = ""
        for await e in events { line = ServeCommand.conflictLine(e); break }
        // a wrote the older side, so a decides; with no resolver the merge stands and a's value is lost.
        #expect(
            line == "conflict in notes/n1 on title (this node's \"from a\" lost): merged by last-writer-wins", "\(line)"
        )
        _ = va
    }
}
