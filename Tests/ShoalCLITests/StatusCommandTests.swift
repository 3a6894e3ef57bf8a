// StatusCommandTests: `shoal status` says how each trusted device was found — `peer add --address` or
// `--peer` — and when it was last seen, and what the node keeps for deletions: tombstones per zone, and deleted zones.

import Foundation
import Testing

@Suite(.serialized) struct StatusCommandTests {
    @Test func statusSaysHowEachTrustedDeviceWasFound() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-status-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = root + "/a", b = root + "/b"
        for d in [a, b] { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        let idA = try await Shoal.deviceID(a), idB = try await Shoal.deviceID(b)
        // A knows an address for B (nothing listens there); B trusts A without one.
        #expect(try await Shoal.run(["peer", "add", idB, "--address", "127.0.0.1:1", "--data", a]).status == 0)
        #expect(try await Shoal.run(["peer", "add", idA, "--data", b]).status == 0)
        #expect(try await Shoal.found(a, idB) == ["127.0.0.1:1 configured idle"], "without a daemon too")

        try await Shoal.withDaemons { daemons in
            let da = try daemons.start(["--data", a, "--listen", "127.0.0.1:0"])
            let portA = try #require(await da.port(), "daemon A did not start: \(da.log)")
            // B dials A because it was told to (`--peer`).
            let db = try daemons.start(["--data", b, "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(portA)"])
            _ = try #require(await db.port(), "daemon B did not start: \(db.log)")
            let viaPeer = try await Shoal.eventually(30) {
                try await Shoal.found(b, idA) == ["127.0.0.1:\(portA) peer connected"]
            }
            let onB = try await Shoal.found(b, idA)
            #expect(viaPeer, "B says it dials A because of --peer: \(onB)")
            #expect(try await Shoal.found(a, idB) == ["127.0.0.1:1 configured idle"])
            #expect(
                try await Shoal.trustedEntry(a, idB)?["connected"] as? Bool == true,
                "B's connection to A counts on A too, though A did not dial it")
            let text = try await Shoal.run(["status", "--data", a]).output
            #expect(text.contains("FOUND AT") && text.contains("127.0.0.1:1 (configured)"), "\(text)")
        }
    }

    /// Per trusted device, when it was last heard from: nothing before it connects; on an open
    /// connection its last frame, which keeps moving (with `--idle-timeout 3` each side pings
    /// every second and the other answers).
    @Test func statusSaysWhenEachTrustedDeviceWasLastSeen() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-status-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = root + "/a", b = root + "/b"
        for d in [a, b] { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        try await Shoal.pair([a, b])
        let idB = try await Shoal.deviceID(b)
        let never = try await Shoal.trustedEntry(a, idB)
        #expect(
            never?["lastSeen"] is NSNull && never?["lastSeenBy"] is NSNull, "not seen yet: \(String(describing: never))"
        )

        try await Shoal.withDaemons { daemons in
            let da = try daemons.start(["--data", a, "--listen", "127.0.0.1:0", "--idle-timeout", "3"])
            let portA = try #require(await da.port(), "daemon A did not start: \(da.log)")
            let db = try daemons.start([
                "--data", b, "--listen", "127.0.0.1:0", "--idle-timeout", "3", "--peer", "127.0.0.1:\(portA)"
            ])
            _ = try #require(await db.port(), "daemon B did not start: \(db.log)")
            func lastSeen() async throws -> (Date, String)? {
                let entry = try await Shoal.trustedEntry(a, idB)
                guard let text = entry?["lastSeen"] as? String, let by = entry?["lastSeenBy"] as? String else {
                    return nil
                }
                let f = ISO8601DateFormatter()
                f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                return f.date(from: text).map { ($0, by) }
            }
            let seen = try await Shoal.eventually(30) { try await lastSeen() != nil }
            let first = try await lastSeen()
            let entry = try await Shoal.trustedEntry(a, idB)
            #expect(seen && first?.1 == "frame", "A saw B on their connection: \(String(describing: entry))")
            let moved = try await Shoal.eventually(10) {
                guard let now = try await lastSeen(), let first else { return false }
                return now.0 > first.0.addingTimeInterval(0.5)
            }
            let later = try await lastSeen()
            #expect(
                moved,
                "B's last frame on A moves forward while they are connected: \(String(describing: first)), \(String(describing: later))"
            )
            let text = try await Shoal.run(["status", "--data", a]).output
            #expect(text.contains("LAST SEEN") && text.contains("s ago (frame)"), "\(text)")
            let listed = try await Shoal.trustedEntry(a, idB, in: .peerList)
            #expect(listed?["lastSeen"] is String, "`shoal peer list --json` too: \(String(describing: listed))")
        }
    }

    /// Per zone: live records, tombstones, the purge horizon and the peers tombstones are kept for.
    @Test func statusShowsWhatEachZoneKeepsForDeletions() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-status-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        #expect(try await Shoal.run(["zone", "create", "notes", "--data", dir]).status == 0)
        for n in ["a", "b", "c"] {
            #expect(try await Shoal.run(["put", "notes", n, "--type", "Note", "title=\(n)", "--data", dir]).status == 0)
        }
        #expect(try await Shoal.run(["delete", "notes", "b", "--data", dir]).status == 0)
        let json = try await Shoal.run(["status", "--json", "--data", dir])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any], "\(json.output)")
        let zone = try #require((object["zones"] as? [[String: Any]])?.first, "\(json.output)")
        #expect(zone["records"] as? Int == 2 && zone["tombstones"] as? Int == 1, "\(zone)")
        #expect(
            (zone["purgeHorizon"] as? [String: Any])?.isEmpty == true
                && (zone["heldBackBy"] as? [String: Any])?.isEmpty == true, "\(zone)")
        let text = try await Shoal.run(["status", "--data", dir]).output
        #expect(text.contains("TOMBSTONES") && text.contains("KEPT FOR"), "\(text)")
    }

    /// A deleted zone is kept, and announced, until its purge: status lists it with the peers it
    /// waits for (none here: no peer ever announced it) and counts the purged zones remembered.
    @Test func statusListsTheDeletedZonesKept() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-status-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        #expect(try await Shoal.run(["zone", "create", "notes", "--data", dir]).status == 0)
        #expect(try await Shoal.run(["zone", "delete", "notes", "--data", dir]).status == 0)
        let json = try await Shoal.run(["status", "--json", "--data", dir])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any], "\(json.output)")
        let deleted = try #require(object["deletedZones"] as? [[String: Any]], "\(json.output)")
        #expect(deleted.count == 1 && (deleted.first?["zone"] as? String)?.hasPrefix("notes") == true, "\(deleted)")
        #expect((deleted.first?["waitingFor"] as? [String])?.isEmpty == true, "\(deleted)")
        #expect(object["purgedZones"] as? Int == 0, "\(json.output)")
        let text = try await Shoal.run(["status", "--data", dir]).output
        #expect(text.contains("deleted zones kept: 1 (waiting for: notes"), "\(text)")
    }

    /// Per peer, the records and payload bytes exchanged (`SyncNode.peerStatistics`): `shoal
    /// status` shows them on both ends, with the very numbers the daemon's HTTP API and metrics
    /// give for the same peer.
    @Test func statusCountsWhatWentToAndCameFromEachPeer() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-status-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = root + "/a", b = root + "/b"
        for d in [a, b] { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        try await Shoal.pair([a, b])
        let idB = try await Shoal.deviceID(b)
        let key = try await Shoal.run(["http-key", "--data", a]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        func status(_ dir: String) async throws -> [String: Any] {
            let out = try await Shoal.run(["status", "--json", "--data", dir]).output
            return try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
        }
        func counters(_ report: [String: Any], _ peer: String) -> [String: Int] {
            ((report["peerCounters"] as? [String: Any])?[peer] as? [String: Int]) ?? [:]
        }

        try await Shoal.withDaemons { daemons in
            let da = try daemons.start(["--data", a, "--listen", "127.0.0.1:0", "--no-discovery"])
            let portA = try #require(await da.port(), "daemon A did not start: \(da.log)")
            let http = try #require(await da.httpPort(), "no HTTP port: \(da.log)")
            let db = try daemons.start([
                "--data", b, "--listen", "127.0.0.1:0", "--no-discovery", "--peer", "127.0.0.1:\(portA)"
            ])
            _ = try #require(await db.port(), "daemon B did not start: \(db.log)")
            let nodeA = try #require(try await status(a)["node"] as? String),
                nodeB = try #require(try await status(b)["node"] as? String)
            #expect(try await Shoal.run(["zone", "create", "notes", "--data", a]).status == 0)
            #expect(try await Shoal.run(["zone", "share", "notes", idB, "--read-only", "--data", a]).status == 0)
            for n in 0..<3 {
                #expect(
                    try await Shoal.run(["put", "notes", "n\(n)", "--type", "Note", "title=note \(n)", "--data", a])
                        .status == 0)
            }
            #expect(
                try await Shoal.eventually { try await Shoal.run(["get", "notes", "n2", "--data", b]).status == 0 },
                "B has the records")

            // A sent them to B, B received them from A: on each end, under the other's node ID.
            #expect(
                try await Shoal.eventually(30) { counters(try await status(b), nodeA)["recordsReceived"] ?? 0 >= 3 })
            let sent = counters(try await status(a), nodeB), received = counters(try await status(b), nodeA)
            #expect(sent["recordsSent"] ?? 0 >= 3 && sent["bytesSent"] ?? 0 > 0, "\(sent)")
            #expect(received["recordsReceived"] ?? 0 >= 3 && received["bytesReceived"] ?? 0 > 0, "\(received)")
            #expect(received["recordsSent"] == 0, "B only reads the zone: \(received)")

            // One source: the HTTP API's status and the metrics give A's numbers for B as the CLI does.
            let same = try await Shoal.eventually(30) {
                let cli = counters(try await status(a), nodeB)
                let api =
                    try await LoopbackHTTP.send(http, "GET", "/api/v1/status", key: key).json.map {
                        counters($0, nodeB)
                    } ?? [:]
                let metrics = try await LoopbackHTTP.send(http, "GET", "/metrics").text
                let scraped = metrics.split(separator: "\n").first {
                    $0.hasPrefix("shoal_peer_bytes_sent_total{peer=\"\(nodeB)\"} ")
                }
                return !cli.isEmpty && cli == api
                    && scraped.flatMap { Double($0.split(separator: " ").last ?? "") }
                        == cli["bytesSent"].map(Double.init)
            }
            #expect(same, "shoal status, /api/v1/status and /metrics agree on what A sent B")
            let text = try await Shoal.run(["status", "--data", a]).output
            #expect(
                text.contains("RECORDS OUT") && text.contains("BYTES OUT") && text.contains(String(nodeB.prefix(8))),
                "\(text)")
        }
    }
}
