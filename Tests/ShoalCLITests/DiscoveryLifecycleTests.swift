// DiscoveryLifecycleTests: `shoal serve` daemons keep finding each other while their interfaces come and go.

import Foundation
import Testing

/// Local discovery follows the interfaces (Spec/discovery.md §3.1), in network namespaces set up
/// as in ``DiscoveryNamespaceTests`` (a hub namespace with bridges, one namespace per node): a
/// daemon started before its link, an interface taken down and up, an interface added, an
/// address changed. The nodes trust each other by device ID alone; no multicast route is set up
/// after a change (discovery sends out of each interface, so it needs none).
///
/// The announcement interval is long (10 s) and each wait is bounded by it: a node that had to
/// wait for its next announcement would not make it. Each test prints how long syncing took.
/// Needs root and iproute2 (`ip netns`); anywhere else the tests are skipped, with the reason printed.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DiscoveryLifecycleTests {
    static let interval = 10.0

    /// A daemon whose link is down, without address or route, when it starts — as at boot —
    /// finds its peer as soon as the link comes up with an address, well within an interval.
    @Test(
        .enabled(if: DiscoveryNamespaceTests.unavailable == nil, "needs root and `ip netns` (see the printed reason)"))
    func aDaemonStartedBeforeItsLinkFindsItsPeerWhenTheLinkComesUp() async throws {
        let ip = try #require(DiscoveryNamespaceTests.ipTool)
        let lan = Lan(ip: ip, nodes: 2)
        defer { lan.tearDown() }
        try await lan.setUp()
        try await lan.unplug(0)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-boot-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, _) = try await DiscoveryNamespaceTests.twoNodesSharingARecord(root)
        try await Shoal.withDaemons { daemons in
            // Interfaces read again only every minute: the kernel's notice (rtnetlink) is what
            // makes A notice its link within the interval.
            let nodes = try (0..<2).map {
                try daemons.start(
                    Self.serve(dirs[$0]) + ["--discovery-rescan", "60"],
                    wrapper: [ip, "netns", "exec", lan.namespace($0)])
            }
            #expect(
                await Shoal.eventually(30) { nodes[0].log.contains("local discovery waiting") },
                "A waits for an interface: \(nodes[0].log)")
            #expect(await Shoal.eventually(30) { nodes[1].log.contains("local discovery on") }, "\(nodes[1].log)")
            try await Task.sleep(for: .seconds(5))
            #expect(
                !(try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")),
                "B got A's record before A had a link")

            try await lan.plugIn(0)
            let up = Date()
            let synced = try await Shoal.eventually(Self.interval) {
                try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")
            }
            Self.metric("link_up_to_synced_record_s", Date().timeIntervalSince(up), test: "started_before_link")
            #expect(synced, "B never got A's record after A's link came up: \(nodes.map(\.log))")
            #expect(!nodes[0].log.contains("could not start"), "\(nodes[0].log)")

            // `shoal status` says what discovery does on A's interface.
            let eth0 = try await Shoal.eventually(10) {
                try await Self.discovery(dirs[0], "eth0")?["lastHeard"] is String
            }
            let status = try await Self.discovery(dirs[0], "eth0")
            #expect(
                eth0 && (status?["joined"] as? [String])?.contains("239.255.83.72") == true
                    && status?["lastSent"] is String,
                "A's `shoal status --json` shows eth0 joined, sent to and heard on: \(String(describing: status))")
            let text = try await Shoal.run(["status", "--data", dirs[0]]).output
            #expect(text.contains("DISCOVERY ON") && text.contains("10.77.0.1"), "\(text)")
        }
    }

    /// An interface taken down and up under a running daemon: discovery leaves it and joins it
    /// again, and a peer that restarted meanwhile (it knows nothing but A's device ID) finds A
    /// and records cross again. The down link dropped A's multicast route, and it stays dropped.
    @Test(
        .enabled(if: DiscoveryNamespaceTests.unavailable == nil, "needs root and `ip netns` (see the printed reason)"))
    func anInterfaceTakenDownAndUpIsJoinedAgain() async throws {
        let ip = try #require(DiscoveryNamespaceTests.ipTool)
        let lan = Lan(ip: ip, nodes: 2)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-updown-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, ids) = try await DiscoveryNamespaceTests.twoNodesSharingARecord(root)
        try await Shoal.withDaemons { daemons in
            let a = try await Self.start(daemons, dirs[0], in: lan, 0)
            let old = try await Self.start(daemons, dirs[1], in: lan, 1)
            let first = try await Shoal.eventually(30) {
                try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")
            }
            #expect(first, "A and B never synced: \(a.log)\n---\n\(old.log)")

            // B goes away; A's link goes down; B comes back (new instance, nothing heard yet)
            // while A's link is still down; then A's link comes up.
            await old.stop()
            try await lan.setLink(0, up: false)
            #expect(
                try await Shoal.eventually(10) { try await Self.discovery(dirs[0], "eth0") == nil },
                "A left eth0 when it went down")
            #expect(
                try await Shoal.run(["put", "notes", "while-down", "--type", "Note", "v=from-b", "--data", dirs[1]])
                    .status == 0)
            let b = try daemons.start(Self.serve(dirs[1]), wrapper: [ip, "netns", "exec", lan.namespace(1)])
            #expect(await Shoal.eventually(30) { b.log.contains("local discovery on") }, "\(b.log)")
            try await Task.sleep(for: .seconds(1))
            try await lan.setLink(0, up: true)
            let up = Date()
            let synced = try await Shoal.eventually(Self.interval) {
                try await DiscoveryNamespaceTests.has(dirs[0], "while-down", "from-b")
            }
            Self.metric("link_up_to_synced_record_s", Date().timeIntervalSince(up), test: "interface_down_up")
            #expect(synced, "B's record never reached A after A's link came back: \(a.log)\n---\n\(b.log)")
            // B knows A only from A's announcements since the link came back.
            let heard = try await Shoal.eventually(10) {
                try await Shoal.found(dirs[1], ids[0]).contains { $0.hasPrefix("10.77.0.1:7400 discovered") }
            }
            let foundOnB = try await Shoal.found(dirs[1], ids[0])
            #expect(heard, "B found A by discovery: \(foundOnB)")
            #expect(
                try await Shoal.run(["put", "notes", "after-up", "--type", "Note", "v=from-a", "--data", dirs[0]])
                    .status == 0)
            #expect(
                try await Shoal.eventually(Self.interval) {
                    try await DiscoveryNamespaceTests.has(dirs[1], "after-up", "from-a")
                }, "A's write never reached B")
            #expect(!a.log.contains("I/O on closed channel"), "\(a.log)")
        }
    }

    /// An interface added under a running daemon is joined, announced on at once, and the
    /// peer on its subnet found.
    @Test(
        .enabled(if: DiscoveryNamespaceTests.unavailable == nil, "needs root and `ip netns` (see the printed reason)"))
    func anInterfaceAddedAtRunTimeFindsItsSubnetsPeer() async throws {
        let ip = try #require(DiscoveryNamespaceTests.ipTool)
        let lan = Lan(ip: ip, nodes: 2)
        defer { lan.tearDown() }
        try await lan.setUp()
        // B alone on a second LAN, 10.78.0.0/24; A on the first only, for now.
        try await lan.addBridge("br1")
        try await lan.connect(1, toBridge: "br1")
        try await lan.move(1, to: "10.78.0.2")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-addif-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, ids) = try await DiscoveryNamespaceTests.twoNodesSharingARecord(root)
        try await Shoal.withDaemons { daemons in
            let nodes = try (0..<2).map {
                try daemons.start(Self.serve(dirs[$0]), wrapper: [ip, "netns", "exec", lan.namespace($0)])
            }
            for n in nodes { #expect(await Shoal.eventually(30) { n.log.contains("local discovery on") }, "\(n.log)") }
            try await Task.sleep(for: .seconds(1))
            #expect(
                !(try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")),
                "B got A's record across LANs")

            try await lan.addInterface(0, "eth1", bridge: "br1", address: "10.78.0.1")
            let added = Date()
            let synced = try await Shoal.eventually(Self.interval) {
                try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")
            }
            Self.metric("interface_added_to_synced_record_s", Date().timeIntervalSince(added), test: "interface_added")
            #expect(synced, "B never got A's record after A joined its LAN: \(nodes.map(\.log))")
            let found = try await Shoal.eventually(10) {
                try await Shoal.found(dirs[0], ids[1]).contains { $0.hasPrefix("10.78.0.2:7400 discovered") }
            }
            let foundOnA = try await Shoal.found(dirs[0], ids[1])
            #expect(found, "A found B on eth1: \(foundOnA)")
            let both = try await Shoal.eventually(10) {
                let eth0 = try await Self.discovery(dirs[0], "eth0"), eth1 = try await Self.discovery(dirs[0], "eth1")
                return (eth0?["joined"] as? [String])?.isEmpty == false && eth1?["lastHeard"] is String
            }
            let status = try await Shoal.run(["status", "--json", "--data", dirs[0]]).output
            #expect(both, "A's status lists both interfaces: \(status)")
        }
    }

    /// An address changed under a running daemon (as DHCP would): its peer follows it to the
    /// new address, and records cross.
    @Test(
        .enabled(if: DiscoveryNamespaceTests.unavailable == nil, "needs root and `ip netns` (see the printed reason)"))
    func anAddressChangedUnderARunningDaemonIsFollowed() async throws {
        let ip = try #require(DiscoveryNamespaceTests.ipTool)
        let lan = Lan(ip: ip, nodes: 2)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-readdr-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, ids) = try await DiscoveryNamespaceTests.twoNodesSharingARecord(root)
        try await Shoal.withDaemons { daemons in
            var nodes = [Shoal.Daemon]()
            for i in 0..<2 { nodes.append(try await Self.start(daemons, dirs[i], in: lan, i)) }
            let first = try await Shoal.eventually(30) {
                try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")
            }
            #expect(first, "A and B never synced: \(nodes.map(\.log))")

            try await lan.move(1, to: "10.77.0.12")
            let moved = Date()
            let followed = try await Shoal.eventually(2 * Self.interval) {
                try await Shoal.found(dirs[0], ids[1]) == ["10.77.0.12:7400 discovered connected"]
            }
            let redialled = Date().timeIntervalSince(moved)
            let foundOnA = try await Shoal.found(dirs[0], ids[1])
            #expect(followed, "A did not follow B to its new address: \(foundOnA)")
            #expect(
                try await Shoal.run(["put", "notes", "after-move", "--type", "Note", "v=from-a", "--data", dirs[0]])
                    .status == 0)
            let synced = try await Shoal.eventually(2 * Self.interval) {
                try await DiscoveryNamespaceTests.has(dirs[1], "after-move", "from-a")
            }
            Self.metric("move_to_new_address_connected_s", redialled, test: "address_changed")
            Self.metric("move_to_synced_record_s", Date().timeIntervalSince(moved), test: "address_changed")
            #expect(synced, "A's write after the move never reached B: \(nodes.map(\.log))")
        }
    }

    /// Sends that fail while the host has no route to the LAN (`Network is unreachable`) are
    /// logged once, not at each announcement; once the route is back, announcements go out
    /// again (the socket the failure closed is reopened) and the peer hears them.
    @Test(
        .enabled(if: DiscoveryNamespaceTests.unavailable == nil, "needs root and `ip netns` (see the printed reason)"))
    func aFailedSendDoesNotEndDiscovery() async throws {
        let ip = try #require(DiscoveryNamespaceTests.ipTool)
        // Multicast off: announcements go to the subnet's broadcast address, which needs a route.
        let lan = Lan(ip: ip, nodes: 2, multicast: false)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-unreach-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, _) = try await DiscoveryNamespaceTests.twoNodesSharingARecord(root)
        try await Shoal.withDaemons { daemons in
            let args = ["--listen", "0.0.0.0:7400", "--discovery-interval", "1"]
            let nodes = try (0..<2).map {
                try daemons.start(["--data", dirs[$0]] + args, wrapper: [ip, "netns", "exec", lan.namespace($0)])
            }
            let first = try await Shoal.eventually(30) {
                try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")
            }
            #expect(first, "A and B never synced: \(nodes.map(\.log))")

            // A loses its routes to the LAN, as a host whose network is not configured yet.
            let a = lan.namespace(0)
            try await lan.run(["-n", a, "route", "del", "broadcast", "10.77.0.255", "dev", "eth0", "table", "local"])
            try await lan.run(["-n", a, "route", "del", "10.77.0.0/24", "dev", "eth0"])
            let failing = try await Shoal.eventually(10) {
                try await Self.discovery(dirs[0], "eth0")?["lastError"] is String
            }
            let eth0 = try await Self.discovery(dirs[0], "eth0")
            #expect(failing, "A's status shows the failed send: \(String(describing: eth0))")
            try await Task.sleep(for: .seconds(3.5))  // three more announcements, failing the same way
            let heardBefore = try await Self.discovery(dirs[1], "eth0")?["lastHeard"] as? String

            try await lan.run([
                "-n", a, "route", "add", "10.77.0.0/24", "dev", "eth0", "proto", "kernel", "scope", "link", "src",
                "10.77.0.1"
            ])
            try await lan.run([
                "-n", a, "route", "add", "broadcast", "10.77.0.255", "dev", "eth0", "table", "local", "proto", "kernel",
                "scope", "link", "src", "10.77.0.1"
            ])
            let restored = Date()
            let recovered = try await Shoal.eventually(Self.interval) {
                let onB = try await Self.discovery(dirs[1], "eth0")?["lastHeard"] as? String
                let onA = try await Self.discovery(dirs[0], "eth0")
                return onB != nil && onB != heardBefore && onA?["lastError"] is NSNull
            }
            Self.metric("route_back_to_heard_s", Date().timeIntervalSince(restored), test: "failed_send", interval: 1)
            #expect(recovered, "B hears A again once A's route is back: \(nodes[0].log)")
            let failures = nodes[0].log.components(separatedBy: "cannot send the announcement").count - 1
            #expect(failures == 1, "the failure is logged once, not at each announcement: \(nodes[0].log)")
            #expect(nodes[0].log.contains("can send the announcement to 10.77.0.255 on eth0 again"), "\(nodes[0].log)")
            #expect(!nodes[0].log.contains("I/O on closed channel"), "\(nodes[0].log)")
        }
    }

    /// `shoal serve` in a namespace: listening on every IPv4 address, the long interval.
    static func serve(_ dir: String) -> [String] {
        ["--data", dir, "--listen", "0.0.0.0:7400", "--discovery-interval", "\(Int(interval))"]
    }

    /// Starts `shoal serve` for `dir` in node `i`'s namespace and waits (bounded) until its
    /// discovery runs: a node started after it is heard at its first announcement, rather than
    /// an interval later.
    static func start(_ daemons: Shoal.Daemons, _ dir: String, in lan: Lan, _ i: Int) async throws -> Shoal.Daemon {
        let d = try daemons.start(serve(dir), wrapper: [lan.ip, "netns", "exec", lan.namespace(i)])
        #expect(
            await Shoal.eventually(30) { d.log.contains("local discovery on") }, "discovery did not start: \(d.log)")
        return d
    }

    /// The entry of interface `name` under `discovery.interfaces` in `shoal status --json`, or nil.
    static func discovery(_ dir: String, _ name: String) async throws -> [String: Any]? {
        let out = try await Shoal.run(["status", "--json", "--data", dir]).output
        let json = try? JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
        let interfaces = (json?["discovery"] as? [String: Any])?["interfaces"] as? [[String: Any]]
        return interfaces?.first { $0["name"] as? String == name }
    }

    static func metric(_ name: String, _ seconds: Double, test: String, interval: Double = interval) {
        print(
            "DISCOVERY_METRIC {\"test\":\"\(test)\",\"interval_s\":\(Int(interval)),\"\(name)\":\(String(format: "%.2f", seconds))}"
        )
    }
}

