// NetworkNode+Discovery: what the node does with announcements — dial trusted devices, list the others.

package import Foundation
import Logging
package import NIOCore
public import ShoalWire

extension NetworkNode {
    /// Starts local discovery (when ``DiscoveryConfiguration/isEnabled``) announcing the
    /// listening addresses `listening`, or, when it runs already, announces those from now on.
    /// Loopback addresses are never announced; with nothing else, discovery stays off.
    /// Returns whether discovery runs. Discovery does not fail to start: without a usable
    /// interface, or while its port cannot be bound, it waits and tries again (Spec/discovery.md §3.1).
    @discardableResult
    package func startDiscovery(listening: [(host: String, port: Int)]) async -> Bool {
        guard configuration.discovery.isEnabled, !stopped else { return false }
        let endpoints = Self.endpoints(announcing: listening)
        guard !endpoints.isEmpty else {
            configuration.logger.info(
                "local discovery off: this node listens only on loopback, where no other machine can reach it")
            return false
        }
        if let discovery {
            await discovery.announce(endpoints)
            return true
        }
        let d = LocalDiscovery(
            device: tls.deviceID, endpoints: endpoints, configuration: configuration.discovery,
            logger: configuration.logger, group: group)
        // Set before the first suspension, so a second call meanwhile updates this one.
        discovery = d
        await d.start { [weak self] announcement, source in await self?.discoveryReceived(announcement, from: source) }
        return true
    }

    /// Stops local discovery (the devices heard stay listed until they expire).
    package func stopDiscovery() async {
        let d = discovery
        discovery = nil
        await d?.stop()
    }

    /// What local discovery does now on each interface (joined, last sent, last heard, last
    /// error), or nil when it does not run (off, or the node listens only on loopback).
    public func discoveryStatus() async -> DiscoveryStatus? {
        await discovery?.status()
    }

    /// The devices local discovery heard within the last few intervals
    /// (``DiscoveryConfiguration/expiryIntervals``), trusted or not, most recently heard first.
    public func discoveredDevices() -> [DiscoveredDevice] {
        expireDiscovered(Date())
        return discovered.list()
    }

