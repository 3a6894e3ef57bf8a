// DiscoveryConfiguration: whether and how a node announces itself on its LAN and listens for others.

/// How a node takes part in local discovery (Spec/discovery.md): it multicasts an announcement
/// of its device ID and listening port now and then (over IPv4 and IPv6, and as an IPv4
/// broadcast on interfaces without multicast), and dials the trusted devices it hears.
///
/// Off by default in the library, so a program embedding Shoal sends nothing on the network it
/// did not ask for; `shoal serve` turns it on (`--no-discovery` turns it off). A node listening
/// only on loopback addresses never announces, whatever this says: nobody on the LAN could reach it.
public struct DiscoveryConfiguration: Sendable, Hashable {
    /// Whether the node announces itself and listens for announcements. Default false.
    public var isEnabled = false
    /// Time between two announcements; the first goes out at once. Default 30 s.
    public var interval: Duration = .seconds(30)
    /// The UDP port announcements go to and are received on. Default 21047 (Spec/discovery.md §3).
    public var port = 21_047
    /// The IPv4 multicast group announcements go to. Default 239.255.83.72 (Spec/discovery.md §3).
    public var ipv4Group = "239.255.83.72"
    /// The IPv6 multicast group announcements go to, on every IPv6 interface that supports
    /// multicast. Default ff12::5348: transient, link-local scope (Spec/discovery.md §3).
    public var ipv6Group = "ff12::5348"
    /// Most devices remembered that are not trusted (listed as discovered); past it the one heard
    /// from longest ago is forgotten. Default 256.
    public var maxDiscoveredDevices = 256
    /// How many intervals a device stays listed after its last announcement. Default 3.
    public var expiryIntervals = 3
    /// How often the host's interfaces are read again, so that discovery joins its groups on an
    /// interface that came up (and leaves those of one that went down), reopens a socket that
    /// failed, and announces at once on an interface or address that appeared. On Linux the
    /// kernel's notice of a link or address change (rtnetlink) also triggers a read at once, so
    /// this is only the fallback there. Default 5 s (Spec/discovery.md §3.1).
    public var interfaceCheckInterval: Duration = .seconds(5)
    /// How long a connected device has to answer a probe (a `ping`; any frame counts as the
    /// answer) after discovery heard it announce other addresses. Unanswered, the connection is
    /// closed and the announced addresses are dialled: the device likely moved. Answered, the
    /// connection stays and nothing is dialled: an announcement alone never cuts a working link.
    /// Default 2 s (Spec/discovery.md §4.1).
    public var probeTimeout: Duration = .seconds(2)
    /// Least time between two probes of one device's connections; a probe asked for sooner waits
    /// until then, so forged announcements cost at most one `ping` per device this often.
    /// Default 5 s (Spec/discovery.md §4.1).
    public var probeSpacing: Duration = .seconds(5)

    /// The defaults (discovery off).
    public init() {}

    /// How long after its last announcement a device is forgotten.
    var expiry: Duration { interval * max(1, expiryIntervals) }
}
