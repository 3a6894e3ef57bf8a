// ShoalNode+Discovery: the devices heard on the LAN, and how each trusted device's addresses were found.

extension ShoalNode {
    /// How this node came to dial an address of a trusted device.
    public enum AddressSource: String, Sendable, Hashable, CaseIterable {
        /// Given with the device (`shoal peer add --address`, ``trustDevice(_:name:address:)``).
        case configured
        /// Heard from the device's announcements on the LAN (Spec/discovery.md).
        case discovered
        /// Given to the running node (`shoal serve --peer`, ``connect(to:port:)``).
        case peer
    }

    /// One address of a trusted device, where it came from and whether a connection to it is open.
    public struct DeviceAddress: Sendable, Hashable {
        /// `host:port`, IPv6 in brackets.
        public var address: String
        /// How the address was found.
        public var source: AddressSource
        /// Whether a connection this node dialled to it is open now.
        public var isConnected: Bool
    }

    /// The devices local discovery heard in its last few intervals, trusted or not, most
    /// recently heard first; empty when discovery is off (`DiscoveryConfiguration`).
    public func discoveredDevices() async -> [DiscoveredDevice] { await network.discoveredDevices() }

    /// What local discovery does now on each network interface — the groups joined, when an
    /// announcement last left and last arrived there, the last error — or nil when discovery
    /// does not run (off in `DiscoveryConfiguration`, or the node listens only on loopback).
    public func discoveryStatus() async -> DiscoveryStatus? { await network.discoveryStatus() }

    /// When `device` was last heard from since this node started: the last frame that arrived
    /// from it on a connection (open now or closed since; a connected peer sends at least a ping
    /// every `NetworkConfiguration.pingInterval`) and its last announcement through local
    /// discovery (Spec/discovery.md §4). Both nil for a device not heard from, or not trusted.
    public func lastSeen(of device: DeviceID) async -> DeviceLastSeen { await network.lastSeen(of: device) }

    /// The addresses of the trusted device `device`: configured ones, discovered ones, and the
    /// `--peer` addresses whose TLS handshake showed this device.
    public func addresses(of device: DeviceID) async -> [DeviceAddress] {
        let states = await network.peers()
        // PeerState.address is `host:port` without brackets; compare through that form.
        func key(_ text: String) -> String? { (try? Self.endpoint(text)).map { "\($0.host):\($0.port)" } }
        func connected(_ text: String) -> Bool { states.contains { $0.address == key(text) && $0.isConnected } }
        var out = [DeviceAddress]()
        for a in devices.first(where: { $0.device == device })?.addresses ?? [] {
            out.append(DeviceAddress(address: a, source: .configured, isConnected: connected(a)))
        }
        for a in await network.discoveredAddresses(of: device) {
            out.append(DeviceAddress(address: a, source: .discovered, isConnected: connected(a)))
        }
        for p in peerAddresses {
            let k = "\(p.host):\(p.port)"
            guard let state = states.first(where: { $0.address == k }), state.device == device else { continue }
            out.append(
                DeviceAddress(
                    address: p.host.contains(":") ? "[\(p.host)]:\(p.port)" : k, source: .peer,
                    isConnected: state.isConnected))
        }
        return out
    }
}
