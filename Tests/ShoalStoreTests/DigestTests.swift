// DigestTests: zone digests that depend on content, not history.

import Testing
@testable import ShoalStore
import ShoalWire

@Suite struct DigestTests {
    @Test func digestsAgreeOnContentNotHistory() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(d1)
        let b = try await Store.temporary(d2)
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        try await a.modify(saving: (0..<20).map { note("n\($0)", "x") })
        try await a.delete(Record.ID(name: "n3", zone: notes))
        // b receives the same changes; a purges its tombstone, b keeps it.
        try await b.apply(remoteChanges: try await a.changes(in: notes, since: nil).records)
        #expect(try await a.purgeTombstones() == 1)
        let da = try await a.digest(of: notes), db = try await b.digest(of: notes)
        #expect(da == db)
        #expect(da.recordCount == 19)
        try await b.save(note("extra", "y"))
        #expect(try await b.digest(of: notes) != da)
    }
}