/// Changes to a ``Lan`` while its daemons run.
extension Lan {
    /// Takes node `i`'s link down and removes its addresses: a machine whose network is not up yet.
    func unplug(_ i: Int) async throws {
        try await run(["-n", namespace(i), "link", "set", "eth0", "down"])
        try await run(["-n", namespace(i), "addr", "flush", "dev", "eth0"])
    }

    /// Gives node `i` its address and brings its link up, with no multicast route.
    func plugIn(_ i: Int) async throws {
        try await run(["-n", namespace(i), "addr", "add", "\(Self.address(i))/24", "dev", "eth0"])
        try await run(["-n", namespace(i), "link", "set", "eth0", "up"])
    }

    /// Takes node `i`'s link down or up; its addresses stay, its routes go with the link (the
    /// kernel restores the subnet's route when it comes up, not the multicast route).
    func setLink(_ i: Int, up: Bool) async throws {
        try await run(["-n", namespace(i), "link", "set", "eth0", up ? "up" : "down"])
    }

    /// A second bridge in the hub: another LAN.
    func addBridge(_ name: String) async throws {
        try await run(["-n", hub, "link", "add", name, "type", "bridge", "mcast_snooping", "0"])
        try await run(["-n", hub, "link", "set", name, "up"])
    }

    /// Moves node `i`'s link from the first LAN to the bridge `bridge`.
    func connect(_ i: Int, toBridge bridge: String) async throws {
        try await run(["-n", hub, "link", "set", "p\(i)", "master", bridge])
    }

    /// Adds interface `name` to node `i`, joined to `bridge`, with `address`/24, and brings it up.
    func addInterface(_ i: Int, _ name: String, bridge: String, address: String) async throws {
        let ns = namespace(i), port = "q\(i)\(name.suffix(1))"
        try await run(["-n", ns, "link", "add", name, "type", "veth", "peer", "name", port, "netns", hub])
        try await run(["-n", hub, "link", "set", port, "master", bridge, "up"])
        try await run(["-n", ns, "addr", "add", "\(address)/24", "dev", name])
        try await run(["-n", ns, "link", "set", name, "up"])
    }
}
