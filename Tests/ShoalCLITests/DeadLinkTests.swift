// DeadLinkTests: `shoal serve` daemons notice a peer that went to sleep or a link that died under an open connection, and catch up.

import Foundation
import ShoalWire
import Testing

/// Connections whose other end went quiet (Spec/replication.md §2.1), in network namespaces set
/// up as in ``DiscoveryNamespaceTests``; the nodes trust each other by device ID alone and find
/// each other by local discovery (interval 10 s, as ``DiscoveryLifecycleTests``).
///
/// Not serialised: the two-minute sleep runs beside the link tests (and the other suites); each
/// test owns its namespaces. Each prints its figures as `DISCOVERY_METRIC` lines.
/// Needs root and iproute2 (`ip netns`); anywhere else the tests are skipped, with the reason printed.
@Suite(.timeLimit(.minutes(5))) struct DeadLinkTests {
    static let interval = DiscoveryLifecycleTests.interval

    /// A machine that sleeps: one daemon is stopped (SIGSTOP) for two minutes, as a suspended
    /// laptop, while both sides write. Its peer notices it gone within its idle timeout (45 s);
    /// once it runs again (SIGCONT) the two are connected again, and hold the same records —
    /// every write of both sides, none twice — within an announcement interval.
    ///
    /// The sleeper is the node with the larger device ID, whose peer dials it (Spec/discovery.md
    /// §4): the peer spent the two minutes failing to reach it, and must dial again when it
    /// hears it, not when its backoff (up to 30 s) ends.
    @Test(
        .enabled(if: DiscoveryNamespaceTests.unavailable == nil, "needs root and `ip netns` (see the printed reason)"))
    func aDaemonStoppedForTwoMinutesCatchesUpWhenItResumes() async throws {
        let ip = try #require(DiscoveryNamespaceTests.ipTool)
        let lan = Lan(ip: ip, nodes: 2)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-sleep-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, ids) = try await DiscoveryNamespaceTests.twoNodesSharingARecord(root)
        let s = try DeviceID(text: ids[0]) > DeviceID(text: ids[1]) ? 0 : 1, w = 1 - s
        let sleeper = dirs[s], awake = dirs[w]
        try await Shoal.withDaemons { daemons in
            var nodes = [Shoal.Daemon]()
            for i in 0..<2 { nodes.append(try await DiscoveryLifecycleTests.start(daemons, dirs[i], in: lan, i)) }
            let first = try await Shoal.eventually(30) {
                let has = try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")
                guard has else { return false }
                return try await Self.connected(sleeper, ids[w])
            }
            #expect(first, "the nodes never synced: \(nodes.map(\.log))")
            func put(_ dir: String, _ name: String, _ value: String) async throws {
                let r = try await Shoal.run(["put", "notes", name, "--type", "Note", "v=\(value)", "--data", dir])
                #expect(r.status == 0, "put \(name) failed: \(r.error)")
            }

            // The sleeper writes, and goes to sleep at once: what it wrote may or may not have left.
            try await put(sleeper, "first", "from-sleeper")
            try await put(sleeper, "before-sleep", "s")
            let pid = nodes[s].process.processIdentifier
            #expect(kill(pid, SIGSTOP) == 0)
            let stopped = Date()
            // Only the awake node is asked anything now: the sleeper's control socket would not answer.
            try await Task.sleep(for: .seconds(5))
            try await put(awake, "during-0", "w")
            try await Task.sleep(for: .seconds(10))
            try await put(awake, "first", "from-awake")
            let noticed = try await Shoal.eventually(60) {
                try await Shoal.trustedEntry(awake, ids[s])?["connected"] as? Bool == false
            }
            let noticedAfter = Date().timeIntervalSince(stopped)
            DiscoveryLifecycleTests.metric(
                "stopped_to_peer_noticed_s", noticedAfter, test: "sleep_120s", interval: Self.interval)
            // The idle timeout (45 s) from the sleeper's last frame (at most a ping interval before it
            // stopped; none to wait for TLS's close), plus the time a `shoal status` takes here.
            #expect(
                noticed && noticedAfter < 45 + 3,
                "the awake node kept the sleeper's connection for \(noticedAfter) s: \(nodes[w].log)")
            try await put(awake, "during-1", "w")
            let remaining = 115 - Date().timeIntervalSince(stopped)
            if remaining > 0 { try await Task.sleep(for: .seconds(remaining)) }
            try await put(awake, "during-2", "w")
            let remainder = 120 - Date().timeIntervalSince(stopped)
            if remainder > 0 { try await Task.sleep(for: .seconds(remainder)) }

            let logBefore = nodes[s].log.count
            #expect(kill(pid, SIGCONT) == 0)
            let resumed = Date()
            try await put(sleeper, "after-wake", "s")
            let expected: [(String, String)] = [
                ("first", "from-awake"), ("before-sleep", "s"), ("after-wake", "s"),
                ("during-0", "w"), ("during-1", "w"), ("during-2", "w")
            ]
            let synced = try await Shoal.eventually(2 * Self.interval) {
                for d in [sleeper, awake] {
                    for (name, value) in expected where !(try await DiscoveryNamespaceTests.has(d, name, value)) {
                        return false
                    }
                }
                return true
            }
            DiscoveryLifecycleTests.metric(
                "resume_to_synced_s", Date().timeIntervalSince(resumed), test: "sleep_120s", interval: Self.interval)
            #expect(
                synced,
                "the nodes did not converge after the sleeper resumed: \(nodes[s].log.dropFirst(logBefore))\n---\n\(nodes[w].log)"
            )
            // Same records, none missing and none twice: same count and digest on both.
            let zones = try await Shoal.eventually(10) {
                let a = try await Self.zone(sleeper), b = try await Self.zone(awake)
                return a != nil && a?.records == expected.count && a?.records == b?.records && a?.digest == b?.digest
            }
            let zs = try await Self.zone(sleeper), za = try await Self.zone(awake)
            #expect(zones, "sleeper \(String(describing: zs)), awake \(String(describing: za))")
            // Both say they are connected again; the sleeper heard from its peer after it resumed.
            let again = try await Shoal.eventually(10) {
                let one = try await Self.connected(sleeper, ids[w])
                guard one else { return false }
                return try await Self.connected(awake, ids[s])
            }
            #expect(again, "\(nodes[s].log.dropFirst(logBefore))")
            let seen = try await Shoal.trustedEntry(sleeper, ids[w]).flatMap { Self.date($0["lastFrame"]) }
            #expect(
                seen.map { $0 >= resumed.addingTimeInterval(-1) } == true,
                "the sleeper's last frame from its peer: \(String(describing: seen))")
        }
    }

    /// What takes a peer away under an open connection without a word: its link going down, or
    /// its address removed. Neither sends a FIN nor a reset, so only the keepalive notices: the
    /// node that still has its link closes the connection within its idle timeout
    /// (`shoal serve --idle-timeout`, 6 s here), and `shoal status` says the device is no longer
    /// connected, last seen before the link died.
    @Test(
        .enabled(if: DiscoveryNamespaceTests.unavailable == nil, "needs root and `ip netns` (see the printed reason)"),
        arguments: [Loss.linkDown, .addressRemoved])
    func aLinkThatDiesQuietlyIsNoticedWithinTheIdleTimeout(_ loss: Loss) async throws {
        let ip = try #require(DiscoveryNamespaceTests.ipTool)
        let lan = Lan(ip: ip, nodes: 2)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-deadlink-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, ids) = try await DiscoveryNamespaceTests.twoNodesSharingARecord(root)
        let idle = 6.0
        try await Shoal.withDaemons { daemons in
            let nodes = try (0..<2).map { i in
                try daemons.start(
                    DiscoveryLifecycleTests.serve(dirs[i]) + ["--idle-timeout", "\(Int(idle))"],
                    wrapper: [ip, "netns", "exec", lan.namespace(i)])
            }
            let synced = try await Shoal.eventually(30) {
                let has = try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")
                guard has else { return false }
                return try await Self.connected(dirs[0], ids[1])
            }
            #expect(synced, "A and B never synced: \(nodes.map(\.log))")
            // Pings every idle/3 s draw pongs: B's last frame keeps moving on A while the link lives.
            let before = try await Shoal.trustedEntry(dirs[0], ids[1]).flatMap { Self.date($0["lastFrame"]) }
            let moving = try await Shoal.eventually(idle) {
                let now = try await Shoal.trustedEntry(dirs[0], ids[1]).flatMap { Self.date($0["lastFrame"]) }
                return before != nil && now != nil && now! > before!
            }
            #expect(moving, "B's last frame on A did not move forward from \(String(describing: before))")

            switch loss {
            case .linkDown: try await lan.setLink(1, up: false)
            case .addressRemoved:
                try await lan.run(["-n", lan.namespace(1), "addr", "del", "\(Lan.address(1))/24", "dev", "eth0"])
            }
            let lost = Date()
            let noticed = try await Shoal.eventually(idle + 10) {
                try await Shoal.trustedEntry(dirs[0], ids[1])?["connected"] as? Bool == false
            }
            let after = Date().timeIntervalSince(lost)
            DiscoveryLifecycleTests.metric(
                "\(loss.rawValue)_to_noticed_s", after, test: "dead_link", interval: Self.interval)
            // The bound: the idle timeout from B's last frame (at most a ping interval before the
            // loss), plus the time a `shoal status` takes here.
            #expect(
                noticed && after <= idle + 1.5,
                "A noticed B gone after \(after) s (idle timeout \(idle) s): \(nodes[0].log)")
            let entry = try await Shoal.trustedEntry(dirs[0], ids[1])
            let last = entry.flatMap { Self.date($0["lastFrame"]) }
            #expect(
                last.map { $0 <= lost.addingTimeInterval(0.5) } == true,
                "B last seen on A at \(String(describing: last)), the link died at \(lost)")
            let text = try await Shoal.run(["status", "--data", dirs[0]]).output
            #expect(text.contains("LAST SEEN") && text.contains("s ago ("), "\(text)")
            #expect(nodes[0].log.contains("connection closed"), "\(nodes[0].log)")
        }
    }

    enum Loss: String, CustomTestStringConvertible, Sendable {
        case linkDown = "link_down"
        case addressRemoved = "address_removed"
        var testDescription: String { rawValue }
    }

    /// Whether `shoal status --json` of `dir` says the trusted `device` is connected.
    static func connected(_ dir: String, _ device: String) async throws -> Bool {
        try await Shoal.trustedEntry(dir, device)?["connected"] as? Bool == true
    }

    /// Zone `notes` in `shoal status --json` of `dir`: its live records and digest.
    static func zone(_ dir: String) async throws -> (records: Int, digest: String)? {
        let out = try await Shoal.run(["status", "--json", "--data", dir]).output
        let json = try? JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
        guard
            let z = (json?["zones"] as? [[String: Any]])?.first(where: {
                ($0["zone"] as? String)?.hasPrefix("notes") == true
            }),
            let records = z["records"] as? Int, let digest = z["digest"] as? String
        else { return nil }
        return (records, digest)
    }

    /// An ISO 8601 time with milliseconds, as `shoal status --json` writes them, or nil.
    static func date(_ value: Any?) -> Date? {
        guard let text = value as? String else { return nil }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: text)
    }
}
