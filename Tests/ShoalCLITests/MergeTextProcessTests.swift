// MergeTextProcessTests: two `shoal serve --merge-text Note.body` processes on 127.0.0.1 edit
// different paragraphs of one note while apart; once connected, both hold both edits.

import Foundation
import Testing

@Suite(.serialized) struct MergeTextProcessTests {
    static let body = "Shopping list.\n\nApples and pears.\n\nBread and milk.\n"

    /// The note's body on the node in `dir` (`shoal get --json`), nil when it has none.
    static func body(_ dir: String) async throws -> String? {
        let out = try await Shoal.run(["get", "notes", "n", "--json", "--data", dir]).output
        let json = try? JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
        return (json?["fields"] as? [String: Any])?["body"] as? String
    }

    /// Starts `shoal serve flags…` on `dirs[0]` (A) and `dirs[1]` (B, dialling A), then has A
    /// create zone `notes` and share it read-write with B. Returns both daemons and A's port.
    static func twoSharingNotes(_ daemons: Shoal.Daemons, _ dirs: [String], flags: [String]) async throws -> (
        a: Shoal.Daemon, b: Shoal.Daemon, portA: Int
    ) {
        let a = try daemons.start(["--data", dirs[0]] + flags)
        let portA = try #require(await a.port())
        let b = try daemons.start(["--data", dirs[1]] + flags + ["--peer", "127.0.0.1:\(portA)"])
        _ = try #require(await b.port(), "b did not start: \(b.log)")
        #expect(try await Shoal.run(["zone", "create", "notes", "--data", dirs[0]]).status == 0)
        let idB = try await Shoal.deviceID(dirs[1])
        #expect(try await Shoal.run(["zone", "share", "notes", idB, "--read-write", "--data", dirs[0]]).status == 0)
        return (a, b, portA)
    }

    /// Saves `body` as the note's body through the daemon of `dir`; true on success.
    static func put(_ dir: String, _ body: String) async throws -> Bool {
        try await Shoal.run(["put", "notes", "n", "--type", "Note", "body=\(body)", "--data", dir]).status == 0
    }

    @Test func aFieldNotNamedTypeDotFieldIsAUsageError() async throws {
        try #require(Shoal.binary != nil)
        let r = try await Shoal.run(["serve", "--data", "/nonexistent/shoal-merge", "--merge-text", "body"])
        #expect(r.status == 2 && r.error.contains("TYPE.FIELD"), "\(r.status): \(r.error)")
    }

    @Test func editsOfDifferentParagraphsMadeApartBothSurvive() async throws {
        try #require(Shoal.binary != nil)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-merge-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dirs = ["a", "b"].map { root + "/" + $0 }
        for d in dirs { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        try await Shoal.pair(dirs)
        // No discovery: the nodes meet only where told to.
        let flags = ["--listen", "127.0.0.1:0", "--no-discovery", "--merge-text", "Note.body"]

        try await Shoal.withDaemons { daemons in
            let (a, b, portA) = try await Self.twoSharingNotes(daemons, dirs, flags: flags)
            #expect(try await Self.put(dirs[0], Self.body))
            #expect(
                try await Shoal.eventually { try await Self.body(dirs[1]) == Self.body },
                "the note did not reach b: \(b.log)")

            // Apart: b restarts without --peer (a never had b's address), and each node saves
            // twice — a its first paragraph, b its last.
            await b.stop()
            let b2 = try daemons.start(["--data", dirs[1]] + flags)
            _ = try #require(await b2.port(), "b did not restart: \(b2.log)")
            let a1 = Self.body.replacing("Shopping list.", with: "Shopping list for Saturday.")
            let a2 = a1.replacing("Saturday.", with: "Saturday, early.")
            let b1 = Self.body.replacing("Bread and milk.", with: "Bread, milk and eggs.")
            let b2Body = b1.replacing("milk and eggs.", with: "milk, eggs and butter.")
            for (dir, text) in [(dirs[0], a1), (dirs[0], a2), (dirs[1], b1), (dirs[1], b2Body)] {
                #expect(try await Self.put(dir, text))
            }
            let apart = (try await Self.body(dirs[0]), try await Self.body(dirs[1]))
            #expect(apart.0 == a2 && apart.1 == b2Body, "the nodes were not apart")

            // Together again: b dials a.
            let idA = try await Shoal.deviceID(dirs[0])
            #expect(
                try await Shoal.run(["peer", "add", idA, "--address", "127.0.0.1:\(portA)", "--data", dirs[1]]).status
                    == 0)
            let expected = "Shopping list for Saturday, early.\n\nApples and pears.\n\nBread, milk, eggs and butter.\n"
            let converged = try await Shoal.eventually {
                let onA = try await Self.body(dirs[0]), onB = try await Self.body(dirs[1])
                guard onA == expected, onB == expected else { return false }
                let da = try await Shoal.run(["digest", "notes", "--data", dirs[0]]).output
                let db = try await Shoal.run(["digest", "notes", "--data", dirs[1]]).output
                return da == db && !da.isEmpty
            }
            let bodies = [try await Self.body(dirs[0]), try await Self.body(dirs[1])]
            #expect(converged, "not both edits on both nodes with equal digests: \(bodies)\n\(a.log)\n\(b2.log)")
        }
    }
}
