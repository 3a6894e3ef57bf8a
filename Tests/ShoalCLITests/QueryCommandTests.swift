// QueryCommandTests: `shoal query` as the README's LAN quick start writes it, without a daemon.

import Foundation
import Testing

@Suite struct QueryCommandTests {
    /// The README's line, `--sort -modified` included: a descending sort's value starts with "-".
    @Test func theReadmesQueryRunsAsWritten() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-query-\(UInt32.random(in: 0 ... .max))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        #expect(try await Shoal.run(["zone", "create", "notes", "--data", dir]).status == 0)
        for (name, count) in [("groceries", 2), ("chores", 5), ("ideas", 1)] {
            let put = try await Shoal.run(["put", "notes", name, "--type", "Note", "title=\(name)", "count:=\(count)", "--data", dir])
            #expect(put.status == 0, "\(put.error)")
        }
        let query = try await Shoal.run(["query", "notes", "--type", "Note", "--where", "count >= 2", "--sort", "-modified", "--limit", "20", "--data", dir])
        #expect(query.status == 0, "\(query.error)")
        let out = query.output
        let chores = try #require(out.range(of: "chores"), "\(out)"), groceries = try #require(out.range(of: "groceries"), "\(out)")
        #expect(chores.lowerBound < groceries.lowerBound, "newest first: \(out)")
        #expect(!out.contains("ideas"), "\(out)")
        // Ascending, for contrast.
        let ascending = try await Shoal.run(["query", "notes", "--type", "Note", "--sort", "modified", "--data", dir]).output
        let first = try #require(ascending.range(of: "groceries"), "\(ascending)"), last = try #require(ascending.range(of: "ideas"), "\(ascending)")
        #expect(first.lowerBound < last.lowerBound, "\(ascending)")
    }
}
