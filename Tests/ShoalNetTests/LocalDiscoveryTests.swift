// LocalDiscoveryTests: what a node does with announcements — dial trusted devices, follow a move, list strangers, stay bounded.

import Foundation
import NIOCore
import Testing
import ShoalWire
import ShoalTrust
@testable import ShoalNet

/// The decisions of `NetworkNode+Discovery.swift`, driven with announcements handed in directly
/// (no UDP: the sockets are exercised by `DiscoveryNamespaceTests`, in network namespaces, so no
/// test sends multicast on the machine's own network). Every address dialled here is loopback.
@Suite(.serialized, .timeLimit(.minutes(5))) struct LocalDiscoveryTests {
    static let loopback = try? SocketAddress(ipAddress: "127.0.0.1", port: 21_047)

    static func announcement(_ device: DeviceID, port: Int, instance: UInt64 = 1) -> DiscoveryAnnouncement {
        DiscoveryAnnouncement(device: device, instance: instance, endpoints: [.init(host: .source, port: UInt16(port))])
    }

    /// A probe's bound for these tests: whether a live connection answers is what they check,
    /// and the whole suite's load can hold a pong past the default 2 s.
    static var patient: NetworkConfiguration {
        var c = NetworkConfiguration()
        c.discovery.probeTimeout = .seconds(15)
        return c
    }

    /// Two nodes that trust each other, the one with the smaller device ID first.
    static func trustedPair() async throws -> (small: LoopbackNode, large: LoopbackNode) {
        let x = try await LoopbackNode.start("x", network: patient)
        let y = try await LoopbackNode.start("y", network: patient)
        await LoopbackNode.trustEachOther(x, y)
        return x.device < y.device ? (x, y) : (y, x)
    }

    static func device(_ byte: UInt8) -> DeviceID? { DeviceID(bytes: [UInt8](repeating: byte, count: 32)) }

    @Test func aTrustedDeviceIsDialledAndKeptWhileItsConnectionAnswers() async throws {
        let source = try #require(Self.loopback)
        let b = try await LoopbackNode.start("b", network: Self.patient)
        let a = try await LoopbackNode.start("a", network: Self.patient)
        defer {
            Task {
                await a.stop(); await b.stop()
            }
        }
        await LoopbackNode.trustEachOther(a, b)
        // Twice, a second apart: of two unconnected devices the larger ID waits for a second announcement.
        await a.net.discoveryReceived(Self.announcement(b.device, port: b.port), from: source)
        await a.net.discoveryReceived(
            Self.announcement(b.device, port: b.port), from: source, at: Date().addingTimeInterval(1))
        #expect(await a.net.peers().map(\.address) == ["127.0.0.1:\(b.port)"], "the discovered address is dialled")
        #expect(await eventually { await a.net.peers().first?.isConnected == true }, "the dial reached b")
        #expect(await a.net.discoveredAddresses(of: b.device) == ["127.0.0.1:\(b.port)"])

        // b now listens on another port too and announces only that one. Its connection answers
        // the probe that follows: it stays, and so does the verified address (Spec/discovery.md
        // §4.1). A device that really moved fails the probe (DiscoveryLifecycleTests).
        let moved = try #require(try await b.net.listen(host: "127.0.0.1", port: 0).port)
        await a.net.discoveryReceived(Self.announcement(b.device, port: moved), from: source)
        #expect(
            await eventually { await a.net.probesAnswered == 1 }, "the open connection was probed and answered")
        #expect(
            await a.net.peers().map(\.address) == ["127.0.0.1:\(b.port)"],
            "the verified address is still dialled, the new one not")
        #expect(await a.net.peers().first?.isConnected == true)
        #expect(await a.net.connectionCount == 1)
        #expect(await a.net.probesUnanswered == 0)

        // The same announcement again changes nothing, and probes nothing.
        await a.net.discoveryReceived(Self.announcement(b.device, port: moved), from: source)
        try await Task.sleep(for: .milliseconds(200))
        #expect(await a.net.peers().map(\.address) == ["127.0.0.1:\(b.port)"])
        #expect(await a.net.probesAnswered == 1)
    }

    /// A forged address of a trusted device is tried once while the device is not connected, and
    /// dropped when that dial fails; heard again at once, it is not dialled again; heard while a
    /// verified connection is open, it costs a probe and cuts nothing (Spec/discovery.md §4.1).
    @Test func aForgedAddressIsTriedOnceAndNeverCutsAVerifiedLink() async throws {
        let source = try #require(Self.loopback)
        let (small, large) = try await Self.trustedPair()
        defer {
            Task {
                await small.stop(); await large.stop()
            }
        }
        // Port 1 on loopback: nothing listens there (as a spoofer's address where TLS fails).
        await small.net.discoveryReceived(Self.announcement(large.device, port: 1), from: source)
        #expect(await small.net.peers().map(\.address) == ["127.0.0.1:1"], "a candidate is tried")
        #expect(await eventually { await small.net.peers().isEmpty }, "its failed dial drops it")
        await small.net.discoveryReceived(
            Self.announcement(large.device, port: 1), from: source, at: Date().addingTimeInterval(1))
        #expect(await small.net.peers().isEmpty, "heard again within its retry time: not dialled")

        await small.net.discoveryReceived(Self.announcement(large.device, port: large.port), from: source)
        #expect(
            await eventually { await small.net.peers().first?.isConnected == true },
            "the real address is dialled and verified")
        for _ in 0..<3 { await small.net.discoveryReceived(Self.announcement(large.device, port: 1), from: source) }
        #expect(await eventually { await small.net.probesAnswered == 1 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(await small.net.peers().map(\.address) == ["127.0.0.1:\(large.port)"])
        #expect(await small.net.peers().first?.isConnected == true)
        #expect(await small.net.connectionCount == 1)
        #expect(await small.net.probesAnswered == 1)
        #expect(await small.net.probesUnanswered == 0)
    }

    @Test func ofTwoDevicesTheSmallerDialsAndOneConnectionIsEnough() async throws {
        let source = try #require(Self.loopback)
        let (small, large) = try await Self.trustedPair()
        defer {
            Task {
                await small.stop(); await large.stop()
            }
        }
        // Both hear each other at once: only the smaller ID dials.
        await large.net.discoveryReceived(Self.announcement(small.device, port: small.port), from: source)
        await small.net.discoveryReceived(Self.announcement(large.device, port: large.port), from: source)
        #expect(await large.net.peers().isEmpty, "the larger device waits")
        #expect(await small.net.peers().map(\.address) == ["127.0.0.1:\(large.port)"])
        #expect(await eventually { await large.net.connectionCount == 1 })
        #expect(await eventually { await small.net.connectionCount == 1 })
        // The next announcement finds them connected: still one connection.
        await large.net.discoveryReceived(Self.announcement(small.device, port: small.port), from: source)
        await small.net.discoveryReceived(Self.announcement(large.device, port: large.port), from: source)
        #expect(await large.net.peers().isEmpty)
        try await Task.sleep(for: .milliseconds(200))
        #expect(await large.net.connectionCount == 1)
        #expect(await small.net.connectionCount == 1)
    }

    @Test func theLargerDeviceDialsWhenTheSmallerDoesNot() async throws {
        let source = try #require(Self.loopback)
        let (small, large) = try await Self.trustedPair()
        defer {
            Task {
                await small.stop(); await large.stop()
            }
        }
        await large.net.discoveryReceived(Self.announcement(small.device, port: small.port), from: source)
        #expect(await large.net.peers().isEmpty)
        // An interval later, still unconnected (the smaller one cannot reach it): it dials.
        await large.net.discoveryReceived(
            Self.announcement(small.device, port: small.port), from: source, at: Date().addingTimeInterval(1))
        #expect(await large.net.peers().map(\.address) == ["127.0.0.1:\(small.port)"])
        #expect(await eventually { await large.net.connectionCount == 1 })
    }

    @Test func aConfiguredAddressIsNeverStoppedByDiscovery() async throws {
        let source = try #require(Self.loopback)
        let b = try await LoopbackNode.start("b")
        let a = try await LoopbackNode.start("a")
        defer {
            Task {
                await a.stop(); await b.stop()
            }
        }
        await LoopbackNode.trustEachOther(a, b)
        await a.net.addPeer(host: "127.0.0.1", port: b.port)  // as `peer add --address` or `--peer` would
        await a.net.discoveryReceived(Self.announcement(b.device, port: b.port), from: source)
        await a.net.discoveryReceived(Self.announcement(b.device, port: 1), from: source)
        try await Task.sleep(for: .milliseconds(300))
        #expect(await a.net.peers().map(\.address).contains("127.0.0.1:\(b.port)"))
    }

    @Test func anUnknownDeviceIsListedNotDialledUntilTrusted() async throws {
        let source = try #require(Self.loopback)
        let b = try await LoopbackNode.start("b")
        let a = try await LoopbackNode.start("a")
        defer {
            Task {
                await a.stop(); await b.stop()
            }
        }
        await b.net.trust(a.device)
        await a.net.discoveryReceived(Self.announcement(b.device, port: b.port), from: source)
        #expect(await a.net.peers().isEmpty, "an untrusted device is never dialled")
        let listed = await a.net.discoveredDevices()
        #expect(listed.map(\.device) == [b.device] && listed.first?.addresses == ["127.0.0.1:\(b.port)"])
        // Its own announcement (another node with this device's identity) is ignored.
        await a.net.discoveryReceived(Self.announcement(a.device, port: 9), from: source)
        #expect(await a.net.discoveredDevices().count == 1)
        // Trusting it dials it at once, without waiting for its next announcement.
        await a.net.trust(b.device)
        #expect(await a.net.peers().map(\.address) == ["127.0.0.1:\(b.port)"])
        #expect(await eventually { await a.net.peers().first?.isConnected == true })
        // No longer trusted: no longer dialled.
        await a.net.distrust(b.device)
        #expect(await a.net.peers().isEmpty)
    }

    @Test func announcementsFromTheLANNamingLoopbackAreNotDialled() async throws {
        let lan = try SocketAddress(ipAddress: "10.77.0.9", port: 21_047)
        let d = try #require(Self.device(9))
        let a = DiscoveryAnnouncement(
            device: d, instance: 1,
            endpoints: [
                .init(host: .ipv4(0x7F00_0001), port: 7400), .init(host: .ipv4(0xEFFF_5348), port: 7400),
                .init(host: .ipv6(high: 0xFE80_0000_0000_0000, low: 1), port: 7400), .init(host: .source, port: 7401)
            ])
        #expect(NetworkNode.addresses(of: a, from: lan) == [PeerAddress(host: "10.77.0.9", port: 7401)])
        #expect(
            NetworkNode.addresses(of: a, from: try SocketAddress(ipAddress: "127.0.0.1", port: 1)).contains(
                PeerAddress(host: "127.0.0.1", port: 7400)))
    }

    @Test func whatIsAnnouncedOverEachFamilyForEachListeningAddress() {
        #expect(NetworkNode.endpoints(announcing: [("127.0.0.1", 7400), ("::1", 7400), ("localhost", 7400)]).isEmpty)
        let source = DiscoveryAnnouncement.Endpoint(host: .source, port: 7400)
        // 0.0.0.0 does not accept IPv6: an IPv6 packet's source address would not answer.
        #expect(NetworkNode.endpoints(announcing: [("0.0.0.0", 7400)]) == .init(ipv4: [source], ipv6: []))
        #expect(NetworkNode.endpoints(announcing: [("host.example", 7400)]) == .init(ipv4: [source], ipv6: []))
        #expect(NetworkNode.endpoints(announcing: [("::", 7400)]) == .init(ipv4: [source], ipv6: [source]))
        let v4 = DiscoveryAnnouncement.Endpoint(host: .ipv4(0x0A4D_0002), port: 7401)
        #expect(NetworkNode.endpoints(announcing: [("10.77.0.2", 7401)]) == .init(ipv4: [v4], ipv6: [v4]))
        let v6 = DiscoveryAnnouncement.Endpoint(host: .ipv6(high: 0xFD00_0000_0000_0000, low: 2), port: 7402)
        #expect(NetworkNode.endpoints(announcing: [("[fd00::2]", 7402)]) == .init(ipv4: [v6], ipv6: [v6]))
    }

    /// A link-local source over IPv6 carries its interface (`sin6_scope_id`): kept, so the address can be dialled.
    @Test func aLinkLocalAddressKeepsTheInterfaceItWasHeardOn() throws {
        let d = try #require(Self.device(9))
        let a = DiscoveryAnnouncement(
            device: d, instance: 1,
            endpoints: [
                .init(host: .ipv6(high: 0xFE80_0000_0000_0000, low: 1), port: 7400), .init(host: .source, port: 7401)
            ])
        let source = try #require(Self.scoped("fe80::5", interface: "lo"))
        #expect(
            NetworkNode.addresses(of: a, from: source) == [
                PeerAddress(host: "fe80::5%lo", port: 7401), PeerAddress(host: "fe80::1%lo", port: 7400)
            ])
        #expect(PeerAddress(host: "fe80::5%lo", port: 7401).description == "[fe80::5%lo]:7401")
        // Without an interface (the packet came over IPv4, or from a global address) a link-local address is dropped.
        let global = try SocketAddress(ipAddress: "fd00::5", port: 21_047)
        #expect(NetworkNode.addresses(of: a, from: global) == [PeerAddress(host: "fd00::5", port: 7401)])
    }

    @Test func aLinkLocalAddressIsDialledOnlyWhileNoOtherIsKnown() async throws {
        let (small, large) = try await Self.trustedPair()
        defer {
            Task {
                await small.stop(); await large.stop()
            }
        }
        let linkLocal = try #require(Self.scoped("fe80::7", interface: "lo"))
        await small.net.discoveryReceived(Self.announcement(large.device, port: large.port), from: linkLocal)
        #expect(
            await small.net.peers().map(\.address) == ["fe80::7%lo:\(large.port)"],
            "only a link-local address is known: dialled")
        // The same device over IPv4: that address is dialled, the link-local one (not connected) no longer.
        await small.net.discoveryReceived(
            Self.announcement(large.device, port: large.port), from: try #require(Self.loopback))
        #expect(await small.net.peers().map(\.address) == ["127.0.0.1:\(large.port)"])
        #expect(
            await small.net.discoveredAddresses(of: large.device) == [
                "127.0.0.1:\(large.port)", "[fe80::7%lo]:\(large.port)"
            ])
        #expect(await eventually { await small.net.peers().first?.isConnected == true })
    }

    /// The copies of one announcement (over IPv4, IPv6 and broadcast) arrive together: the
    /// larger device still waits for the next announcement, so that only the smaller dials.
    @Test func copiesOfOneAnnouncementDoNotMakeTheLargerDeviceDial() async throws {
        let source = try #require(Self.loopback)
        let (small, large) = try await Self.trustedPair()
        defer {
            Task {
                await small.stop(); await large.stop()
            }
        }
        let now = Date()
        await large.net.discoveryReceived(Self.announcement(small.device, port: small.port), from: source, at: now)
        await large.net.discoveryReceived(
            Self.announcement(small.device, port: small.port), from: source, at: now.addingTimeInterval(0.01))
        #expect(await large.net.peers().isEmpty, "a copy of the same announcement is not the next one")
        await large.net.discoveryReceived(
            Self.announcement(small.device, port: small.port), from: source, at: now.addingTimeInterval(1))
        #expect(
            await large.net.peers().map(\.address) == ["127.0.0.1:\(small.port)"], "the next announcement: it dials")
        #expect(await eventually { await large.net.connectionCount == 1 })
    }

    @Test func interfacesAreSortedByWhatTheySupport() throws {
        func device(
            _ name: String, _ ip: String, index: Int, multicast: Bool, broadcast: String? = nil, netmask: String? = nil
        ) throws -> NIONetworkDevice {
            let address = try SocketAddress(ipAddress: ip, port: 0)
            return NIONetworkDevice(
                name: name, address: address, netmask: try netmask.map { try SocketAddress(ipAddress: $0, port: 0) },
                broadcastAddress: try broadcast.map { try SocketAddress(ipAddress: $0, port: 0) },
                pointToPointDestinationAddress: address, multicastSupported: multicast, interfaceIndex: index)
        }
        let plan = DiscoveryInterfaces([
            try device("lo", "127.0.0.1", index: 1, multicast: false),
            try device("lo", "::1", index: 1, multicast: true),
            try device("eth0", "10.0.0.2", index: 2, multicast: true, broadcast: "10.0.0.255"),
            try device("eth0", "fe80::2", index: 2, multicast: true),
            try device("eth0", "fd00::2", index: 2, multicast: true),
            try device("wlan0", "10.1.0.2", index: 3, multicast: false, broadcast: "10.1.0.255"),
            try device("wlan0", "fe80::3", index: 3, multicast: false),
            // An address added without a broadcast address reports its own: the subnet's highest is used.
            try device("eth1", "10.2.0.2", index: 4, multicast: false, broadcast: "10.2.0.2", netmask: "255.255.255.0"),
            try device("tun0", "10.3.0.2", index: 5, multicast: false, netmask: "255.255.255.255")
        ])
        #expect(plan.ipv4Multicast.map(\.name) == ["eth0"])
        #expect(
            plan.ipv4Broadcast.map(\.ipAddress) == ["10.1.0.255", "10.2.0.255"],
            "multicast off: broadcast (none on a /32)")
        #expect(
            plan.ipv6Multicast.map(\.name) == ["eth0"],
            "each IPv6 interface once, loopback and non-multicast ones left out")
        let group = try SocketAddress(ipAddress: "ff12::5348", port: 0)
        guard case .v6(let scoped)? = DiscoveryInterfaces.destination(group, port: 21_047, interface: 2) else {
            Issue.record("not an IPv6 destination")
            return
        }
        #expect(scoped.address.sin6_scope_id == 2 && scoped.address.sin6_port == UInt16(21_047).bigEndian)
    }

    /// `address` on the interface `name`, as a packet from it arrives.
    static func scoped(_ address: String, interface name: String) -> SocketAddress? {
        guard let plain = try? SocketAddress(ipAddress: address, port: 21_047) else { return nil }
        return DiscoveryInterfaces.destination(plain, port: 21_047, interface: Int(if_nametoindex(name)))
    }

    @Test func theListIsBoundedAndKeepsTrustedDevices() throws {
        var table = DiscoveredDevices(limit: 4)
        let t0 = Date(timeIntervalSince1970: 1_000)
        let trusted = try #require(Self.device(0xEE))
        _ = table.record(
            trusted, instance: 1, addresses: [PeerAddress(host: "10.0.0.1", port: 1)], ipv6: false, pinned: true, at: t0
        )
        for i in 0..<300 {
            let d = try #require(DeviceID(bytes: [UInt8(i / 256), UInt8(i % 256)] + [UInt8](repeating: 0, count: 30)))
            _ = table.record(
                d, instance: 1, addresses: [PeerAddress(host: "10.0.0.2", port: i + 1)], ipv6: false, pinned: false,
                at: t0.addingTimeInterval(Double(i + 1)))
        }
        #expect(table.entries.count == 5, "four strangers and the trusted device")
        #expect(table.entries[trusted] != nil, "a flood of strangers never evicts a trusted device")
        #expect(
            table.entries.values.filter { !$0.isPinned }.map { $0.addresses.first?.port ?? 0 }.sorted() == [
                297, 298, 299, 300
            ],
            "the most recently heard strangers stay")
        #expect(table.expire(before: t0.addingTimeInterval(299)).count == 3)
    }

    @Test func anUpdateSaysWhatMovedAndKeepsTheOtherFamily() throws {
        var table = DiscoveredDevices(limit: 4)
        let d = try #require(Self.device(1))
        let v4 = PeerAddress(host: "10.0.0.1", port: 7400), v4b = PeerAddress(host: "10.0.0.2", port: 7400)
        let v6 = PeerAddress(host: "fd00::1", port: 7400)
        let now = Date()
        #expect(
            table.record(d, instance: 5, addresses: [v4], ipv6: false, pinned: false, at: now)
                == .init(isNew: true, restarted: false, added: [v4], removed: []))
        #expect(
            table.record(d, instance: 5, addresses: [v6], ipv6: true, pinned: false, at: now)
                == .init(isNew: false, restarted: false, added: [v6], removed: []))
        #expect(
            table.record(d, instance: 6, addresses: [v4b], ipv6: false, pinned: false, at: now)
                == .init(isNew: true, restarted: true, added: [v4b], removed: [v4]))
        #expect(table.entries[d]?.addresses == [v4b, v6])
    }
}
