// DiscoveryInterfaces: the interfaces local discovery joins its groups on, and where it broadcasts.

package import NIOCore
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The host's interfaces as local discovery uses them (Spec/discovery.md §3), chosen from
/// `System.enumerateDevices()`, which lists one device per interface address. Loopback
/// interfaces are left out: no other machine is there. So are interfaces that are down or have
/// no carrier, when ``current()`` reads them: a join or a send there would only fail.
package struct DiscoveryInterfaces: Sendable {
    /// An address of an interface.
    package struct Address: Hashable, Sendable {
        /// The interface's name.
        package var interface: String
        /// The address, as text.
        package var address: String
    }

    /// One IPv4 address of each interface that supports multicast, in interface order: the IPv4
    /// group is joined on each, and announcements are sent out of each. Where the join fails,
    /// the address's broadcast address is used instead.
    package var ipv4Multicast: [NIONetworkDevice] = []
    /// The broadcast addresses (port 0) of IPv4 interfaces that do not support multicast, with
    /// the interface of each.
    package var ipv4BroadcastLinks: [(name: String, address: SocketAddress)] = []
    /// One IPv6 address of each interface that supports multicast, in interface order: the IPv6
    /// group is joined, and announcements sent, on each of these interfaces.
    package var ipv6Multicast: [NIONetworkDevice] = []

    /// Every address of the interfaces above: when one appears that was not there before, the
    /// node announces at once.
    package var addresses: Set<Address> = []
    /// The names of the interfaces above, by interface index.
    package var names: [Int: String] = [:]

    /// The broadcast addresses (port 0) of IPv4 interfaces that do not support multicast.
    package var ipv4Broadcast: [SocketAddress] { ipv4BroadcastLinks.map(\.address) }
    /// The names of the interfaces in use, by interface index.
    package var interfaceNames: [String] { names.sorted { $0.key < $1.key }.map(\.value) }

    /// Sorts `devices` into the three lists, leaving out the interfaces not named in `running`
    /// when it is given.
    package init(_ devices: [NIONetworkDevice], running: Set<String>? = nil) {
        var ipv4Seen = Set<Int>(), ipv6Seen = Set<Int>()
        for device in devices {
            if let running, !running.contains(device.name) { continue }
            switch device.address {
            case .v4(let a)?:
                if UInt32(bigEndian: a.address.sin_addr.s_addr) >> 24 == 127 { continue }
                if device.multicastSupported {
                    // One join per interface: a second address of it would be refused (EADDRINUSE).
                    if ipv4Seen.insert(device.interfaceIndex).inserted { ipv4Multicast.append(device) }
                } else if let broadcast = Self.broadcast(of: device) {
                    if !ipv4BroadcastLinks.contains(where: { $0.address == broadcast }) {
                        ipv4BroadcastLinks.append((device.name, broadcast))
                    }
                } else {
                    continue
                }
            case .v6(let a)?:
                let loopback = withUnsafeBytes(of: a.address.sin6_addr) {
                    $0.dropLast().allSatisfy { $0 == 0 } && $0.last == 1
                }
                guard device.multicastSupported, !loopback else { continue }
                if ipv6Seen.insert(device.interfaceIndex).inserted { ipv6Multicast.append(device) }
            default:
                continue
            }
            addresses.insert(Address(interface: device.name, address: device.address?.ipAddress ?? ""))
            names[device.interfaceIndex] = device.name
        }
    }

    /// The interfaces as they are now: `System.enumerateDevices()`, without those that are not
    /// up and running (`IFF_UP` and `IFF_RUNNING`). Empty when they cannot be read.
    package static func current() -> DiscoveryInterfaces {
        let devices = (try? System.enumerateDevices()) ?? []
        return DiscoveryInterfaces(devices, running: runningInterfaceNames())
    }

    /// The names of the interfaces that are up and have a carrier, from `getifaddrs`; nil when
    /// it fails (then no interface is left out for that).
    static func runningInterfaceNames() -> Set<String>? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        // IFF_UP and IFF_RUNNING have these values on Linux and the BSDs alike.
        let wanted: UInt32 = 0x1 | 0x40
        var names = Set<String>()
        for entry in sequence(first: first, next: { $0.pointee.ifa_next })
        where UInt32(entry.pointee.ifa_flags) & wanted == wanted {
            guard let name = entry.pointee.ifa_name else { continue }
            names.insert(String(cString: name))
        }
        return names
    }

    /// What to leave and to join so that a group is joined on exactly the interfaces of
    /// `wanted`, given those it is joined on now (`joined`, by interface index, with the address
    /// each join used). An IPv4 membership is named by the address it was joined with
    /// (`byAddress`): when its interface has another address now, it is left and joined again.
    /// An IPv6 one is named by the interface alone.
    package static func changes(
        joined: [Int: NIONetworkDevice], wanted: [NIONetworkDevice],
        byAddress: Bool
    ) -> (leave: [NIONetworkDevice], join: [NIONetworkDevice]) {
        let wantedByIndex = Dictionary(wanted.map { ($0.interfaceIndex, $0) }, uniquingKeysWith: { first, _ in first })
        let leave = joined.sorted { $0.key < $1.key }.compactMap { index, device -> NIONetworkDevice? in
            guard let now = wantedByIndex[index] else { return device }
            return byAddress && now.address?.ipAddress != device.address?.ipAddress ? device : nil
        }
        let left = Set(leave.map(\.interfaceIndex))
        let join = wanted.filter { joined[$0.interfaceIndex] == nil || left.contains($0.interfaceIndex) }
        return (leave, join)
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
