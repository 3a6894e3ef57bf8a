// CommandLineTests: the built `shoal` binary end to end — two daemons on 127.0.0.1, records, feeds, inspect.

import Foundation
import ShoalTestSupport
import ShoalWire
import Testing

@Suite(.serialized) struct CommandLineTests {
    static let root = FileManager.default.temporaryDirectory.appendingPathComponent(
        "shoal-cli-\(UInt32.random(in: 0 ... .max))"
    ).path

    @Test func twoDaemonsReplicateAndCommandsWork() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let a = Self.root + "/a", b = Self.root + "/b"
        defer { try? FileManager.default.removeItem(atPath: Self.root) }
        #expect(try await Shoal.run(["init", "--data", a]).status == 0)
        #expect(try await Shoal.run(["init", "--data", b]).status == 0)
        #expect(try await Shoal.run(["init", "--data", a]).status == 6, "a data directory is one identity")
        let idA = try await Shoal.deviceID(a), idB = try await Shoal.deviceID(b)
        // B trusts A before it starts (no daemon: the command writes B's store).
        #expect(try await Shoal.run(["peer", "add", idA, "--name", "a", "--data", b]).status == 0)
        #expect(try await Shoal.run(["peer", "add", "NOT-A-DEVICE-ID", "--data", b]).status == 3)
        #expect(try await Shoal.run(["peer", "add", idB, "--data", b]).status == 3, "a device does not trust itself")

        try await Shoal.withDaemons { daemons in
            let da = try daemons.start(["--data", a, "--listen", "127.0.0.1:0"])
            let portA = try #require(await da.port(), "daemon A did not start: \(da.log)")
            let db = try daemons.start(["--data", b, "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(portA)"])
            _ = try #require(await db.port(), "daemon B did not start: \(db.log)")

            // Two-writer protection: a second daemon on A's directory is refused.
            let second = try await Shoal.run(["serve", "--data", a, "--listen", "127.0.0.1:0"])
            #expect(second.status == 6 && second.error.contains("only one daemon"), "\(second.error)")

            // A does not trust B yet: B's connections are refused after TLS, and B is pending on A.
            #expect(
                try await Shoal.eventually {
                    let list = try await Shoal.run(["peer", "list", "--json", "--data", a]).output
                    let object = try JSONSerialization.jsonObject(with: Data(list.utf8)) as? [String: Any]
                    return ((object?["pending"] as? [[String: Any]]) ?? []).contains { $0["device"] as? String == idB }
                }, "B is listed as pending on A")
            // Trusted through A's running daemon, without a restart.
            let added = try await Shoal.run(["peer", "add", idB, "--name", "b", "--data", a])
            #expect(added.status == 0 && added.output.contains("trusted"), "\(added.output)\(added.error)")
            let listed = try await Shoal.run(["peer", "list", "--data", a]).output
            #expect(listed.contains(idB) && listed.contains("trusted") && !listed.contains("pending"), "\(listed)")

