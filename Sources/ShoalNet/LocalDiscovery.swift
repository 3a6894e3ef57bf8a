// LocalDiscovery: the UDP sockets of local discovery — send this device's announcement, receive others', follow the interfaces.

import Foundation
package import Logging
package import NIOCore
import NIOPosix
package import ShoalWire

/// Sends this device's ``DiscoveryAnnouncement`` (at once, then every interval, soon after
/// hearing a device for the first time, and at once when an interface or address appears) to
/// the IPv4 multicast group of ``DiscoveryConfiguration`` out of each IPv4 interface that
/// supports multicast, to the broadcast address of each IPv4 interface where multicast is
/// unavailable, and to the IPv6 group on each IPv6 interface; hands every valid announcement
/// from another device to `receive` (Spec/discovery.md §3).
///
/// It never gives up (§3.1): it starts with no usable interface and waits for one; it reads the
/// interfaces again every ``DiscoveryConfiguration/interfaceCheckInterval`` (and, on Linux, as
/// soon as the kernel reports a change), joins and leaves its groups as interfaces come and go,
/// and reopens a socket that failed. A failure is logged when it begins, changes or ends
/// (``DiscoveryProblems``), not at every attempt.
///
/// It decides nothing: ``NetworkNode`` keeps what was heard and dials trusted devices
/// (`NetworkNode+Discovery.swift`). Bounded: a datagram is read into at most
/// ``DiscoveryAnnouncement/maxBytes`` + 1 bytes (a longer one is refused whole), and at most 64
/// received datagrams wait for `receive`; more are dropped, the newest kept.
package actor LocalDiscovery {
    /// Called with each valid announcement of another device and the address it came from.
    package typealias Receive = @Sendable (DiscoveryAnnouncement, SocketAddress) async -> Void

    /// What a node announces over each family (Spec/discovery.md §3, "What").
    package struct Endpoints: Sendable, Hashable {
        /// Sent over IPv4, multicast and broadcast.
        package var ipv4: [DiscoveryAnnouncement.Endpoint]
        /// Sent over IPv6; nothing is sent there when empty (the node does not listen on IPv6).
        package var ipv6: [DiscoveryAnnouncement.Endpoint]

        package init(ipv4: [DiscoveryAnnouncement.Endpoint], ipv6: [DiscoveryAnnouncement.Endpoint]) {
            self.ipv4 = ipv4
            self.ipv6 = ipv6
        }

        /// Whether there is nothing to announce at all.
        package var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }
    }

    /// What discovery did last on one interface, for ``status()``.
    struct LinkRecord: Sendable {
        var lastSent: Date?
        var lastHeard: Date?
        var lastError: String?
    }

    let configuration: DiscoveryConfiguration
    let logger: Logger
    let group: any EventLoopGroup
    let device: DeviceID
    /// Random, chosen at start: it tells the receivers this node restarted.
    let instance = UInt64.random(in: 1...UInt64.max)
    /// What is announced, changed by ``announce(_:)``.
    var endpoints: Endpoints
    /// The interfaces as last read.
    var interfaces = DiscoveryInterfaces([])
    /// The sockets of each family, while open (`LocalDiscovery+Sockets.swift`).
    var ipv4 = Sockets(), ipv6 = Sockets()
    /// Where IPv4 broadcasts go: interfaces without multicast, and those where the join failed.
    var broadcasts: [(name: String, address: SocketAddress)] = []
    /// Per interface name, what discovery did there last.
    var links: [String: LinkRecord] = [:]
    /// Current failures, each logged once when it begins and once when it ends.
    var problems = DiscoveryProblems()
    /// The summary of where announcements go, as last logged.
    var loggedState: String?
    var sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation?
    var tasks: [Task<Void, Never>] = []
    #if os(Linux)
        var notifier: InterfaceChangeNotifier?
    #endif
    /// Set to announce before the interval is up (a new device was heard, an address appeared).
    var soon = false
    /// Set to read the interfaces before the check interval is up (the kernel reported a change,
    /// a socket failed).
    var recheck = false
    var stopped = false
    /// Datagrams dropped because they did not decode (for logs and tests).
    package internal(set) var refused = 0
    /// Datagrams sent (one announcement goes out as one datagram per destination).
    package internal(set) var sent = 0

    /// Creates the discovery of `device`, announcing `endpoints` under a fresh random instance.
    package init(
        device: DeviceID, endpoints: Endpoints, configuration: DiscoveryConfiguration, logger: Logger,
        group: any EventLoopGroup
    ) {
        self.configuration = configuration
        self.logger = logger
        self.group = group
        self.device = device
        self.endpoints = endpoints
    }

    /// Starts following the interfaces, announcing and receiving. It does not fail: with no
    /// usable interface, or a socket that cannot be opened yet, it says so in the log and tries
    /// again at each check of the interfaces.
    package func start(receive: @escaping Receive) {
        guard sink == nil, !stopped else { return }
        let (datagrams, sink) = AsyncStream<AddressedEnvelope<ByteBuffer>>.makeStream(
            bufferingPolicy: .bufferingNewest(64))
        self.sink = sink
        let me = device
        tasks.append(
            Task { [weak self] in
                for await d in datagrams {
                    var payload = d.data
                    let bytes = payload.readBytes(length: payload.readableBytes) ?? []
                    let decoded: DiscoveryAnnouncement
                    do {
                        decoded = try DiscoveryAnnouncement(decoding: bytes)
                    } catch {
                        await self?.countRefused(error, from: d.remoteAddress)
                        continue
                    }
                    // Our own packet, looped back by the kernel (IP_MULTICAST_LOOP), or another
                    // node of this device (a copy of its data directory): nothing to dial.
                    if decoded.device == me { continue }
                    await self?.heard(on: d.metadata?.packetInfo?.interfaceIndex)
                    await receive(decoded, d.remoteAddress)
                }
            })
        tasks.append(
            Task { [weak self] in
                await self?.run()
            })
        #if os(Linux)
            notifier = InterfaceChangeNotifier { [weak self] in
                Task { await self?.interfacesChanged() }
            }
        #endif
    }

    /// Reads the interfaces and announces, each at its time, until stopped: the interfaces at
    /// once and every check interval (or sooner, ``recheck``); the announcement at once, every
    /// interval, and after ``announceSoon()`` — never more than once a second.
    func run() async {
        let clock = ContinuousClock()
        var nextCheck = clock.now, nextAnnouncement = clock.now, lastAnnouncement: ContinuousClock.Instant?
        while !Task.isCancelled && !stopped {
            if recheck || clock.now >= nextCheck {
                recheck = false
                await refresh()
                nextCheck = clock.now + configuration.interfaceCheckInterval
            }
            let rested = lastAnnouncement.map { clock.now >= $0 + .seconds(1) } ?? true
            if !Task.isCancelled && !stopped && rested && (clock.now >= nextAnnouncement || soon) {
                soon = false
                await announceOnce()
                lastAnnouncement = clock.now
                nextAnnouncement = clock.now + configuration.interval
            }
            // Short naps rather than one long sleep, so a request to announce or check soon is seen.
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Reads the interfaces, opens what is closed, joins and leaves the groups to match, and
    /// asks for an announcement at once when an address appeared.
    func refresh() async {
        let now = DiscoveryInterfaces.current()
        let appeared = !now.addresses.subtracting(interfaces.addresses).isEmpty
        interfaces = now
        await openReceivers()
        await joinGroups()
        let names = Set(now.interfaceNames)
        links = links.filter { names.contains($0.key) }
        problems.forget(interfacesOtherThan: names)
        logState()
        if appeared { soon = true }
    }

    /// The kernel reported a link or address change: read the interfaces at the next turn.
    func interfacesChanged() { recheck = true }

    /// Logs where announcements go, when that changed since it was last logged.
    func logState() {
        let v4 = ipv4Summary(), v6 = ipv6Summary()
        let state = "\(v4) | \(v6)"
        guard state != loggedState else { return }
        loggedState = state
        let metadata: Logger.Metadata = [
            "ipv4": "\(v4)", "ipv6": "\(v6)", "interval": "\(configuration.interval)", "endpoints": "\(endpoints)"
        ]
        if broadcasts.isEmpty && ipv4.joined.isEmpty && ipv6.joined.isEmpty {
            logger.info(
                "local discovery waiting for a network interface: none is up with an address that can multicast or broadcast; it announces as soon as one is",
                metadata: metadata)
        } else if broadcasts.isEmpty && ipv4.joined.isEmpty {
            logger.info(
                "local discovery on over IPv6 only: no IPv4 interface can multicast or broadcast", metadata: metadata)
        } else {
            logger.info("local discovery on", metadata: metadata)
        }
    }

    /// For the log: where IPv4 announcements go.
    func ipv4Summary() -> String {
        var parts = [String]()
        let joined = interfaces.ipv4Multicast.filter { ipv4.joined[$0.interfaceIndex] != nil }.map(\.name)
        if !joined.isEmpty {
            parts.append("\(configuration.ipv4Group):\(configuration.port) on \(joined.joined(separator: ", "))")
        }
        if !broadcasts.isEmpty {
            parts.append(
                "broadcast "
                    + broadcasts.map { "\($0.address.ipAddress ?? "?"):\(configuration.port) (\($0.name))" }.joined(
                        separator: ", "))
        }
        return parts.isEmpty ? "none" : parts.joined(separator: "; ")
    }

    /// For the log: the interfaces the IPv6 group is joined on.
    func ipv6Summary() -> String {
        let joined = interfaces.ipv6Multicast.filter { ipv6.joined[$0.interfaceIndex] != nil }.map(\.name)
        return joined.isEmpty
            ? "none" : "[\(configuration.ipv6Group)]:\(configuration.port) on \(joined.joined(separator: ", "))"
    }

    /// Records the outcome of an attempt at `subject` (`error` nil: it worked) and logs it when
    /// that changed anything: `what` says what was attempted, `hint` what usually fixes a failure.
    func note(_ subject: DiscoveryProblems.Subject, _ error: (any Error)?, what: String, hint: String? = nil) {
        guard let change = problems.record(subject, error.map { "\($0)" }) else { return }
        switch change {
        case .began(let e), .changed(let e):
            let retry: String
            switch subject {
            case .receiving, .joining:
                retry =
                    "at each check of the interfaces (every \(configuration.interfaceCheckInterval)); logged again when it works"
            case .sending, .announcing: retry = "at each announcement; logged again when it works"
            }
            var metadata: Logger.Metadata = ["error": "\(e)", "retry": "\(retry)"]
            if let hint { metadata["hint"] = "\(hint)" }
            logger.notice("local discovery cannot \(what)", metadata: metadata)
        case .ended(let e):
            logger.info("local discovery can \(what) again", metadata: ["previous error": "\(e)"])
        }
    }

    func countRefused(_ error: any Error, from source: SocketAddress) {
        refused += 1
        logger.debug("refused a discovery datagram", metadata: ["from": "\(source)", "error": "\(error)"])
    }

    /// An announcement of another device arrived on the interface with index `index`.
    func heard(on index: Int?) {
        guard let index, let name = interfaces.names[index] else { return }
        links[name, default: LinkRecord()].lastHeard = Date()
    }

    /// Announces again soon (within a second): a device new to this node was heard, and should
    /// hear this one without waiting for the interval (Syncthing does the same).
    package func announceSoon() { soon = true }

    /// Changes the endpoints announced from the next announcement on.
    package func announce(_ endpoints: Endpoints) {
        self.endpoints = endpoints
    }

    /// What discovery does now on each interface.
    package func status() -> DiscoveryStatus {
        let list = interfaces.interfaceNames.map { name -> DiscoveryStatus.Interface in
            let record = links[name] ?? LinkRecord()
            var joined = [String]()
            if interfaces.ipv4Multicast.contains(where: { $0.name == name && ipv4.joined[$0.interfaceIndex] != nil }) {
                joined.append(configuration.ipv4Group)
            }
            if interfaces.ipv6Multicast.contains(where: { $0.name == name && ipv6.joined[$0.interfaceIndex] != nil }) {
                joined.append(configuration.ipv6Group)
            }
            return DiscoveryStatus.Interface(
                name: name, addresses: interfaces.addresses.filter { $0.interface == name }.map(\.address).sorted(),
                joined: joined, broadcast: broadcasts.filter { $0.name == name }.compactMap(\.address.ipAddress),
                lastSent: record.lastSent, lastHeard: record.lastHeard, lastError: record.lastError)
        }
        let sockets = problems.current.filter { $0.key.interface == nil }.map { subject, error in
            switch subject {
            case .receiving(let v6): "cannot receive over \(v6 ? "IPv6" : "IPv4"): \(error)"
            default: "cannot send over \(subject == .sending(ipv6: true) ? "IPv6" : "IPv4"): \(error)"
            }
        }.sorted()
        return DiscoveryStatus(interfaces: list, problems: sockets, sent: sent, refused: refused)
    }

    /// Stops announcing and receiving and closes the sockets.
    package func stop() async {
        stopped = true
        #if os(Linux)
            notifier?.stop()
            notifier = nil
        #endif
        let running = tasks
        tasks = []
        for t in running { t.cancel() }
        sink?.finish()
        sink = nil
        // Let a check of the interfaces under way end before closing, so it opens nothing more.
        for t in running { await t.value }
        await ipv4.closeAll()
        await ipv6.closeAll()
    }
}

/// Passes received datagrams to an `AsyncStream` (bounded by its buffering policy) that the
/// receiving sockets of both families share; ``LocalDiscovery/stop()`` finishes it.
final class DatagramSink: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation

    init(_ sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation) { self.sink = sink }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        sink.yield(unwrapInboundIn(data))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram socket stays usable after an error (an ICMP unreachable, say): keep it.
        // One NIO closes is reopened at the next check of the interfaces.
    }
}