    /// What to announce over each family for the listening addresses (Spec/discovery.md §3):
    /// a specific address itself, over both; loopback nothing; 0.0.0.0 or a host name "the
    /// packet's source address" over IPv4 only, and `::` (which also accepts IPv4) over both —
    /// an IPv6 packet's source is reachable only if the node listens on IPv6.
    static func endpoints(announcing listening: [(host: String, port: Int)]) -> LocalDiscovery.Endpoints {
        var out = LocalDiscovery.Endpoints(ipv4: [], ipv6: [])
        for (text, port) in listening {
            guard let port = UInt16(exactly: port), port > 0 else { continue }
            let host = text.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            if host == "localhost" { continue }
            guard let address = try? SocketAddress(ipAddress: host, port: Int(port)) else {
                out.ipv4.append(.init(host: .source, port: port))
                continue
            }
            switch address {
            case .v4(let a):
                let ip = UInt32(bigEndian: a.address.sin_addr.s_addr)
                if ip >> 24 == 127 { continue }
                if ip == 0 {
                    out.ipv4.append(.init(host: .source, port: port))
                } else {
                    out.ipv4.append(.init(host: .ipv4(ip), port: port))
                    out.ipv6.append(.init(host: .ipv4(ip), port: port))
                }
            case .v6(let a):
                let bytes = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
                let high = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) },
                    low = bytes.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                if high == 0 && low == 1 { continue }
                let endpoint = DiscoveryAnnouncement.Endpoint(
                    host: high == 0 && low == 0 ? .source : .ipv6(high: high, low: low), port: port)
                out.ipv4.append(endpoint)
                out.ipv6.append(endpoint)
            default:
                continue
            }
        }
        return out
    }

    /// The text of an IP address of `source`; a link-local IPv6 address carries the interface
    /// it arrived on (`fe80::1%eth0`), which dialling it needs.
    static func host(of source: SocketAddress) -> String? {
        guard let ip = source.ipAddress else { return nil }
        guard case .v6(let a) = source, PeerAddress(host: ip, port: 0).isLinkLocal, a.address.sin6_scope_id != 0 else {
            return ip
        }
        return "\(ip)%\(interfaceName(a.address.sin6_scope_id))"
    }

    /// The name of the interface with index `index`, or the index itself as text.
    static func interfaceName(_ index: UInt32) -> String {
        var name = [CChar](repeating: 0, count: 64)
        guard if_indextoname(index, &name) != nil else { return String(index) }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The addresses to dial for an announcement that came from `source`.
    ///
    /// A link-local IPv6 address keeps the interface the packet came in on (`fe80::1%eth0`),
    /// and is skipped when the packet does not say it (it came over IPv4). Also skipped:
    /// multicast and unspecified addresses, and loopback addresses unless the packet itself came
    /// from loopback — a packet from the LAN naming 127.0.0.1 would only have this node dial itself.
    static func addresses(of announcement: DiscoveryAnnouncement, from source: SocketAddress) -> Set<PeerAddress> {
        let sourceIP = source.ipAddress ?? ""
        let fromLoopback = sourceIP.hasPrefix("127.") || sourceIP == "::1"
        // The interface of a packet from a link-local address, "%eth0", or nothing.
        let scope = host(of: source).flatMap { h in h.firstIndex(of: "%").map { String(h[$0...]) } }
        var out = Set<PeerAddress>()
        for e in announcement.endpoints {
            var host: String
            switch e.host {
            case .source:
                guard !sourceIP.isEmpty else { continue }
                host = sourceIP
            case .ipv4, .ipv6:
                host = e.host.text
            }
            let lower = host.lowercased()
            let loopback = lower.hasPrefix("127.") || lower == "::1"
            let multicast =
                lower.hasPrefix("ff") || (Int(lower.prefix { $0 != "." }).map { (224...255).contains($0) } ?? false)
            if multicast || lower == "0.0.0.0" || lower == "::" || (loopback && !fromLoopback) { continue }
            if PeerAddress(host: host, port: 0).isLinkLocal {
                guard let scope else { continue }
                host += scope
            }
            out.insert(PeerAddress(host: host, port: Int(e.port)))
        }
        return out
    }

    /// Handles one announcement of another device (Spec/discovery.md §4): lists it, and for a
    /// trusted device dials its new addresses while it is not connected, or probes its open
    /// connections when it announces other addresses while connected (§4.1). Nothing heard stops
    /// an address being dialled or closes a connection by itself. `now` is when it arrived.
    package func discoveryReceived(
        _ announcement: DiscoveryAnnouncement, from source: SocketAddress, at now: Date = Date()
    ) async {
        guard !stopped, announcement.device != tls.deviceID else { return }
        expireDiscovered(now)
        let addresses = Self.addresses(of: announcement, from: source)
        guard !addresses.isEmpty else { return }
        let device = announcement.device
        let isTrusted = trusted.contains(device)
        let update = discovered.record(
            device, instance: announcement.instance, addresses: addresses,
            ipv6: source.protocol == .inet6, pinned: isTrusted, at: now)
        // It may not have heard this node yet: tell it now rather than at the next interval — at
        // most once per device per interval, and a few times per interval in all, so forged
        // announcements with new instances cannot make this node announce on and on.
        if update.isNew, addressBook.mayReply(to: device, now: now) {
            configuration.logger.info(
                isTrusted ? "discovered a trusted device" : "discovered a device that is not trusted",
                metadata: [
                    "device": "\(device)", "addresses": "\(addresses.sorted().map(\.description))",
                    "hint": isTrusted ? "dialling it" : "trust it with `shoal peer add \(device)` if it is yours"
                ])
            await discovery?.announceSoon()
        }
        guard isTrusted else { return }
        lastAnnouncements[device] = now
        let connected = connections.values.contains { $0.device == device }
        let changed = !update.added.isEmpty || !update.removed.isEmpty
        if case .probe(let delay) = addressBook.heard(
            device, at: addresses, connected: connected, changed: changed, now: now)
        {
            planProbe(of: device, after: delay)
        }
        let restarted = update.restarted && addressBook.mayRestartDialers(device, now: now)
        dialDiscovered(device, restarted: restarted, at: now)
    }

    /// Probes `device`'s open connections after `delay` (Spec/discovery.md §4.1): each is sent a
    /// ping and has ``DiscoveryConfiguration/probeTimeout`` to answer with any frame. If one
    /// answers, nothing changes: the announcement alone does not cut a working link. If none
    /// does, they are closed and the device's discovered addresses dialled at once — it moved,
    /// and its old link went with the old address.
    func planProbe(of device: DeviceID, after delay: Duration) {
        probes[device]?.cancel()
        probes[device] = Task { [weak self] in
            if delay > .zero { try? await Task.sleep(for: delay) }
            guard !Task.isCancelled else { return }
            await self?.probe(device)
        }
    }

    /// The probe ``planProbe(of:after:)`` plans.
    func probe(_ device: DeviceID) async {
        defer {
            probes[device] = nil
            addressBook.probed(device)
        }
        let open = connections.filter { $0.value.device == device }
        guard !open.isEmpty else {
            dialDiscovered(device, moved: true)
            return
        }
        let timeout = configuration.discovery.probeTimeout
        var answered = false
        await withTaskGroup(of: Bool.self) { group in
            for c in open.values {
                let channel = c.channel
                group.addTask { await Self.probe(channel, within: timeout) }
            }
            for await a in group where a { answered = true }
        }
        if stopped { return }
        if answered {
            probesAnswered += 1
            configuration.logger.debug(
                "a connected device announced other addresses and its connection answered a probe: kept",
                metadata: ["device": "\(device.short)"])
            return
        }
        probesUnanswered += 1
        configuration.logger.info(
            "a connected device announced other addresses and its connection did not answer a probe: closing it and dialling them",
            metadata: [
                "device": "\(device.short)", "timeout": "\(timeout)",
                "addresses": "\(discovered.entries[device]?.addresses.sorted().map(\.description) ?? [])"
            ])
        for id in open.keys where connections[id] != nil { connections[id]?.channel.close(promise: nil) }
        dialDiscovered(device, moved: true)
    }

    /// Pings the peer of `channel` and returns whether any frame came back within `timeout`
    /// (``KeepaliveHandler/probe(within:on:)``); false when the connection is closed.
    static func probe(_ channel: any Channel, within timeout: Duration) async -> Bool {
        let loop = channel.eventLoop
        let answer = loop.flatSubmit { () -> EventLoopFuture<Bool> in
            guard let handler = try? channel.pipeline.syncOperations.handler(type: KeepaliveHandler.self) else {
                return loop.makeSucceededFuture(false)
            }
            return handler.probe(within: TimeAmount(timeout), on: loop)
        }
        return (try? await answer.get()) ?? false
    }

    /// A connection dialled to `key` was established as `device`: if discovery dials that
    /// address for that device, it is verified from now on (Spec/discovery.md §4.1).
    func discoveryDialVerified(_ key: String, device: DeviceID) {
        guard let address = discoveryDials.first(where: { $0.key == key }), addressBook.device(at: address) == device
        else { return }
        addressBook.verified(device, at: address, now: Date())
    }

    /// A dial of `key` showed `device` by mutual TLS but ended before a session was established
    /// (the peer closed it, or refused a frame). Returns whether discovery dials `key` for that
    /// very device; the address is then verified (Spec/discovery.md §4.1): the device is there,
    /// and the dial backs off as any refused dial does rather than stop.
    func discoveryDialShowed(_ key: String, _ device: DeviceID) -> Bool {
        guard let address = discoveryDials.first(where: { $0.key == key }), addressBook.device(at: address) == device
        else { return false }
        addressBook.verified(device, at: address, now: Date())
        return true
    }

    /// A dial of `key` failed with `failure`. For an address discovery dials, decides with the
    /// address book whether to stop (Spec/discovery.md §4.1) and stops; returns whether it did.
    func discoveryDialFailed(_ key: String, _ failure: DiscoveryAddressBook.Failure) -> Bool {
        guard let address = discoveryDials.first(where: { $0.key == key }), let device = addressBook.device(at: address)
        else { return false }
        let announced = discovered.entries[device]?.addresses.contains(address) ?? false
        guard addressBook.dialFailed(device, at: address, failure, announced: announced, now: Date()) else {
            return false
        }
        stopDialing(
            address,
            because: failure == .unreachable
                ? "it could not be reached and the device no longer announces it"
                : "mutual TLS there did not show the device \(device.short)")
        return true
    }

    /// Dials each discovered address of `device` that nothing dials yet, if it is trusted. An
    /// address already dialled is left to its dialler, except that one backing off after failed
    /// dials starts over when the device's node has restarted (it is likely up now). Link-local
    /// IPv6 addresses are dialled only when the device announced no other address; one that
    /// discovery dialled and that is not connected is no longer dialled once another is known.
    ///
    /// One connection per pair of devices is enough, and two nodes hearing each other at once
    /// would otherwise each dial the other (Spec/discovery.md §4): a device already connected is
    /// not dialled, and of two unconnected devices the one with the smaller ID dials at once; the
    /// other waits for one more announcement and dials then if still unconnected (the smaller one
    /// could not reach it). The copies of one announcement (over IPv4, IPv6 and broadcast) arrive
    /// within milliseconds, the next one at least a second later: a copy heard less than half a
    /// second after the one that deferred the dial is the same announcement. A device that moved
    /// (`moved`: its connections did not answer a probe), or was just trusted (`atOnce`), is
    /// dialled at once: its old connection is dead, or it may be backing off from our refusals.
    /// Candidate addresses (never verified) go through the address book's rate limits
    /// (Spec/discovery.md §4.1). `time` is when the announcement arrived.
    func dialDiscovered(
        _ device: DeviceID, restarted: Bool = false, moved: Bool = false, atOnce: Bool = false, at time: Date = Date()
    ) {
        guard trusted.contains(device), let entry = discovered.entries[device] else { return }
        let routable = entry.addresses.filter { !$0.isLinkLocal }
        let dialled = routable.isEmpty ? entry.addresses : routable
        for address in entry.addresses.subtracting(dialled) where peerStates[address.key]?.isConnected != true {
            stopDialing(address, because: "the device announces an address that is not link-local")
        }
        if !moved && !atOnce {
            if connections.values.contains(where: { $0.device == device }) {
                discoveryDeferred[device] = nil
                return
            }
            if tls.deviceID > device {
                guard let since = discoveryDeferred[device] else {
                    discoveryDeferred[device] = time
                    return
                }
                if time.timeIntervalSince(since) < 0.5 { return }
            }
        }
        discoveryDeferred[device] = nil
        var wanted = [PeerAddress]()
        for address in dialled.sorted() {
            if let state = peerStates[address.key] {
                if restarted, discoveryDials.contains(address), !state.isConnected, state.failures > 0 {
                    removePeer(host: address.host, port: address.port)
                    addPeer(host: address.host, port: address.port)
                    discoveryDials.insert(address)
                }
                continue
            }
            wanted.append(address)
        }
        // Candidates are rate-limited, and one that just failed waits (Spec/discovery.md §4.1).
        for address in addressBook.toDial(device, from: wanted, now: time) {
            configuration.logger.info(
                "dialling a discovered address", metadata: ["device": "\(device.short)", "address": "\(address)"])
            addPeer(host: address.host, port: address.port)
            discoveryDials.insert(address)
        }
    }

    /// Stops dialling `address` if discovery started dialling it (a configured or `--peer`
    /// address is never stopped here).
    func stopDialing(_ address: PeerAddress, because reason: String) {
        guard discoveryDials.remove(address) != nil else { return }
        configuration.logger.info(
            "no longer dialling a discovered address", metadata: ["address": "\(address)", "reason": "\(reason)"])
        removePeer(host: address.host, port: address.port)
    }

    /// Forgets the devices not heard for ``DiscoveryConfiguration/expiryIntervals`` intervals,
    /// and stops dialling those of their addresses that are not connected.
    func expireDiscovered(_ now: Date) {
        let expiry = configuration.discovery.expiry.components
        let cutoff = now.addingTimeInterval(-(Double(expiry.seconds) + Double(expiry.attoseconds) / 1e18))
        for e in discovered.expire(before: cutoff) {
            for address in e.addresses where peerStates[address.key]?.isConnected != true {
                stopDialing(
                    address, because: "no announcement from \(e.device.short) for \(configuration.discovery.expiry)")
            }
            // What was verified stays while a connection there is open (its dialer still asks).
            if !discoveryDials.contains(where: { addressBook.addresses(of: e.device)[$0] != nil }) {
                addressBook.forget(e.device)
            }
        }
    }

    /// The addresses discovery heard for `device` (`host:port`), for `shoal peer list`.
    public func discoveredAddresses(of device: DeviceID) -> [String] {
        discovered.entries[device].map { $0.addresses.sorted().map(\.description) } ?? []
    }

    /// Called when `device` becomes trusted or stops being trusted: it is kept or may be evicted
    /// from the list, and its discovered addresses are dialled or no longer dialled.
    func discoveryTrustChanged(_ device: DeviceID, trusted isTrusted: Bool) {
        discovered.pin(device, isTrusted)
        if isTrusted {
            dialDiscovered(device, atOnce: true)
        } else {
            discoveryDeferred[device] = nil
            probes.removeValue(forKey: device)?.cancel()
            for address in discovered.entries[device]?.addresses ?? [] {
                stopDialing(address, because: "the device is no longer trusted")
            }
            for address in addressBook.addresses(of: device).keys {
                stopDialing(address, because: "the device is no longer trusted")
            }
            addressBook.forget(device)
        }
    }
}