            // Writes on A (through its daemon's control socket) arrive on B.
            #expect(try await Shoal.run(["zone", "create", "notes", "--data", a]).status == 0)
            // B learns of the zone only once A shares it with B.
            #expect(
                try await Shoal.run(["zone", "share", "notes", idB, "--data", a]).status == 2, "a role must be given")
            let shared = try await Shoal.run(["zone", "share", "notes", idB, "--read-write", "--data", a])
            #expect(shared.status == 0 && shared.output.contains("read-write"), "\(shared.output)\(shared.error)")
            let members = try await Shoal.run(["zone", "members", "notes", "--data", a]).output
            #expect(members.contains(idA) && members.contains("owner") && members.contains(idB), "\(members)")
            let put = try await Shoal.run([
                "put", "notes", "groceries", "--type", "Note", "title=Milk and eggs", "count:=2",
                "due:=2026-11-22T10:00:00Z", "tags:=[home,urgent]", "--data", a
            ])
            #expect(put.status == 0, "\(put.error)")
            #expect(
                try await Shoal.eventually {
                    try await Shoal.run(["get", "notes", "groceries", "--data", b]).output.contains(
                        "title = Milk and eggs")
                })
            // Each side's part in the zone.
            #expect(try await Shoal.run(["zone", "list", "--data", a]).output.contains("owner"))
            let onB = try await Shoal.run(["zone", "list", "--json", "--data", b]).output
            #expect(onB.contains("\"role\" : \"read-write\"") && onB.contains(idA), "\(onB)")
            let json = try await Shoal.run(["get", "notes", "groceries", "--json", "--data", b])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            let fields = try #require(object["fields"] as? [String: Any])
            #expect(fields["count"] as? Int == 2 && (fields["tags"] as? [String]) == ["home", "urgent"])

            // Query, changes with a token.
            _ = try await Shoal.run(["put", "notes", "n2", "--type", "Note", "title=Other", "count:=7", "--data", a])
            #expect(
                try await Shoal.eventually {
                    try await Shoal.run(["query", "notes", "--type", "Note", "--where", "count > 5", "--data", b])
                        .output.contains("n2")
                })
            let changes = try await Shoal.run(["changes", "notes", "--json", "--data", b])
            let feed = try #require(try JSONSerialization.jsonObject(with: Data(changes.output.utf8)) as? [String: Any])
            let token = try #require(feed["token"] as? String)
            _ = try await Shoal.run(["put", "notes", "n3", "--type", "Note", "title=Third", "--data", a])
            #expect(
                try await Shoal.eventually {
                    let since = try await Shoal.run(["changes", "notes", "--since", token, "--data", b]).output
                    return since.contains("changed Note n3") && !since.contains("groceries")
                })

            // watch on B receives a change made on A.
            let watcher = try Shoal.Daemon.watch(["watch", "notes", "--count", "1", "--data", b])
            try await Task.sleep(for: .milliseconds(500))
            _ = try await Shoal.run(["put", "notes", "groceries", "title=Milk, eggs, bread", "--data", a])
            let watched = try await watcher.wait(seconds: 90)
            #expect(watched.contains("changed Note groceries") && watched.contains("Milk, eggs, bread"), "\(watched)")

            // Digests agree; status lists the zone.
            #expect(
                try await Shoal.eventually {
                    try await Shoal.run(["digest", "notes", "--data", a]).output
                        == Shoal.run(["digest", "notes", "--data", b]).output
                })
            #expect(try await Shoal.run(["status", "--data", b]).output.contains("notes"))
            #expect(
                try await Shoal.eventually {
                    try await Shoal.run(["status", "--data", b]).output.contains("caught up")
                }, "status shows where replication of notes stands")
            #expect(try await Shoal.run(["get", "notes", "missing", "--data", b]).status == 4)
            #expect(
                try await Shoal.run(["put", "notes", "bad", "--type", "Note", "n:=notanumber", "--data", b]).status == 3
            )

            // peer remove on A's running daemon: B's connection closes at once and stays refused.
            #expect(try await Shoal.run(["peer", "remove", idB, "--data", a]).status == 0)
            #expect(
                try await Shoal.run(["peer", "remove", idA, "--data", a]).status == 4,
                "neither trusted nor pending: nothing to remove")
            _ = try await Shoal.run(["put", "notes", "after-remove", "--type", "Note", "title=Not for B", "--data", a])
            try await Task.sleep(for: .seconds(1))
            #expect(
                try await Shoal.run(["get", "notes", "after-remove", "--data", b]).status == 4,
                "a change reached a removed device")
        }
    }

    /// `put field=@file` on A stores the file as an asset; `asset get` on B fetches it over TCP,
    /// byte for byte; a missing file and a field that is not an asset are clear errors.
    @Test func assetsTravelBetweenDaemons() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let root = Self.root + "-assets"
        let a = root + "/a", b = root + "/b"
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(try await Shoal.run(["init", "--data", a]).status == 0)
        #expect(try await Shoal.run(["init", "--data", b]).status == 0)
        try await Shoal.pair([a, b])
        try await Shoal.withDaemons { daemons in
            let da = try daemons.start(["--data", a, "--listen", "127.0.0.1:0"])
            let portA = try #require(await da.port(), "daemon A did not start: \(da.log)")
            let badRate = try await Shoal.run(["serve", "--data", b, "--asset-receive-rate", "fast"])
            #expect(badRate.status == 2 && badRate.error.contains("--asset-receive-rate"), "\(badRate.error)")
            // B paces what it fetches (700 KB at 4 MB/s: about a sixth of a second).
            let db = try daemons.start([
                "--data", b, "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(portA)", "--asset-receive-rate", "4MB/s"
            ])
            _ = try #require(await db.port(), "daemon B did not start: \(db.log)")

            // 700 KB of varied bytes: about ten content-defined chunks.
            var rng = UInt64(0x5EED)
            let bytes = (0..<700_000).map { _ -> UInt8 in
                rng = rng &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: rng >> 33)
            }
            let file = root + "/photo.bin"
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            #expect(try await Shoal.run(["zone", "create", "album", "--data", a]).status == 0)
            #expect(
                try await Shoal.run(["zone", "share", "album", try await Shoal.deviceID(b), "--read-only", "--data", a])
                    .status == 0)
            let put = try await Shoal.run([
                "put", "album", "p1", "--type", "Photo", "title=Lake", "image=@\(file)", "--data", a
            ])
            #expect(put.status == 0, "\(put.error)")
            #expect(
                try await Shoal.eventually {
                    try await Shoal.run(["get", "album", "p1", "--data", b]).output.contains("asset")
                })
            let out = root + "/copy.bin"
            let got = try await Shoal.run(["asset", "get", "album", "p1", "image", "-o", out, "--data", b])
            #expect(got.status == 0, "\(got.error)")
            #expect((try? Data(contentsOf: URL(fileURLWithPath: out))) == Data(bytes), "the fetched asset differs")
            // Its progress, as lines (not a terminal): from 0 % to the whole asset.
            #expect(got.error.contains("[------------------------]   0%  0.0 of 0.7 MB"), "\(got.error)")
            #expect(got.error.contains("[########################] 100%  0.7 of 0.7 MB"), "\(got.error)")
            // B's status reports the fetch and its cap.
            let status = try await Shoal.run(["status", "--json", "--data", b])
            let report = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
            let assets = report?["assets"] as? [String: Any]
            #expect(assets?["fetched"] as? Int == 1 && assets?["receiveRate"] as? Int == 4_000_000, "\(status.output)")
            #expect((assets?["chunksReceived"] as? Int ?? 0) > 1, "\(status.output)")

            let missing = try await Shoal.run([
                "put", "album", "p2", "--type", "Photo", "image=@\(root)/nope.jpg", "--data", a
            ])
            #expect(missing.status == 3 && missing.error.contains("not a readable file"), "\(missing.error)")
            let notAsset = try await Shoal.run(["asset", "get", "album", "p1", "title", "-o", out, "--data", b])
            #expect(
                notAsset.status == 4 && notAsset.error.contains("not an asset"),
                "[\(notAsset.error)] [\(notAsset.output)]")
        }
    }

    @Test func inspectDecodesVectorsAndRejectsGarbage() async throws {
        try #require(Shoal.binary != nil)
        let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Spec/vectors/frames.json")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: vectors)) as? [[String: Any]])
        let v = try #require(list.first { $0["name"] as? String == "batch-dictionary" })
        let hex = try #require(v["hex"] as? String)
        var bytes = [UInt8]()
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2); bytes.append(UInt8(hex[i..<j], radix: 16) ?? 0); i = j
        }
        let ok = try await Shoal.run(["inspect", "-"], input: bytes)
        #expect(
            ok.status == 0 && ok.output.contains("type: changes") && ok.output.contains("dictionary"),
            "\(ok.output)\(ok.error)")
        // The payload is a changes batch: decoded and shown, records and all.
        #expect(
            ok.output.contains("batch: 1") && ok.output.contains("records:") && !ok.output.contains("payload_error"),
            "\(ok.output)")
        // A payload that is not its type's message is reported, not fatal.
        let wrongPayload = FrameEncoder(options: .init(mode: .none))
        let bare = try wrongPayload.encode(Frame(type: .changes, payload: Array("not a changes message".utf8)))
        let reported = try await Shoal.run(["inspect", "-"], input: bare)
        #expect(
            reported.status == 0 && reported.output.contains("payload_error"), "\(reported.output)\(reported.error)")
        let js = try await Shoal.run(["inspect", "-", "--json"], input: bytes)
        #expect((try? JSONSerialization.jsonObject(with: Data(js.output.utf8))) != nil)
        let garbage = try await Shoal.run(["inspect", "-"], input: Array("definitely not shoal".utf8))
        #expect(garbage.status == 3 && garbage.error.contains("at byte"), "\(garbage.error)")
        let truncated = try await Shoal.run(["inspect", "-"], input: Array(bytes.prefix(30)))
        #expect(truncated.status == 3 && truncated.error.contains("incomplete"), "\(truncated.error)")
    }

    /// `inspect --field` reads one field through RecordView: the value, a missing field, a non-record.
    @Test func inspectFieldReadsOneFieldInPlace() async throws {
        try #require(Shoal.binary != nil)
        var record = Record(recordType: "Note", id: Record.ID(name: "n1", zone: RecordZone.ID(name: "notes")))
        record["title"] = .string("Milk and eggs, and a long title")
        record["count"] = .int64(2)
        let bytes = record.encoded()
        let title = try await Shoal.run(["inspect", "-", "--field", "title"], input: bytes)
        #expect(
            title.status == 0
                && title.output.trimmingCharacters(in: .whitespacesAndNewlines) == "Milk and eggs, and a long title",
            "\(title.output)\(title.error)")
        let count = try await Shoal.run(["inspect", "-", "--field", "count", "--json"], input: bytes)
        #expect(
            count.status == 0 && count.output.trimmingCharacters(in: .whitespacesAndNewlines) == "2",
            "\(count.output)\(count.error)")
        let missing = try await Shoal.run(["inspect", "-", "--field", "nope"], input: bytes)
        #expect(missing.status == 4 && missing.error.contains("no field nope"), "\(missing.error)")
        let damaged = try await Shoal.run(["inspect", "-", "--field", "title"], input: Array(bytes.dropLast()))
        #expect(damaged.status == 3 && damaged.error.contains("truncated at byte"), "\(damaged.error)")
    }
}

