// HTTPAPITests: a running daemon's HTTP API over real loopback HTTP — the key, the limits, every endpoint, the metrics.

import Foundation
import ShoalTestSupport
import Testing

@Suite(.serialized) struct HTTPAPITests {
    static let root = FileManager.default.temporaryDirectory.appendingPathComponent(
        "shoal-http-\(UInt32.random(in: 0 ... .max))"
    ).path

    /// Percent-encodes a path segment (device IDs and zone names are safe, `@` is not).
    static func segment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_."))) ?? s
    }

    /// The attacks first: no key, a wrong key, a body over the limit (declared and streamed),
    /// a write from another origin; then what is public.
    @Test func theKeyAndTheLimitsHold() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let dir = Self.root + "-auth"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        let keyFile = dir + "/http-api.key"
        let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the key file is the owner's alone")
        let key = try await Shoal.run(["http-key", "--data", dir]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(key.count >= 40)
        let id = try await Shoal.deviceID(dir)

        try await Shoal.withDaemons { daemons in
            let d = try daemons.start(["--data", dir, "--listen", "127.0.0.1:0"])
            let port = try #require(await d.httpPort(), "no HTTP port in the log: \(d.log)")

            let missing = try await LoopbackHTTP.send(port, "GET", "/api/v1/device")
            #expect(missing.status == 401 && missing.errorCode == "notAuthenticated", "\(missing)")
            let wrong = try await LoopbackHTTP.send(port, "GET", "/api/v1/device", key: String(key.dropLast()) + "x")
            #expect(
                wrong.status == 401 && wrong.text == missing.text,
                "a wrong key learns nothing a missing one does not: \(wrong)")
            #expect(!missing.text.contains(id) && !missing.text.contains(key))
            let emptyBearer = try await LoopbackHTTP.send(
                port, "GET", "/api/v1/zones", headers: [("Authorization", "Bearer ")])
            #expect(emptyBearer.status == 401)
            let bearer = try await LoopbackHTTP.send(
                port, "GET", "/api/v1/device", headers: [("Authorization", "Bearer \(key)")])
            #expect(bearer.status == 200 && bearer.json?["device"] as? String == id, "\(bearer)")

            // A body over the limit (1 MiB): refused whether its length is declared or not.
            let big = [UInt8](repeating: UInt8(ascii: "a"), count: 2 << 20)
            let declared = try await LoopbackHTTP.send(
                port, "POST", "/api/v1/zones", key: key, headers: [("Content-Type", "application/json")], body: big)
            #expect(
                declared.status == 413 && declared.errorCode == "payloadTooLarge" && declared.text.contains("1048576"),
                "\(declared)")
            let streamed = try await LoopbackHTTP.send(
                port, "POST", "/api/v1/zones", key: key, headers: [("Content-Type", "application/json")],
                body: big, chunked: true)
            #expect(streamed.status == 413 && streamed.errorCode == "payloadTooLarge", "\(streamed)")
            let unauthenticatedBig = try await LoopbackHTTP.send(port, "POST", "/api/v1/zones", body: big)
            #expect(unauthenticatedBig.status == 401, "the key is checked before the body is read")

            // A page on another origin cannot write, with or without the key.
            let zone = Array(#"{"zone":"x"}"#.utf8)
            let foreign = try await LoopbackHTTP.send(
                port, "POST", "/api/v1/zones",
                headers: [("Origin", "http://evil.example"), ("Content-Type", "text/plain")], body: zone)
            #expect(foreign.status == 401, "\(foreign)")
            let foreignKeyed = try await LoopbackHTTP.send(
                port, "POST", "/api/v1/zones", key: key, headers: [("Origin", "http://evil.example")], body: zone)
            #expect(foreignKeyed.status == 403 && foreignKeyed.errorCode == "crossOrigin", "\(foreignKeyed)")
            let sameOrigin = try await LoopbackHTTP.send(
                port, "POST", "/api/v1/zones", key: key, headers: [("Origin", "http://127.0.0.1:\(port)")], body: zone)
            #expect(sameOrigin.status == 201, "the console's own origin writes: \(sameOrigin)")

            // Bad input is a 400 naming it; unknown paths and methods are JSON too.
            let notJSON = try await LoopbackHTTP.send(port, "POST", "/api/v1/zones", key: key, body: Array("{".utf8))
            #expect(notJSON.status == 400 && notJSON.errorCode == "invalidArguments", "\(notJSON)")
            #expect(try await LoopbackHTTP.send(port, "GET", "/api/v1/nothing", key: key).status == 404)
            let method = try await LoopbackHTTP.send(port, "PATCH", "/api/v1/zones", key: key)
            #expect(method.status == 405 && method.errorCode == "methodNotAllowed", "\(method)")
            let badLimit = try await LoopbackHTTP.send(port, "GET", "/api/v1/zones/x/records?type=T&limit=0", key: key)
            #expect(badLimit.status == 400 && badLimit.text.contains("limit"), "\(badLimit)")

            // Public: the OpenAPI document, the metrics, the console page (which holds no data).
            let openapi = try await LoopbackHTTP.send(port, "GET", "/openapi.json")
            #expect(
                openapi.status == 200 && (openapi.json?["openapi"] as? String)?.hasPrefix("3.") == true,
                "\(openapi.status)")
            let page = try await LoopbackHTTP.send(port, "GET", "/")
            #expect(page.status == 200 && page.text.contains("<html") && !page.text.contains(id))

            // Another daemon asking for the same HTTP port fails, saying what to do.
            let other = dir + "-other"
            defer { try? FileManager.default.removeItem(atPath: other) }
            #expect(try await Shoal.run(["init", "--data", other]).status == 0)
            let taken = try await Shoal.run([
                "serve", "--data", other, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:\(port)"
            ])
            #expect(taken.status == 1 && taken.error.contains("--no-http"), "\(taken.status) \(taken.error)")
        }

        // Beyond loopback without TLS: refused, and the message says why and what to do.
        let open = try await Shoal.run(["serve", "--data", dir, "--listen", "127.0.0.1:0", "--http", "0.0.0.0:0"])
        #expect(open.status != 0 && open.error.contains("--http-allow-plaintext"), "\(open.error)")
    }

    /// Every endpoint, on two daemons that replicate: devices (pending, accept, reject, remove),
    /// zones and sharing, records (put with policies, get, delete, query pages), the changes
    /// feed (a long poll answered by `shoal put`), assets with ranges, status, conflicts,
    /// events and the metrics after a sync.
    @Test func everyEndpointOnTwoDaemons() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let a = Self.root + "/a", b = Self.root + "/b", c = Self.root + "/c"
        defer { try? FileManager.default.removeItem(atPath: Self.root) }
        for d in [a, b, c] { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        let idA = try await Shoal.deviceID(a), idB = try await Shoal.deviceID(b), idC = try await Shoal.deviceID(c)
        #expect(try await Shoal.run(["peer", "add", idA, "--name", "a", "--data", b]).status == 0)
        #expect(try await Shoal.run(["peer", "add", idA, "--name", "a", "--data", c]).status == 0)
        let key = try await Shoal.run(["http-key", "--data", a]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let keyB = try await Shoal.run(["http-key", "--data", b]).output.trimmingCharacters(in: .whitespacesAndNewlines)

        try await Shoal.withDaemons { daemons in
            let da = try daemons.start(["--data", a, "--listen", "127.0.0.1:0"])
            let portA = try #require(await da.port(), "daemon A did not start: \(da.log)")
            let http = try #require(await da.httpPort(), "no HTTP port: \(da.log)")
            let db = try daemons.start(["--data", b, "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(portA)"])
            let httpB = try #require(await db.httpPort(), "no HTTP port: \(db.log)")
            _ = try daemons.start(["--data", c, "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(portA)"])
            func get(_ path: String) async throws -> LoopbackHTTP.Reply {
                try await LoopbackHTTP.send(http, "GET", path, key: key)
            }
            func send(_ method: String, _ path: String, _ object: Any) async throws -> LoopbackHTTP.Reply {
                try await LoopbackHTTP.json(http, method, path, key: key, object)
            }

            // This device; B and C pending; accept B, reject C.
            #expect(try await get("/api/v1/device").json?["device"] as? String == idA)
            #expect(
                try await Shoal.eventually {
                    let pending = (try await get("/api/v1/devices").json?["pending"] as? [[String: Any]]) ?? []
                    return Set(pending.compactMap { $0["device"] as? String }).isSuperset(of: [idB, idC])
                }, "B and C are pending on A")
            let accepted = try await send("POST", "/api/v1/devices", ["device": idB, "name": "b"])
            #expect(accepted.status == 201 && accepted.json?["name"] as? String == "b", "\(accepted)")
            #expect(try await send("POST", "/api/v1/devices", ["device": "NOT-A-DEVICE"]).status == 400)
            #expect(
                try await LoopbackHTTP.send(http, "DELETE", "/api/v1/devices/\(idC)", key: key).status == 200,
                "C rejected")
            #expect(
                try await Shoal.eventually {
                    let trusted = (try await get("/api/v1/devices").json?["trusted"] as? [[String: Any]]) ?? []
                    return trusted.contains { $0["device"] as? String == idB && $0["connected"] as? Bool == true }
                }, "B is trusted and connected")

            // Zones and sharing.
            #expect(try await send("POST", "/api/v1/zones", ["zone": "notes"]).status == 201)
            let share = try await send("PUT", "/api/v1/zones/notes/members/\(idB)", ["role": "readWrite"])
            #expect(share.status == 200 && share.json?["role"] as? String == "readWrite", "\(share)")
            #expect(try await send("PUT", "/api/v1/zones/notes/members/\(idB)", ["role": "admin"]).status == 400)
            let members = try await get("/api/v1/zones/notes/members").json
            #expect(
                members?["owner"] as? String == idA
                    && ((members?["members"] as? [[String: Any]]) ?? []).contains { $0["device"] as? String == idB })
            let zones = (try await get("/api/v1/zones").json?["zones"] as? [[String: Any]]) ?? []
            #expect(zones.contains { $0["zone"] as? String == "notes" && $0["role"] as? String == "owner" }, "\(zones)")
            #expect(try await get("/api/v1/zones/notes").json?["role"] as? String == "owner")
            #expect(try await get("/api/v1/zones/nowhere").errorCode == "zoneNotFound")

            // Records: put, get, the save policies, delete.
            let start = try #require(try await get("/api/v1/zones/notes/changes").json?["token"] as? String)
            let put = try await send(
                "PUT", "/api/v1/zones/notes/records/groceries",
                [
                    "type": "Note",
                    "fields": [
                        "title": "Milk", "count": 2, "ratio": 0.5, "done": false, "tags": ["home", "urgent"],
                        "due": ["date": "2026-11-22T10:00:00Z"], "raw": ["bytes": "00ff"]
                    ]
                ])
            #expect(put.status == 200, "\(put)")
            let tag = try #require(put.json?["changeTag"] as? String)
            let got = try await get("/api/v1/zones/notes/records/groceries")
            let fields = got.json?["fields"] as? [String: Any]
            #expect(
                fields?["count"] as? Int == 2 && fields?["title"] as? String == "Milk"
                    && (fields?["tags"] as? [String]) == ["home", "urgent"], "\(got)")
            #expect(
                fields?["ratio"] as? Double == 0.5 && (fields?["raw"] as? [String: Any])?["bytes"] as? String == "00ff",
                "\(got)")
            let stale = try await send(
                "PUT", "/api/v1/zones/notes/records/groceries",
                ["fields": ["count": 3], "policy": "ifUnchanged", "changeTag": "nottherighttag"])
            #expect(stale.status == 409 && stale.errorCode == "serverRecordChanged", "\(stale)")
            let fresh = try await send(
                "PUT", "/api/v1/zones/notes/records/groceries",
                ["fields": ["count": 3], "policy": "ifUnchanged", "changeTag": tag])
            #expect(fresh.status == 200 && (fresh.json?["fields"] as? [String: Any])?["count"] as? Int == 3, "\(fresh)")
            let replaced = try await send(
                "PUT", "/api/v1/zones/notes/records/groceries", ["fields": ["title": "Bread"], "policy": "allKeys"])
            #expect(
                ((replaced.json?["fields"] as? [String: Any]) ?? [:]).keys.sorted() == ["title"],
                "allKeys keeps only the fields given: \(replaced)")
            #expect(
                try await send("PUT", "/api/v1/zones/notes/records/new", ["fields": ["x": 1]]).status == 400,
                "a new record needs its type")
            #expect(
                try await send(
                    "PUT", "/api/v1/zones/notes/records/bad", ["type": "Note", "fields": ["mixed": [1, "a"]]]
                ).status == 400)
            #expect(
                try await LoopbackHTTP.send(http, "DELETE", "/api/v1/zones/notes/records/groceries", key: key).status
                    == 200)
            #expect(try await get("/api/v1/zones/notes/records/groceries").errorCode == "unknownItem")

            // Query pages with a cursor.
            for i in 0..<5 {
                #expect(
                    try await send("PUT", "/api/v1/zones/notes/records/n\(i)", ["type": "Note", "fields": ["i": i]])
                        .status == 200)
            }
            var names = [String](), cursor: String? = nil, pages = 0
            repeat {
                let path =
                    cursor.map { "/api/v1/zones/notes/records?limit=2&cursor=\($0)" }
                    ?? "/api/v1/zones/notes/records?type=Note&sort=i&limit=2"
                let page = try await get(path)
                #expect(page.status == 200, "\(page)")
                names += ((page.json?["records"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
                cursor = page.json?["cursor"] as? String
                pages += 1
            } while cursor != nil && pages < 10
            #expect(names == ["n0", "n1", "n2", "n3", "n4"] && pages == 3, "\(names) in \(pages) pages")
            #expect(try await get("/api/v1/zones/notes/records?cursor=notacursor").status == 400)

            // The changes feed: since a token; then a long poll that a `shoal put` answers.
            let since = try await get("/api/v1/zones/notes/changes?since=\(start)")
            let changed = ((since.json?["changed"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
            #expect(
                Set(changed).isSuperset(of: ["n0", "n4"])
                    && ((since.json?["deleted"] as? [[String: Any]]) ?? []).contains {
                        $0["name"] as? String == "groceries"
                    }, "\(since)")
            let now = try #require(since.json?["token"] as? String)
            async let polled = LoopbackHTTP.send(
                http, "GET", "/api/v1/zones/notes/changes?since=\(now)&wait=60", key: key)
            try await Task.sleep(for: .milliseconds(500))
            #expect(
                try await Shoal.run(["put", "notes", "from-cli", "--type", "Note", "title=Typed", "--data", a]).status
                    == 0)
            let answer = try await polled
            #expect(
                ((answer.json?["changed"] as? [[String: Any]]) ?? []).contains { $0["name"] as? String == "from-cli" },
                "the long poll delivers the CLI's record: \(answer)")
            #expect(try await get("/api/v1/zones/notes/changes?since=garbage").status == 400)

            // Assets: the whole file, a range, a range past the end.
            let file = Self.root + "/photo.bin"
            let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 >> 2) }
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            #expect(
                try await Shoal.run(["put", "notes", "photo", "--type", "Photo", "image=@\(file)", "--data", a]).status
                    == 0)
            let whole = try await get("/api/v1/zones/notes/records/photo/assets/image")
            #expect(whole.status == 200 && whole.body == bytes, "\(whole.status) \(whole.body.count) bytes")
            let part = try await LoopbackHTTP.send(
                http, "GET", "/api/v1/zones/notes/records/photo/assets/image", key: key,
                headers: [("Range", "bytes=100000-100009")])
            #expect(
                part.status == 206 && part.body == Array(bytes[100_000..<100_010])
                    && part.headers["content-range"] == "bytes 100000-100009/200000", "\(part.status) \(part.headers)")
            let tail = try await LoopbackHTTP.send(
                http, "GET", "/api/v1/zones/notes/records/photo/assets/image", key: key,
                headers: [("Range", "bytes=-5")])
            #expect(tail.status == 206 && tail.body == Array(bytes.suffix(5)))
            let past = try await LoopbackHTTP.send(
                http, "GET", "/api/v1/zones/notes/records/photo/assets/image", key: key,
                headers: [("Range", "bytes=300000-")])
            #expect(past.status == 416 && past.headers["content-range"] == "bytes */200000", "\(past)")
            #expect(try await get("/api/v1/zones/notes/records/n0/assets/i").status == 404)

            // B received the records: its status and metrics say so, the latency histogram too.
            #expect(
                try await Shoal.eventually {
                    let status = try await LoopbackHTTP.send(httpB, "GET", "/api/v1/status", key: keyB).json
                    return ((status?["received"] as? [String: Any])?["records"] as? Int ?? 0) >= 6
                }, "B received the records")
            var scraped = ""
            #expect(
                try await Shoal.eventually(30) {
                    scraped = try await LoopbackHTTP.send(httpB, "GET", "/metrics").text
                    return Self.sample(scraped, "shoal_records_received_total") ?? 0 > 0
                        && Self.sample(scraped, "shoal_change_latency_seconds_count") ?? 0 > 0
                }, "\(scraped)")
            let metrics = try await LoopbackHTTP.send(httpB, "GET", "/metrics")
            #expect(metrics.headers["content-type"]?.hasPrefix("text/plain") == true)
            let problems = Self.prometheusProblems(metrics.text)
            #expect(problems.isEmpty, "not Prometheus text: \(problems)")
            #expect(
                metrics.text.contains("shoal_change_latency_seconds_bucket{le=")
                    && metrics.text.contains("shoal_refused_total{reason="))
            #expect(
                metrics.text.contains("shoal_peer_records_received_total{peer=")
                    && metrics.text.contains("shoal_peer_bytes_received_total{peer="),
                "B counts what each peer sent it")

            let status = try await get("/api/v1/status").json
            #expect(
                status?["device"] as? String == idA && (status?["zones"] as? [[String: Any]])?.isEmpty == false,
                "\(status ?? [:])")
            #expect(try await get("/api/v1/conflicts").json?["conflicts"] is [Any])
            let events = try await LoopbackHTTP.send(http, "GET", "/api/v1/events", key: key, timeout: 2)
            #expect(
                events.status == 200 && events.headers["content-type"] == "text/event-stream",
                "\(events.status) \(events.headers)")

            // Unshare, remove, delete.
            #expect(
                try await LoopbackHTTP.send(http, "DELETE", "/api/v1/zones/notes/members/\(idB)", key: key).json?[
                    "role"] as? String == "none")
            // B stops first: a B still running redials once it is no longer trusted, and A lists it
            // as pending, which the second DELETE would then forget (200, not 404).
            await db.stop()
            #expect(try await LoopbackHTTP.send(http, "DELETE", "/api/v1/devices/\(idB)", key: key).status == 200)
            #expect(try await LoopbackHTTP.send(http, "DELETE", "/api/v1/devices/\(idB)", key: key).status == 404)
            #expect(try await LoopbackHTTP.send(http, "DELETE", "/api/v1/zones/notes", key: key).status == 200)
            #expect(try await get("/api/v1/zones/notes").status == 404)
        }
    }

    /// `where` in a record query reads `shoal query --where`'s grammar: the matching records
    /// come back, page after page (the cursor carries the condition), and a condition that does
    /// not parse is a 400 whose JSON names it and points at the column.
    @Test func whereConditionsFilterQueries() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let dir = Self.root + "-where"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        let key = try await Shoal.run(["http-key", "--data", dir]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
        try await Shoal.withDaemons { daemons in
            let d = try daemons.start(["--data", dir, "--listen", "127.0.0.1:0", "--no-discovery"])
            let http = try #require(await d.httpPort(), "no HTTP port: \(d.log)")
            func get(_ path: String) async throws -> LoopbackHTTP.Reply {
                try await LoopbackHTTP.send(http, "GET", path, key: key)
            }
            func names(_ reply: LoopbackHTTP.Reply) -> [String] {
                ((reply.json?["records"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
            }
            #expect(
                try await LoopbackHTTP.json(http, "POST", "/api/v1/zones", key: key, ["zone": "notes"]).status == 201)
            for i in 0..<6 {
                let title = i % 2 == 0 ? "note \(i)" : "memo AND \(i)"
                let put = try await LoopbackHTTP.json(
                    http, "PUT", "/api/v1/zones/notes/records/r\(i)", key: key,
                    ["type": "Note", "fields": ["i": i, "title": title]])
                #expect(put.status == 200, "\(put)")
            }
            func query(_ condition: String, _ rest: String = "") async throws -> LoopbackHTTP.Reply {
                try await get("/api/v1/zones/notes/records?type=Note&sort=i&where=\(Self.segment(condition))\(rest)")
            }

            let matching = try await query("i >= 2 AND title BEGINSWITH 'note'")
            #expect(matching.status == 200 && names(matching) == ["r2", "r4"], "\(matching)")
            let quoted = try await query("title == 'memo AND 3' OR (i < 1 AND NOT title CONTAINS 'memo')")
            #expect(
                names(quoted) == ["r0", "r3"],
                "a quoted AND is part of the value; OR, NOT and parentheses hold: \(quoted)")

            // Pages of a condition: the cursor carries it, and may not be given with it.
            var seen = [String](), cursor: String? = nil, pages = 0
            repeat {
                let page: LoopbackHTTP.Reply
                if let cursor {
                    page = try await get("/api/v1/zones/notes/records?limit=2&cursor=\(cursor)")
                } else {
                    page = try await query("i != 0", "&limit=2")
                }
                #expect(page.status == 200, "\(page)")
                seen += names(page)
                cursor = page.json?["cursor"] as? String
                pages += 1
            } while cursor != nil && pages < 10
            #expect(seen == ["r1", "r2", "r3", "r4", "r5"], "\(seen) in \(pages) pages")
            let both = try await get("/api/v1/zones/notes/records?cursor=abc&where=\(Self.segment("i == 1"))")
            #expect(both.status == 400 && both.text.contains("where"), "\(both)")

            // A condition that does not parse: 400, naming it and the column, as the CLI does.
            let bad = try await query("title 'a == b'")
            let error = bad.json?["error"] as? [String: Any]
            let message = error?["message"] as? String ?? ""
            #expect(bad.status == 400 && bad.errorCode == "invalidArguments", "\(bad)")
            #expect(
                message.contains("where: no operator after field title") && message.contains("column 7"), "\(message)")
            #expect(error?["where"] as? String == "title 'a == b'" && error?["column"] as? Int == 7, "\(bad)")
            let unclosed = try await query("(i == 1 OR i == 2")
            #expect(unclosed.status == 400 && unclosed.text.contains("no ) for the ( at column 1"), "\(unclosed)")
            let deep = try await query(String(repeating: "NOT ", count: 20) + "i == 1")
            #expect(deep.status == 400 && deep.text.contains("12"), "nesting has a limit, named: \(deep)")
            let cli = try await Shoal.run([
                "query", "notes", "--type", "Note", "--where", "title 'a == b'", "--data", dir
            ])
            #expect(
                cli.status != 0 && cli.error.contains("no operator after field title")
                    && cli.error.contains("column 7"), "the CLI reads the same grammar: \(cli.error)")
        }
    }

    /// The metrics count the asset store's bytes and what garbage collection removed, from the
    /// same totals `shoal status` prints: an import raises the bytes; removing the field and
    /// `shoal gc` (run by the daemon) lowers them and moves the collection counters.
    @Test func metricsFollowAssetBytesAndGarbageCollection() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let dir = Self.root + "-gc"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        try await Shoal.withDaemons { daemons in
            let d = try daemons.start(["--data", dir, "--listen", "127.0.0.1:0", "--no-discovery"])
            let http = try #require(await d.httpPort(), "no HTTP port: \(d.log)")
            func scrape() async throws -> String {
                let text = try await LoopbackHTTP.send(http, "GET", "/metrics").text
                #expect(Self.prometheusProblems(text).isEmpty, "not Prometheus text: \(Self.prometheusProblems(text))")
                return text
            }
            func status() async throws -> [String: Any] {
                let out = try await Shoal.run(["status", "--json", "--data", dir]).output
                return try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
            }
            let before = try await scrape()
            let empty = try #require(Self.sample(before, "shoal_asset_bytes"), "\(before)")
            #expect(
                Self.sample(before, "shoal_asset_gc_runs_total") ?? 0 == 0
                    && Self.sample(before, "shoal_asset_chunks_collected_total") ?? 0 == 0)

            // An import of 300 KB of varied bytes (several chunks, stored uncompressed).
            var rng = UInt64(0x6C0)
            let bytes = (0..<300_000).map { _ -> UInt8 in
                rng = rng &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: rng >> 33)
            }
            let file = dir + "-photo.bin"
            defer { try? FileManager.default.removeItem(atPath: file) }
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            #expect(try await Shoal.run(["zone", "create", "album", "--data", dir]).status == 0)
            let put = try await Shoal.run(["put", "album", "p1", "--type", "Photo", "image=@\(file)", "--data", dir])
            #expect(put.status == 0, "\(put.error)")
            let imported = try await scrape()
            let stored = try #require(Self.sample(imported, "shoal_asset_bytes"))
            #expect(
                stored >= empty + 300_000 && Self.sample(imported, "shoal_asset_segment_bytes") ?? 0 >= stored,
                "\(imported)")
            let assets = try await status()["assets"] as? [String: Any]
            #expect(
                (assets?["bytes"] as? Int).map(Double.init) == stored,
                "shoal status reads the same bytes: \(assets ?? [:])")

            // Nothing references the asset once the field is removed: the collection takes it.
            #expect(try await Shoal.run(["put", "album", "p1", "image:=null", "--data", dir]).status == 0)
            let gc = try await Shoal.run(["gc", "--json", "--data", dir])
            let report = try JSONSerialization.jsonObject(with: Data(gc.output.utf8)) as? [String: Any]
            let removed = try #require(report?["chunksRemoved"] as? Int, "\(gc.output) \(gc.error)")
            #expect(removed > 0, "\(gc.output)")
            let collected = try await scrape()
            #expect(Self.sample(collected, "shoal_asset_gc_runs_total") == 1, "\(collected)")
            #expect(Self.sample(collected, "shoal_asset_chunks_collected_total") == Double(removed), "\(collected)")
            #expect(Self.sample(collected, "shoal_asset_bytes_collected_total") ?? 0 >= 300_000, "\(collected)")
            #expect(
                Self.sample(collected, "shoal_asset_bytes") ?? .infinity < stored,
                "the chunks' bytes are gone: \(collected)")
            #expect(
                Self.sample(collected, "shoal_asset_segments_compacted_total") != nil
                    && Self.sample(collected, "shoal_asset_segment_bytes_freed_total") != nil)
            let totals = try await status()["garbageCollected"] as? [String: Any]
            #expect(
                totals?["runs"] as? Int == 1 && totals?["chunks"] as? Int == removed,
                "shoal status reads the same totals: \(totals ?? [:])")
            let text = try await Shoal.run(["status", "--data", dir]).output
            #expect(text.contains("asset collections: 1, which removed") && text.contains("asset store:"), "\(text)")
        }
    }

    /// The value of the unlabelled sample `name` in Prometheus text.
    static func sample(_ text: String, _ name: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "")
        }
        return nil
    }

    /// Lines of `text` that are not Prometheus text format: `# HELP`/`# TYPE` comments or
    /// `name{labels} value` samples.
    static func prometheusProblems(_ text: String) -> [String] {
        let sample =
            #"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? (-?[0-9.]+([eE][-+]?[0-9]+)?|NaN|[+-]Inf)$"#
        let comment = #"^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]*( .*)?$"#
        return text.split(separator: "\n").map(String.init).filter { line in
            line.range(of: sample, options: .regularExpression) == nil
                && line.range(of: comment, options: .regularExpression) == nil
        }
    }
}
