// DiscoveryInterfaces: the interfaces local discovery joins its groups on, and where it broadcasts.

package import NIOCore

/// The host's interfaces as local discovery uses them (Spec/discovery.md §3), chosen from
/// `System.enumerateDevices()`, which lists one device per interface address. Loopback
/// interfaces are left out: no other machine is there.
package struct DiscoveryInterfaces: Sendable {
    /// IPv4 interface addresses that support multicast: the IPv4 group is joined on each. Where
    /// the join fails, the address's broadcast address is used instead.
    package var ipv4Multicast: [NIONetworkDevice] = []
    /// The broadcast addresses (port 0) of IPv4 interfaces that do not support multicast.
    package var ipv4Broadcast: [SocketAddress] = []
    /// One IPv6 address of each interface that supports multicast, in interface order: the IPv6
    /// group is joined, and announcements sent, on each of these interfaces.
    package var ipv6Multicast: [NIONetworkDevice] = []

    /// Sorts `devices` into the three lists.
    package init(_ devices: [NIONetworkDevice]) {
        var ipv6Seen = Set<Int>()
        for device in devices {
            switch device.address {
            case .v4(let a)?:
                if UInt32(bigEndian: a.address.sin_addr.s_addr) >> 24 == 127 { continue }
                if device.multicastSupported {
                    ipv4Multicast.append(device)
                } else if let broadcast = Self.broadcast(of: device), !ipv4Broadcast.contains(broadcast) {
                    ipv4Broadcast.append(broadcast)
                }
            case .v6(let a)?:
                let loopback = withUnsafeBytes(of: a.address.sin6_addr) { $0.dropLast().allSatisfy { $0 == 0 } && $0.last == 1 }
                guard device.multicastSupported, !loopback, ipv6Seen.insert(device.interfaceIndex).inserted else { continue }
                ipv6Multicast.append(device)
            default:
                continue
            }
        }
    }

    /// The broadcast address of an IPv4 interface address: the one the interface reports, or,
    /// when it reports none (or its own address, as an address added without `brd` does), the
    /// subnet's highest address. None for /31 and /32 subnets, which have no broadcast address.
    package static func broadcast(of device: NIONetworkDevice) -> SocketAddress? {
        guard case .v4(let a)? = device.address else { return nil }
        let own = UInt32(bigEndian: a.address.sin_addr.s_addr)
        if case .v4(let b)? = device.broadcastAddress {
            let reported = UInt32(bigEndian: b.address.sin_addr.s_addr)
            if reported != 0 && reported != own { return device.broadcastAddress }
        }
        guard case .v4(let m)? = device.netmask else { return nil }
        let mask = UInt32(bigEndian: m.address.sin_addr.s_addr)
        guard mask.nonzeroBitCount <= 30 else { return nil }
        var raw = a.address
        raw.sin_addr.s_addr = (own | ~mask).bigEndian
        raw.sin_port = 0
        return SocketAddress(raw, host: "")
    }

    /// `address` with `port`, and for an IPv6 address, the interface `index` as its scope: a
    /// datagram to a link-local group leaves through the interface its scope names.
    static func destination(_ address: SocketAddress, port: Int, interface index: Int? = nil) -> SocketAddress? {
        switch address {
        case .v4(let a):
            guard let p = UInt16(exactly: port) else { return nil }
            var raw = a.address
            raw.sin_port = p.bigEndian
            return SocketAddress(raw, host: a.host)
        case .v6(let a):
            guard let p = UInt16(exactly: port) else { return nil }
            var raw = a.address
            raw.sin6_port = p.bigEndian
            if let index {
                guard let scope = UInt32(exactly: index) else { return nil }
                raw.sin6_scope_id = scope
            }
            return SocketAddress(raw, host: a.host)
        default:
            return nil
        }
    }
}