extension Shoal.Daemon {
    /// Starts a long-running command (not serve) whose output is collected.
    static func watch(_ args: [String]) throws -> Watcher { try Watcher(args) }
}

/// A running `shoal watch`.
final class Watcher: @unchecked Sendable {
    let process = ChildProcess()
    let pipe = Shoal.pipe()
    init(_ args: [String]) throws {
        guard let binary = Shoal.binary else { throw CocoaError(.fileNoSuchFile) }
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = args
        process.standardOutput = pipe
        process.standardError = pipe
        try Shoal.start(process)
    }

    /// Waits for it to exit (bounded), stopping it on timeout, and returns its output.
    func wait(seconds: Double) async throws -> String {
        if !(await Shoal.waitForExit(process, seconds: seconds)) { process.terminate() }
        let (process, pipe) = (self.process, self.pipe)
        return try await Shoal.onOwnThread {
            process.waitUntilExit()
            return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
    }
}

@Suite struct DemoTests {
    /// The README's main command: three nodes converge after a partition, narrated.
    @Test func demoConverges() async throws {
        try #require(Shoal.binary != nil)
        let r = try await Shoal.run(["demo"])
        #expect(r.status == 0, "\(r.output)\(r.error)")
        #expect(r.output.contains("converged in") && r.output.contains("all three digests are"))
        #expect(r.output.contains("note-2 is alive") && r.output.contains("note-1 tags = [weekend]"))
    }
}
