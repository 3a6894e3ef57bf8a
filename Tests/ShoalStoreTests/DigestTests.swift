// DigestTests: SHA-256 test vectors, and zone digests that depend on content, not history.

import Testing
@testable import ShoalStore
import ShoalWire

@Suite struct DigestTests {
    @Test func sha256Vectors() {
        func hex(_ s: String) -> String { Hex.string(SHA256.hash(Array(s.utf8))) }
        #expect(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(Hex.string(SHA256.hash([UInt8](repeating: 0x61, count: 1_000_000))) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

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
