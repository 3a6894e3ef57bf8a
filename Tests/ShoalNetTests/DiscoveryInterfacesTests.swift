// DiscoveryInterfacesTests: which interfaces discovery uses as they come and go, what it joins and leaves, and what it logs.

import NIOCore
import Testing
@testable import ShoalNet

/// The decisions behind local discovery's following of the interfaces (Spec/discovery.md §3.1),
/// without sockets: the sockets themselves are exercised by `DiscoveryLifecycleTests`, in
/// network namespaces.
@Suite struct DiscoveryInterfacesTests {
    static func device(_ name: String, _ ip: String, index: Int, multicast: Bool = true, broadcast: String? = nil)
        throws -> NIONetworkDevice
    {
        let address = try SocketAddress(ipAddress: ip, port: 0)
        return NIONetworkDevice(
            name: name, address: address,
            netmask: try SocketAddress(
                ipAddress: ip.contains(":") ? "ffff:ffff:ffff:ffff::" : "255.255.255.0", port: 0),
            broadcastAddress: try broadcast.map { try SocketAddress(ipAddress: $0, port: 0) },
            pointToPointDestinationAddress: address, multicastSupported: multicast, interfaceIndex: index)
    }

    @Test func interfacesThatAreDownAreLeftOut() throws {
        let devices = [
            try Self.device("eth0", "10.0.0.2", index: 2), try Self.device("eth0", "fe80::2", index: 2),
            try Self.device("eth1", "10.1.0.2", index: 3),
            try Self.device("wlan0", "10.2.0.2", index: 4, multicast: false, broadcast: "10.2.0.255")
        ]
        let all = DiscoveryInterfaces(devices)
        #expect(all.interfaceNames == ["eth0", "eth1", "wlan0"])
        let running = DiscoveryInterfaces(devices, running: ["eth1", "lo"])
        #expect(
            running.ipv4Multicast.map(\.name) == ["eth1"] && running.ipv6Multicast.isEmpty
                && running.ipv4BroadcastLinks.isEmpty)
        #expect(running.addresses == [.init(interface: "eth1", address: "10.1.0.2")])
        #expect(running.names == [3: "eth1"])
        #expect(DiscoveryInterfaces(devices, running: []).interfaceNames.isEmpty, "nothing up: discovery waits")
    }

    /// Two addresses on one interface: one join (a second would be refused), both addresses listed.
    @Test func oneJoinPerInterface() throws {
        let plan = DiscoveryInterfaces([
            try Self.device("eth0", "10.0.0.2", index: 2), try Self.device("eth0", "10.9.0.2", index: 2),
            try Self.device("eth0", "fe80::2", index: 2), try Self.device("eth0", "fd00::2", index: 2)
        ])
        #expect(plan.ipv4Multicast.map { $0.address?.ipAddress } == ["10.0.0.2"])
        #expect(plan.ipv6Multicast.map { $0.address?.ipAddress } == ["fe80::2"])
        #expect(plan.addresses.count == 4)
    }

    @Test func groupsAreJoinedAndLeftAsInterfacesComeAndGo() throws {
        let eth0 = try Self.device("eth0", "10.0.0.2", index: 2), eth1 = try Self.device("eth1", "10.1.0.2", index: 3)
        // Nothing joined yet, two interfaces: both joined.
        var (leave, join) = DiscoveryInterfaces.changes(joined: [:], wanted: [eth0, eth1], byAddress: true)
        #expect(leave.isEmpty && join.map(\.name) == ["eth0", "eth1"])
        // eth1 went down: left; eth0 kept.
        (leave, join) = DiscoveryInterfaces.changes(joined: [2: eth0, 3: eth1], wanted: [eth0], byAddress: true)
        #expect(leave.map(\.name) == ["eth1"] && join.isEmpty)
        // Nothing changed: nothing to do.
        (leave, join) = DiscoveryInterfaces.changes(joined: [2: eth0], wanted: [eth0], byAddress: true)
        #expect(leave.isEmpty && join.isEmpty)
        // eth0's IPv4 address changed: left with the old address, joined with the new one.
        let moved = try Self.device("eth0", "10.0.0.12", index: 2)
        (leave, join) = DiscoveryInterfaces.changes(joined: [2: eth0], wanted: [moved], byAddress: true)
        #expect(
            leave.map { $0.address?.ipAddress } == ["10.0.0.2"] && join.map { $0.address?.ipAddress } == ["10.0.0.12"])
        // An IPv6 membership holds to the interface: another address changes nothing.
        let v6 = try Self.device("eth0", "fe80::2", index: 2), v6b = try Self.device("eth0", "fe80::9", index: 2)
        (leave, join) = DiscoveryInterfaces.changes(joined: [2: v6], wanted: [v6b], byAddress: false)
        #expect(leave.isEmpty && join.isEmpty)
    }

    @Test func anAddressThatAppearsIsNoticed() throws {
        let before = DiscoveryInterfaces([try Self.device("eth0", "10.0.0.2", index: 2)])
        let after = DiscoveryInterfaces([
            try Self.device("eth0", "10.0.0.2", index: 2), try Self.device("eth1", "10.1.0.2", index: 3)
        ])
        #expect(after.addresses.subtracting(before.addresses) == [.init(interface: "eth1", address: "10.1.0.2")])
        #expect(before.addresses.subtracting(after.addresses).isEmpty)
    }

    /// While the network is down every attempt fails the same way: logged once when it begins,
    /// again only when the error changes, and once when it works again.
    @Test func aFailureIsLoggedOncePerChange() {
        var problems = DiscoveryProblems()
        let send = DiscoveryProblems.Subject.announcing(to: "239.255.83.72", interface: "eth0")
        #expect(problems.record(send, nil) == nil, "a success after a success: nothing to say")
        #expect(problems.record(send, "Network is unreachable") == .began("Network is unreachable"))
        for _ in 0..<100 { #expect(problems.record(send, "Network is unreachable") == nil) }
        #expect(problems.record(send, "No such device") == .changed("No such device"))
        #expect(problems.record(send, nil) == .ended("No such device"))
        #expect(problems.current.isEmpty)
        // A failure on an interface that went away is forgotten silently; a socket's stays.
        _ = problems.record(.joining(ipv6: false, interface: "eth1"), "No such device")
        _ = problems.record(.receiving(ipv6: false), "Address in use")
        problems.forget(interfacesOtherThan: ["eth0"])
        #expect(problems.current == [.receiving(ipv6: false): "Address in use"])
    }
}
