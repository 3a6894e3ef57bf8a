// FieldDeltaProcessTests: two `shoal serve` processes on 127.0.0.1; a one-character edit of a long
// field travels as the edit, and `shoal status` says so on both sides.

import Foundation
import Testing

@Suite(.serialized) struct FieldDeltaProcessTests {
    /// The `fieldDeltas` counters of `shoal status --json` on the node in `dir`.
    static func counters(_ dir: String) async throws -> [String: Int] {
        let out = try await Shoal.run(["status", "--json", "--data", dir]).output
        let json = try? JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
        return json?["fieldDeltas"] as? [String: Int] ?? [:]
    }

    @Test func aSmallEditOfALongFieldIsSentAsTheEditAndCounted() async throws {
        try #require(Shoal.binary != nil)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-deltas-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dirs = ["a", "b"].map { root + "/" + $0 }
        for d in dirs { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        try await Shoal.pair(dirs)
        let flags = ["--listen", "127.0.0.1:0", "--no-discovery"]
        let text = (0..<60).map { "line \($0): the quick brown fox jumps over the lazy dog." }.joined(separator: "\n")
        var edited = Array(text.utf8)
        edited[edited.count / 2] = UInt8(ascii: "X")
        let edit = String(decoding: edited, as: UTF8.self)

        try await Shoal.withDaemons { daemons in
            let (_, b, _) = try await MergeTextProcessTests.twoSharingNotes(daemons, dirs, flags: flags)
            #expect(try await MergeTextProcessTests.put(dirs[0], text))
            #expect(
                try await Shoal.eventually { try await MergeTextProcessTests.body(dirs[1]) == text },
                "the note did not reach b: \(b.log)")
            #expect(try await Self.counters(dirs[1])["applied"] == 0)

            #expect(try await MergeTextProcessTests.put(dirs[0], edit))
            #expect(
                try await Shoal.eventually { try await MergeTextProcessTests.body(dirs[1]) == edit },
                "the edit did not reach b: \(b.log)")
            let sent = try await Self.counters(dirs[0]), applied = try await Self.counters(dirs[1])
            #expect(sent["sent"] == 1 && (sent["bytesSaved"] ?? 0) > 2_000, "a: \(sent)")
            #expect(applied["applied"] == 1 && applied["recordsAskedWhole"] == 0, "b: \(applied)")
            let status = try await Shoal.run(["status", "--data", dirs[1]]).output
            #expect(status.contains("field deltas: 0 sent (0 bytes saved), 1 applied"), "\(status)")
        }
    }
}
