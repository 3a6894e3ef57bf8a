// DiscoveredDevices: what local discovery has heard — each device's addresses, instance and last announcement.

public import Foundation
public import ShoalWire

/// A device heard on the LAN through local discovery (Spec/discovery.md §4).
public struct DiscoveredDevice: Sendable, Hashable {
    /// The device the announcement named. Nothing proves it: mutual TLS does, on connecting.
    public var device: DeviceID
    /// Where it says it accepts connections, `host:port` (IPv6 in brackets).
    public var addresses: [String]
    /// When its last announcement arrived.
    public var lastSeen: Date
    /// The instance number of its last announcement (it changes when that node restarts).
    public var instance: UInt64
}

/// A peer address as ``NetworkNode/addPeer(host:port:)`` takes it.
package struct PeerAddress: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// An IP address (IPv6 without brackets).
    package var host: String
    /// A TCP port.
    package var port: Int

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Whether the host is an IPv6 address.
    package var isIPv6: Bool { host.contains(":") }
    /// Whether the host is a link-local IPv6 address (fe80::/10), with or without its interface.
    package var isLinkLocal: Bool {
        let lower = host.lowercased()
        return isIPv6 && ["fe8", "fe9", "fea", "feb"].contains { lower.hasPrefix($0) }
    }
    /// The key ``NetworkNode`` keeps dialled peers under.
    package var key: String { "\(host):\(port)" }
    /// `host:port`, IPv6 in brackets.
    package var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    package static func < (a: PeerAddress, b: PeerAddress) -> Bool { (a.host, a.port) < (b.host, b.port) }
}

/// The devices heard, bounded: trusted ones are kept (there are as many as the user trusted),
/// others at most `limit`, the one heard from longest ago forgotten first, so a flood of
/// forged device IDs costs a fixed amount of memory and never pushes out a trusted device.
package struct DiscoveredDevices: Sendable {
    package struct Entry: Sendable, Hashable {
        package var device: DeviceID
        package var instance: UInt64
        package var addresses: Set<PeerAddress>
        package var lastSeen: Date
        package var isPinned: Bool
    }

    /// What one announcement changed.
    package struct Update: Sendable, Equatable {
        /// The device was not listed, or its node restarted (a new instance).
        package var isNew: Bool
        /// The device's node restarted: listed before with another instance.
        package var restarted: Bool
        /// Addresses listed now that were not before.
        package var added: [PeerAddress]
        /// Addresses listed before and no longer: the device moved.
        package var removed: [PeerAddress]
    }

    /// Most entries that are not pinned.
    package let limit: Int
    package private(set) var entries: [DeviceID: Entry] = [:]

    package init(limit: Int) { self.limit = max(0, limit) }

    /// Records an announcement of `device` from an address of one family (IPv4 or IPv6).
    ///
    /// The device's addresses of that family become `addresses`; those of the other family stay,
    /// because a node announcing over both sends one packet per family, and neither says the
    /// other's address went away. `pinned` entries (trusted devices) are never evicted.
    package mutating func record(
        _ device: DeviceID, instance: UInt64, addresses: Set<PeerAddress>, ipv6: Bool,
        pinned: Bool, at now: Date
    ) -> Update {
        let old = entries[device]
        let kept: Set<PeerAddress> = old?.addresses.filter { $0.isIPv6 != ipv6 } ?? []
        let now = Entry(
            device: device, instance: instance, addresses: kept.union(addresses), lastSeen: now, isPinned: pinned)
        entries[device] = now
        let before = old?.addresses ?? []
        let update = Update(
            isNew: old == nil || old?.instance != instance, restarted: old.map { $0.instance != instance } ?? false,
            added: now.addresses.subtracting(before).sorted(), removed: before.subtracting(now.addresses).sorted())
        evict()
        return update
    }

    /// Marks `device` as trusted (kept) or not.
    package mutating func pin(_ device: DeviceID, _ pinned: Bool) {
        entries[device]?.isPinned = pinned
        evict()
    }

    /// Forgets and returns the devices last heard before `cutoff`.
    package mutating func expire(before cutoff: Date) -> [Entry] {
        let old = entries.values.filter { $0.lastSeen < cutoff }
        for e in old { entries[e.device] = nil }
        return old
    }

    /// Drops the unpinned entries heard from longest ago until at most `limit` remain.
    mutating func evict() {
        var unpinned = entries.values.filter { !$0.isPinned }
        guard unpinned.count > limit else { return }
        unpinned.sort { ($0.lastSeen, $0.device) < ($1.lastSeen, $1.device) }
        for e in unpinned.prefix(unpinned.count - limit) { entries[e.device] = nil }
    }

    /// The entries as users see them, most recently heard first.
    package func list(where include: (Entry) -> Bool = { _ in true }) -> [DiscoveredDevice] {
        entries.values.filter(include).sorted { ($0.lastSeen, $0.device) > ($1.lastSeen, $1.device) }.map {
            DiscoveredDevice(
                device: $0.device, addresses: $0.addresses.sorted().map(\.description), lastSeen: $0.lastSeen,
                instance: $0.instance)
        }
    }
}
