// QueryCommandTests: `shoal query` as the README's LAN quick start writes it, without a daemon.

import Foundation
import Testing

@Suite struct QueryCommandTests {
    /// The README's line, `--sort -modified` included: a descending sort's value starts with "-".
    @Test func theReadmesQueryRunsAsWritten() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-query-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        #expect(try await Shoal.run(["zone", "create", "notes", "--data", dir]).status == 0)
        for (name, count) in [("groceries", 2), ("chores", 5), ("ideas", 1)] {
            let put = try await Shoal.run([
                "put", "notes", name, "--type", "Note", "title=\(name)", "count:=\(count)", "--data", dir
            ])
            #expect(put.status == 0, "\(put.error)")
        }
        let query = try await Shoal.run([
            "query", "notes", "--type", "Note", "--where", "count >= 2", "--sort", "-modified", "--limit", "20",
            "--data", dir
        ])
        #expect(query.status == 0, "\(query.error)")
        let out = query.output
        let chores = try #require(out.range(of: "chores"), "\(out)"),
            groceries = try #require(out.range(of: "groceries"), "\(out)")
        #expect(chores.lowerBound < groceries.lowerBound, "newest first: \(out)")
        #expect(!out.contains("ideas"), "\(out)")
        // Ascending, for contrast.
        let ascending = try await Shoal.run(["query", "notes", "--type", "Note", "--sort", "modified", "--data", dir])
            .output
        let first = try #require(ascending.range(of: "groceries"), "\(ascending)"),
            last = try #require(ascending.range(of: "ideas"), "\(ascending)")
        #expect(first.lowerBound < last.lowerBound, "\(ascending)")
    }

    /// A data directory with a zone `notes` holding `count` notes n0…, each with `count:=i`.
    func directory(notes count: Int) async throws -> String {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-query-\(UInt32.random(in: 0 ... .max))"
        ).path
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        #expect(try await Shoal.run(["zone", "create", "notes", "--data", dir]).status == 0)
        for i in 0..<count {
            let put = try await Shoal.run([
                "put", "notes", "n\(i)", "--type", "Note", "title=note \(i)", "count:=\(i)", "--data", dir
            ])
            #expect(put.status == 0, "\(put.error)")
        }
        return dir
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    /// Pages by the cursor each page prints: every record once, in order; `--all` prints them all.
    @Test func pagesFollowTheCursorAndAllPrintsEveryPage() async throws {
        let dir = try await directory(notes: 5)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var names = [String]()
        var cursor: String? = nil
        var pages = 0
        repeat {
            let args =
                cursor.map { ["query", "notes", "--cursor", $0] } ?? [
                    "query", "notes", "--type", "Note", "--sort", "count"
                ]
            let r = try await Shoal.run(args + ["--limit", "2", "--json", "--data", dir])
            #expect(r.status == 0, "\(r.error)")
            let page = try Self.json(r.output)
            names += try #require(page["records"] as? [[String: Any]]).compactMap { $0["name"] as? String }
            cursor = page["cursor"] as? String
            pages += 1
        } while cursor != nil && pages < 10
        #expect(names == ["n0", "n1", "n2", "n3", "n4"], "\(names)")
        #expect(pages == 3)

        let all = try await Shoal.run([
            "query", "notes", "--type", "Note", "--sort", "-count", "--limit", "2", "--all", "--data", dir
        ])
        #expect(all.status == 0, "\(all.error)")
        let order = ["n4", "n3", "n2", "n1", "n0"].compactMap { all.output.range(of: $0)?.lowerBound }
        #expect(order.count == 5 && order == order.sorted(), "\(all.output)")
        #expect(all.output.contains("(5 records)"), "\(all.output)")

        let first = try await Shoal.run(["query", "notes", "--type", "Note", "--limit", "2", "--data", dir])
        #expect(first.output.contains("next page: --cursor "), "\(first.output)")
    }

    /// A cursor that is not one, or with the query options it already carries, is refused with
    /// a message saying what to pass.
    @Test func aBadCursorIsRefusedClearly() async throws {
        let dir = try await directory(notes: 0)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let notBase64 = try await Shoal.run(["query", "notes", "--cursor", "not a cursor!", "--data", dir])
        #expect(notBase64.status == 3 && notBase64.error.contains("base64url"), "\(notBase64.error)")
        let garbage = try await Shoal.run(["query", "notes", "--cursor", "AAAAAAAA", "--data", dir])
        #expect(garbage.status == 3 && garbage.error.contains("cursor"), "\(garbage.status) \(garbage.error)")
        let both = try await Shoal.run(["query", "notes", "--cursor", "AAAA", "--type", "Note", "--data", dir])
        #expect(both.status == 2 && both.error.contains("--cursor carries the query"), "\(both.error)")
        let none = try await Shoal.run(["query", "notes", "--data", dir])
        #expect(none.status == 2 && none.error.contains("--type"), "\(none.error)")
    }

    /// `put --policy`: all-keys replaces the record's fields, if-unchanged saves only over the
    /// change tag it names.
    @Test func putPoliciesDoWhatTheySay() async throws {
        let dir = try await directory(notes: 1)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let replaced = try await Shoal.run([
            "put", "notes", "n0", "--policy", "all-keys", "title=only this", "--json", "--data", dir
        ])
        #expect(replaced.status == 0, "\(replaced.error)")
        let fields = try #require(try Self.json(replaced.output)["fields"] as? [String: Any], "\(replaced.output)")
        #expect(Set(fields.keys) == ["title"], "count was removed: \(fields)")
        let tag = try #require(try Self.json(replaced.output)["changeTag"] as? String, "\(replaced.output)")

        let stale = try await Shoal.run([
            "put", "notes", "n0", "--policy", "if-unchanged", "--if-tag", "0123", "title=lost", "--data", dir
        ])
        #expect(stale.status == 5 && stale.error.contains("change tag"), "\(stale.status) \(stale.error)")
        let exists = try await Shoal.run(["put", "notes", "n0", "--policy", "if-unchanged", "title=lost", "--data", dir]
        )
        #expect(exists.status == 5, "\(exists.status) \(exists.error)")
        let current = try await Shoal.run([
            "put", "notes", "n0", "--policy", "if-unchanged", "--if-tag", tag, "title=kept", "--data", dir
        ])
        #expect(current.status == 0, "\(current.error)")
        let new = try await Shoal.run([
            "put", "notes", "fresh", "--type", "Note", "--policy", "if-unchanged", "title=new", "--data", dir
        ])
        #expect(new.status == 0, "\(new.error)")
        let got = try await Shoal.run(["get", "notes", "n0", "--data", dir])
        #expect(got.output.contains("kept") && !got.output.contains("lost"), "\(got.output)")
        let misuse = try await Shoal.run(["put", "notes", "n0", "--if-tag", tag, "title=x", "--data", dir])
        #expect(misuse.status == 2, "\(misuse.error)")
    }

    /// `index declare` builds an index queries then use; a bad field name is refused.
    @Test func indexDeclareIndexesAField() async throws {
        let dir = try await directory(notes: 4)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let declared = try await Shoal.run(["index", "declare", "notes", "Note", "count", "--data", dir])
        #expect(declared.status == 0 && declared.output.contains("indexed Note.count"), "\(declared.error)")
        let again = try await Shoal.run(["index", "declare", "notes", "Note", "count", "--data", dir])
        #expect(again.status == 0, "declaring it again does nothing: \(again.error)")
        let query = try await Shoal.run([
            "query", "notes", "--type", "Note", "--where", "count >= 2", "--sort", "count", "--data", dir
        ])
        #expect(
            query.output.contains("n2") && query.output.contains("n3") && !query.output.contains("n1"),
            "\(query.output)")
        let bad = try await Shoal.run(["index", "declare", "notes", "Note", "not a field", "--data", dir])
        #expect(bad.status == 3 && bad.error.contains("field names"), "\(bad.status) \(bad.error)")
    }
}
