// DiscoveryNamespaceTests: `shoal serve` daemons in network namespaces find each other by local discovery alone — over IPv4, IPv6 or broadcast.

import Foundation
import ShoalTestSupport
import Testing

/// A LAN made of network namespaces: a hub namespace holding a bridge, and one namespace per
/// node joined to it by a veth pair, with addresses in 10.77.0.0/24. Nothing is created in the
/// test host's own network namespace, so no packet of this test reaches a real network.
///
/// Needs root and iproute2 (`ip netns`); anywhere else the test is skipped, with the reason printed.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DiscoveryNamespaceTests {
    static let ipTool = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Why the test cannot run here, or nil.
    static let unavailable: String? = {
        let reason: String?
        if Shoal.binary == nil {
            reason = "the shoal binary was not built"
        } else if getuid() != 0 {
            reason = "creating network namespaces needs root"
        } else if let ip = ipTool {
            let probe = "shoalprobe\(UInt32.random(in: 0 ... .max))"
            reason = Lan.runBlocking(ip, ["netns", "add", probe]).status == 0 ? nil : "`ip netns add` fails here"
            _ = Lan.runBlocking(ip, ["netns", "del", probe])
        } else {
            reason = "iproute2's `ip` is not installed"
        }
        if let reason { print("DiscoveryNamespaceTests skipped: \(reason)") }
        return reason
    }()

    /// Why the IPv6 test cannot run here (the kernel has no IPv6), or nil.
    static let ipv6Unavailable: String? = {
        let reason = FileManager.default.fileExists(atPath: "/proc/net/if_inet6") ? nil : "the kernel has no IPv6"
        if let reason { print("DiscoveryNamespaceTests' IPv6 test skipped: \(reason)") }
        return reason
    }()

    @Test(.enabled(if: unavailable == nil, "needs root and `ip netns` (see the printed reason)"))
    func threeNodesFindEachOtherAndFollowAMove() async throws {
        let ip = try #require(Self.ipTool)
        let lan = Lan(ip: ip, nodes: 4)
        defer { lan.tearDown() }
        try await lan.setUp()

        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dirs = ["a", "b", "c"].map { root + "/" + $0 }
        // D is on the LAN too, trusted by nobody and trusting nobody: only ever listed.
        let stranger = root + "/d"
        for d in dirs + [stranger] { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        // Trust by device ID only: no --address, no --peer anywhere.
        try await Shoal.pair(dirs)
        var ids = [String]()
        for d in dirs { ids.append(try await Shoal.deviceID(d)) }
        // A owns the zone, shares it with B and C, and holds one record before anything runs.
        #expect(try await Shoal.run(["zone", "create", "notes", "--data", dirs[0]]).status == 0)
        for id in ids.dropFirst() {
            let shared = try await Shoal.run(["zone", "share", "notes", id, "--read-write", "--data", dirs[0]])
            #expect(shared.status == 0, "\(shared.error)")
        }
        #expect(
            try await Shoal.run(["put", "notes", "first", "--type", "Note", "v=before-start", "--data", dirs[0]]).status
                == 0)

        try await Shoal.withDaemons { daemons in
            let started = Date()
            var nodes = [Shoal.Daemon]()
            for (i, d) in (dirs + [stranger]).enumerated() {
                nodes.append(
                    try daemons.start(
                        ["--data", d, "--listen", "0.0.0.0:7400", "--discovery-interval", "2"],
                        wrapper: [ip, "netns", "exec", lan.namespace(i)]))
            }
            for n in nodes {
                #expect(
                    await Shoal.eventually(30) { n.log.contains("local discovery on") },
                    "discovery did not start: \(n.log)")
            }

            // The first record reaches B and C: found by discovery, dialled, replicated.
            let synced = try await Shoal.eventually(40) {
                for d in dirs.dropFirst() where !(try await Self.has(d, "first", "before-start")) { return false }
                return true
            }
            let firstSync = Date().timeIntervalSince(started)
            print(
                "DISCOVERY_METRIC {\"nodes\":3,\"interval_s\":2,\"start_to_first_synced_record_s\":\(String(format: "%.2f", firstSync))}"
            )
            #expect(synced, "B and C never got A's record: \(nodes.map(\.log))")
            // A lists C's address as discovered (A dialled it, or C dialled A: one connection is enough).
            let heard = try await Shoal.eventually(20) {
                try await Shoal.found(dirs[0], ids[2], in: .peerList).first?.hasPrefix("10.77.0.3:7400 discovered")
                    == true
            }
            let listed = try await Shoal.found(dirs[0], ids[2], in: .peerList)
            #expect(heard, "A lists how it found C: \(listed)")

            // C moves: its address changes from 10.77.0.3 to 10.77.0.13. A write on A still
            // reaches it (A hears C's next announcement from the new address), and one on C reaches A.
            let moved = Date()
            try await lan.move(2, to: "10.77.0.13")
            // A follows: it lists the new address only, and is connected to C again — by dialling
            // the new address, or because C dialled A from it first (A does not dial a device it is
            // connected to). The writes below check that the link works.
            let followed = try await Shoal.eventually(40) {
                let found = try await Shoal.found(dirs[0], ids[2], in: .peerList)
                if found == ["10.77.0.13:7400 discovered connected"] { return true }
                guard found == ["10.77.0.13:7400 discovered idle"] else { return false }
                return (try await Shoal.trustedEntry(dirs[0], ids[2])?["connected"] as? Bool) == true
            }
            let redialled = Date().timeIntervalSince(moved)
            let now = try await Shoal.found(dirs[0], ids[2], in: .peerList)
            let text = try await Shoal.run(["peer", "list", "--data", dirs[1]]).output
            #expect(text.contains("10.77.0.1:7400 (discovered)"), "B's table says how it found A: \(text)")
            #expect(followed, "A did not follow C to its new address: \(now)")
            #expect(
                try await Shoal.run(["put", "notes", "after-move", "--type", "Note", "v=from-a", "--data", dirs[0]])
                    .status == 0)
            let reached = await Shoal.eventually(40) { (try? await Self.has(dirs[2], "after-move", "from-a")) ?? false }
            let afterMove = Date().timeIntervalSince(moved)
            #expect(reached, "A's write after the move never reached C: \(nodes[0].log)\n---\n\(nodes[2].log)")
            #expect(
                try await Shoal.run(["put", "notes", "from-c", "--type", "Note", "v=moved", "--data", dirs[2]]).status
                    == 0)
            let back = await Shoal.eventually(40) { (try? await Self.has(dirs[0], "from-c", "moved")) ?? false }
            #expect(back, "C's write after the move never reached A")
            // The stranger is listed as discovered on A, never dialled, never given the zone.
            let strangerID = try await Shoal.deviceID(stranger)
            let seen = try await Shoal.run(["peer", "list", "--json", "--data", dirs[0]]).output
            print("DISCOVERY_PEER_LIST (node A, `shoal peer list --json`):\n\(seen)")
            let discovered =
                ((try? JSONSerialization.jsonObject(with: Data(seen.utf8))) as? [String: Any])?["discovered"]
                as? [[String: Any]] ?? []
            #expect(
                discovered.map { "\($0["device"] ?? "") \($0["addresses"] ?? "")" }.contains {
                    $0.hasPrefix(strangerID) && $0.contains("10.77.0.4:7400")
                },
                "A lists D as discovered: \(seen)")
            #expect(try await Shoal.run(["get", "notes", "first", "--data", stranger]).status != 0, "D got a record")
            print(
                "DISCOVERY_METRIC {\"nodes\":3,\"interval_s\":2,\"move_to_new_address_connected_s\":\(String(format: "%.2f", redialled)),"
                    + "\"move_to_synced_record_s\":\(String(format: "%.2f", afterMove))}")
        }
    }

    /// `--no-discovery` sends and hears nothing; a node listening only on loopback does not announce.
    @Test(.enabled(if: unavailable == nil, "needs root and `ip netns` (see the printed reason)"))
    func noDiscoveryIsSilent() async throws {
        let ip = try #require(Self.ipTool)
        let lan = Lan(ip: ip, nodes: 3)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-off-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dirs = ["off", "loopback", "listener"].map { root + "/" + $0 }
        for d in dirs { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        try await Shoal.withDaemons { daemons in
            let args = [
                ["--no-discovery", "--listen", "0.0.0.0:7400"], ["--listen", "127.0.0.1:7400"],
                ["--listen", "0.0.0.0:7400"]
            ]
            var nodes = [Shoal.Daemon]()
            for (i, d) in dirs.enumerated() {
                nodes.append(
                    try daemons.start(
                        ["--data", d, "--discovery-interval", "1"] + args[i],
                        wrapper: [ip, "netns", "exec", lan.namespace(i)]))
            }
            #expect(await Shoal.eventually(30) { nodes[2].log.contains("local discovery on") }, "\(nodes[2].log)")
            #expect(await Shoal.eventually(30) { nodes[1].log.contains("local discovery off") }, "\(nodes[1].log)")
            // Three intervals: the listener would have heard either of the others by now.
            try await Task.sleep(for: .seconds(3.5))
            let heard = try await Shoal.run(["peer", "list", "--json", "--data", dirs[2]]).output
            let discovered =
                ((try? JSONSerialization.jsonObject(with: Data(heard.utf8))) as? [String: Any])?["discovered"] as? [Any]
            #expect(discovered?.isEmpty == true, "the listener heard a node that should be silent: \(heard)")
            #expect(
                !nodes[0].log.contains("local discovery on") && !nodes[0].log.contains("discovered a"),
                "\(nodes[0].log)")
        }
    }

    /// Two nodes on a LAN without IPv4 (no address, no route): they find each other by IPv6
    /// multicast alone, dial the link-local address they heard (with its interface), and say so
    /// in `shoal status`.
    @Test(
        .enabled(
            if: unavailable == nil && ipv6Unavailable == nil, "needs root, `ip netns` and IPv6 (see the printed reason)"
        ))
    func twoNodesFindEachOtherOverIPv6Alone() async throws {
        let ip = try #require(Self.ipTool)
        let lan = Lan(ip: ip, nodes: 2, ipv4: false)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-v6-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, ids) = try await Self.twoNodesSharingARecord(root)
        try await Shoal.withDaemons { daemons in
            let started = Date()
            let nodes = try (0..<2).map { i in
                try daemons.start(
                    ["--data", dirs[i], "--listen", "[::]:7400", "--discovery-interval", "1"],
                    wrapper: [ip, "netns", "exec", lan.namespace(i)])
            }
            let synced = try await Shoal.eventually(30) { try await Self.has(dirs[1], "first", "before-start") }
            print(
                "DISCOVERY_METRIC {\"nodes\":2,\"ipv6_only\":true,\"start_to_first_synced_record_s\":\(String(format: "%.2f", Date().timeIntervalSince(started)))}"
            )
            #expect(synced, "B never got A's record over IPv6: \(nodes.map(\.log))")
            #expect(nodes[0].log.contains("over IPv6 only"), "\(nodes[0].log)")
            let heard = try await Shoal.eventually(10) {
                try await Shoal.found(dirs[0], ids[1]).contains {
                    $0.hasPrefix("[fe80:") && $0.contains("%eth0]:7400 discovered")
                }
            }
            let found = try await Shoal.found(dirs[0], ids[1])
            #expect(heard, "A's `shoal status --json` says it found B by discovery at a link-local address: \(found)")
        }
    }

    /// Two nodes on a link whose interfaces have multicast off and no multicast route: the
    /// announcements go to the subnet's broadcast address, and the nodes still find each other.
    @Test(.enabled(if: unavailable == nil, "needs root and `ip netns` (see the printed reason)"))
    func broadcastFindsNodesWhereMulticastIsOff() async throws {
        let ip = try #require(Self.ipTool)
        let lan = Lan(ip: ip, nodes: 2, multicast: false)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-bc-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, ids) = try await Self.twoNodesSharingARecord(root)
        try await Shoal.withDaemons { daemons in
            let started = Date()
            let nodes = try (0..<2).map { i in
                try daemons.start(
                    ["--data", dirs[i], "--listen", "0.0.0.0:7400", "--discovery-interval", "1"],
                    wrapper: [ip, "netns", "exec", lan.namespace(i)])
            }
            let synced = try await Shoal.eventually(30) { try await Self.has(dirs[1], "first", "before-start") }
            print(
                "DISCOVERY_METRIC {\"nodes\":2,\"broadcast_only\":true,\"start_to_first_synced_record_s\":\(String(format: "%.2f", Date().timeIntervalSince(started)))}"
            )
            #expect(synced, "B never got A's record by broadcast: \(nodes.map(\.log))")
            #expect(nodes[0].log.contains("10.77.0.255:21047"), "A broadcasts: \(nodes[0].log)")
            let heard = try await Shoal.eventually(10) {
                try await Shoal.found(dirs[0], ids[1]).first?.hasPrefix("10.77.0.2:7400 discovered") == true
            }
            let found = try await Shoal.found(dirs[0], ids[1])
            #expect(heard, "A's `shoal status --json` says it found B by discovery: \(found)")
        }
    }

    /// Two initialised nodes under `root` that trust each other by device ID alone; the first
    /// owns zone `notes`, shared read-write with the second, holding record `first`.
    static func twoNodesSharingARecord(_ root: String) async throws -> (dirs: [String], ids: [String]) {
        let dirs = ["a", "b"].map { root + "/" + $0 }
        for d in dirs { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        try await Shoal.pair(dirs)
        var ids = [String]()
        for d in dirs { ids.append(try await Shoal.deviceID(d)) }
        #expect(try await Shoal.run(["zone", "create", "notes", "--data", dirs[0]]).status == 0)
        #expect(try await Shoal.run(["zone", "share", "notes", ids[1], "--read-write", "--data", dirs[0]]).status == 0)
        #expect(
            try await Shoal.run(["put", "notes", "first", "--type", "Note", "v=before-start", "--data", dirs[0]]).status
                == 0)
        return (dirs, ids)
    }

    /// Whether `shoal get notes NAME` in `dir` shows `v = VALUE`.
    static func has(_ dir: String, _ name: String, _ value: String) async throws -> Bool {
        try await Shoal.run(["get", "notes", name, "--data", dir]).output.contains("v = \(value)")
    }
}

