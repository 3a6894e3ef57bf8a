// ReadmeQuickStartTests: the README's LAN quick start, read from README.md and run as written on
// two "machines" (network namespaces joined by a bridge), with only its example IDs and paths
// replaced by the real ones.

import Foundation
import Testing

@Suite(.serialized, .timeLimit(.minutes(3))) struct ReadmeQuickStartTests {
    /// The `shoal` lines of the README's LAN quick start, each as arguments (after `shoal`), with
    /// whether it runs in the background (`&`) — read from the README itself, so the test fails
    /// when the README shows a command that does not work.
    static func quickStart() throws -> [(args: [String], background: Bool, comment: String)] {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let section = text.range(of: "## LAN quick start"),
            let open = text.range(of: "```sh\n", range: section.upperBound..<text.endIndex),
            let close = text.range(of: "```", range: open.upperBound..<text.endIndex)
        else {
            throw CocoaError(
                .fileReadCorruptFile,
                userInfo: [NSDebugDescriptionErrorKey: "README.md has no LAN quick start code block"])
        }
        return try text[open.upperBound..<close.lowerBound].split(separator: "\n").compactMap { line in
            guard line.hasPrefix("shoal ") else { return nil }
            var (words, comment) = try Self.words(String(line))
            let background = words.last == "&"
            if background { words.removeLast() }
            return (Array(words.dropFirst()), background, comment)
        }
    }

    /// A command line split as a POSIX shell would for these lines: spaces, single and double
    /// quotes; a `#` after a space starts a comment.
    static func words(_ line: String) throws -> ([String], String) {
        var words = [String](), current = "", inWord = false, quote: Character? = nil
        var index = line.startIndex
        while index < line.endIndex {
            let c = line[index]
            if let q = quote {
                if c == q { quote = nil } else { current.append(c) }
            } else if c == "'" || c == "\"" {
                quote = c
                inWord = true
            } else if c == " " {
                if inWord { words.append(current); current = ""; inWord = false }
            } else if c == "#" && !inWord {
                return (words, String(line[line.index(after: index)...]).trimmingCharacters(in: .whitespaces))
            } else {
                current.append(c)
                inWord = true
            }
            index = line.index(after: index)
        }
        guard quote == nil else {
            throw CocoaError(
                .fileReadCorruptFile, userInfo: [NSDebugDescriptionErrorKey: "unbalanced quote in: \(line)"])
        }
        if inWord { words.append(current) }
        return (words, "")
    }

    @Test func theWordsOfACommandLineAreTheShells() throws {
        let (w, c) = try Self.words(
            #"shoal put notes g --type Note title="Milk and eggs" --where 'count >= 2' x  # a # comment"#)
        #expect(
            w == ["shoal", "put", "notes", "g", "--type", "Note", "title=Milk and eggs", "--where", "count >= 2", "x"])
        #expect(c == "a # comment")
    }

    @Test(
        .enabled(
            if: DiscoveryNamespaceTests.unavailable == nil,
            "needs root and `ip netns` (see DiscoveryNamespaceTests' printed reason)"))
    func theLANQuickStartRunsAsWritten() async throws {
        let lines = try Self.quickStart()
        #expect(lines.count >= 20, "the quick start has its commands: \(lines.map(\.args))")
        // The example IDs are the ones the `shoal id` lines' comments name.
        let examples = lines.filter { $0.args.first == "id" }.compactMap {
            $0.comment.split(separator: " ").last.map(String.init)
        }
        try #require(
            examples.count == 2, "two `shoal id` lines with an example ID: \(lines.filter { $0.args.first == "id" })")

        let ip = try #require(DiscoveryNamespaceTests.ipTool)
        let lan = Lan(ip: ip, nodes: 2)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-readme-\(lan.tag)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let photo = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) })
        try photo.write(to: URL(fileURLWithPath: root + "/receipt.jpg"))
        let dirs = ["~/shoal-a": root + "/a", "~/shoal-b": root + "/b"]
        var ids = [String: String]()

        try await Shoal.withDaemons { daemons in
            var watch: Shoal.Daemon? = nil
            for (n, line) in lines.enumerated() {
                var args = line.args.map { dirs[$0] ?? ids[$0] ?? $0 }
                args = args.map { $0 == "photo=@receipt.jpg" ? "photo=@\(root)/receipt.jpg" : $0 }
                if let o = args.firstIndex(of: "-o"), o + 1 < args.count { args[o + 1] = root + "/received.jpg" }
                let machine = line.args.contains("~/shoal-a") ? 0 : 1
                let shown = "`shoal \(line.args.joined(separator: " "))` (line \(n + 1))"
                switch args.first {
                case "serve" where line.background:
                    let d = try daemons.start(
                        Array(args.dropFirst()), wrapper: [ip, "netns", "exec", lan.namespace(machine)])
                    #expect(
                        await Shoal.eventually(30) { d.log.contains("local discovery on") },
                        "\(shown) did not start: \(d.log)")
                case "watch":
                    // It prints changes until stopped: it runs on while the next lines do.
                    watch = try daemons.start(Array(args.dropFirst()), command: "watch")
                case "id":
                    let r = try await Shoal.run(args)
                    #expect(r.status == 0, "\(shown): \(r.error)")
                    ids[examples[machine]] = r.output.trimmingCharacters(in: .whitespacesAndNewlines).split(
                        separator: "\n"
                    ).last.map(String.init)
                case "get", "query", "asset":
                    // "arrives within seconds": replication and the asset fetch take a moment.
                    var last = Shoal.Result(status: -1, output: "", error: "")
                    let ok = try await Shoal.eventually(60) {
                        last = try await Shoal.run(args)
                        return last.status == 0 && (args.first != "query" || last.output.contains("groceries"))
                    }
                    #expect(ok, "\(shown) exited \(last.status): \(last.error) \(last.output)")
                default:
                    let r = try await Shoal.run(args)
                    #expect(r.status == 0, "\(shown) exited \(r.status): \(r.error)")
                }
            }
            #expect(
                try Data(contentsOf: URL(fileURLWithPath: root + "/received.jpg")) == photo, "the asset arrived whole")
            let watched = watch?.log ?? ""
            #expect(watched.contains("groceries"), "`shoal watch` printed the change that arrived from A: \(watched)")
        }
    }
}
