// DiscoveryStatus: what local discovery does now, per interface — for `shoal status`.

public import Foundation

/// What local discovery does on each of the host's interfaces (Spec/discovery.md §3.1), as
/// ``NetworkNode/discoveryStatus()`` reports it.
public struct DiscoveryStatus: Sendable, Hashable {
    /// What local discovery does on one network interface.
    public struct Interface: Sendable, Hashable {
        /// The interface's name (`eth0`).
        public var name: String
        /// Its addresses that discovery uses, IPv4 and IPv6.
        public var addresses: [String]
        /// The multicast groups joined on it: the IPv4 group, the IPv6 group, both or neither.
        public var joined: [String]
        /// The broadcast addresses announcements go to on it (where multicast is unavailable).
        public var broadcast: [String]
        /// When an announcement last left through it.
        public var lastSent: Date?
        /// When an announcement of another device last arrived on it.
        public var lastHeard: Date?
        /// The error of the last join or send that failed on it, until an announcement leaves
        /// through it again.
        public var lastError: String?
    }

    /// The interfaces discovery uses now (up, with an address that can multicast or broadcast),
    /// in the order the host lists them. Empty while there is none: discovery waits for one.
    public var interfaces: [Interface]
    /// What keeps discovery from running fully (a socket that cannot be opened), if anything;
    /// it is tried again at each check of the interfaces.
    public var problems: [String]
    /// Announcements (datagrams) sent since discovery started.
    public var sent: Int
    /// Datagrams received that were not announcements (they did not decode), since it started.
    public var refused: Int
}