/// The namespaces and links of one test run, named with a random tag so runs never collide.
final class Lan: Sendable {
    let ip: String
    let nodes: Int
    /// Whether the nodes have IPv4 addresses (and a route for IPv4 multicast). Without, only
    /// IPv6 link-local addresses.
    let ipv4: Bool
    /// Whether the nodes' interfaces support multicast (and have a route for IPv4 multicast).
    let multicast: Bool
    let tag = String(UInt32.random(in: 0 ... .max), radix: 36)

    init(ip: String, nodes: Int, ipv4: Bool = true, multicast: Bool = true) {
        self.ip = ip
        self.nodes = nodes
        self.ipv4 = ipv4
        self.multicast = multicast
    }

    var hub: String { "shoalhub\(tag)" }
    func namespace(_ i: Int) -> String { "shoaln\(i)\(tag)" }
    static func address(_ i: Int) -> String { "10.77.0.\(i + 1)" }

    /// Hub with a bridge (multicast snooping off, so the group's packets reach every port without
    /// an IGMP or MLD querier); per node a namespace, `lo` up, a veth into the bridge, an address
    /// and a route for multicast (there is no default route inside) — as `ipv4` and `multicast`
    /// say. Duplicate address detection is off, so IPv6 link-local addresses are usable at once.
    func setUp() async throws {
        try await run(["netns", "add", hub])
        try await run(["-n", hub, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0"])
        try await run(["-n", hub, "link", "set", "br0", "up"])
        for i in 0..<nodes {
            let ns = namespace(i)
            try await run(["netns", "add", ns])
            // Best effort: without it, IPv6 is usable a second or two later.
            let ip = self.ip
            _ = try await Shoal.onOwnThread {
                Self.runBlocking(
                    ip,
                    [
                        "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0",
                        "net.ipv6.conf.all.accept_dad=0"
                    ])
            }
            try await run(["-n", ns, "link", "set", "lo", "up"])
            try await run(["-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "p\(i)", "netns", hub])
            try await run(["-n", hub, "link", "set", "p\(i)", "master", "br0", "up"])
            if ipv4 { try await run(["-n", ns, "addr", "add", "\(Self.address(i))/24", "dev", "eth0"]) }
            if !multicast { try await run(["-n", ns, "link", "set", "eth0", "multicast", "off"]) }
            try await run(["-n", ns, "link", "set", "eth0", "up"])
            if ipv4 && multicast { try await run(["-n", ns, "route", "add", "224.0.0.0/4", "dev", "eth0"]) }
        }
    }

    /// Gives node `i` the address `address` in place of its own, as a DHCP client would: the
    /// kernel drops the interface's routes with its last address, so the multicast route is
    /// added again.
    func move(_ i: Int, to address: String) async throws {
        try await run(["-n", namespace(i), "addr", "del", "\(Self.address(i))/24", "dev", "eth0"])
        try await run(["-n", namespace(i), "addr", "add", "\(address)/24", "dev", "eth0"])
        try await run(["-n", namespace(i), "route", "replace", "224.0.0.0/4", "dev", "eth0"])
    }

    /// Deletes every namespace of this run (their links and the bridge go with them).
    func tearDown() {
        for ns in (0..<nodes).map(namespace) + [hub] { _ = Self.runBlocking(ip, ["netns", "del", ns]) }
    }

    func run(_ args: [String]) async throws {
        let ip = self.ip
        let r = try await Shoal.onOwnThread { Self.runBlocking(ip, args) }
        guard r.status == 0 else {
            throw CocoaError(
                .executableLoad,
                userInfo: [NSDebugDescriptionErrorKey: "ip \(args.joined(separator: " ")) failed: \(r.error)"])
        }
    }

    /// Runs `ip args…` to completion (a few milliseconds).
    static func runBlocking(_ ip: String, _ args: [String]) -> (status: Int32, error: String) {
        let p = ChildProcess()
        p.executableURL = URL(fileURLWithPath: ip)
        p.arguments = args
        let err = Shoal.pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        do { try Shoal.start(p) } catch { return (-1, "\(error)") }
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: e, as: UTF8.self))
    }
}
