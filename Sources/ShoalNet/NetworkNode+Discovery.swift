// NetworkNode+Discovery: what the node does with announcements — dial trusted devices, list the others.

import Foundation
import Logging
package import NIOCore
public import ShoalWire

extension NetworkNode {
    /// Starts local discovery (when ``DiscoveryConfiguration/isEnabled``) announcing the
    /// listening addresses `listening`, or, when it runs already, announces those from now on.
    /// Loopback addresses are never announced; with nothing else, discovery stays off.
    /// Returns whether discovery runs. A failure to start (the port cannot be bound, no
    /// interface can join the group) is logged, not thrown: the node works without it.
    @discardableResult
    package func startDiscovery(listening: [(host: String, port: Int)]) async -> Bool {
        guard configuration.discovery.isEnabled, !stopped else { return false }
        let endpoints = Self.endpoints(announcing: listening)
        guard !endpoints.isEmpty else {
            configuration.logger.info("local discovery off: this node listens only on loopback, where no other machine can reach it")
            return false
        }
        if let discovery {
            await discovery.announce(endpoints)
            return true
        }
        let d = LocalDiscovery(device: tls.deviceID, endpoints: endpoints, configuration: configuration.discovery,
                               logger: configuration.logger, group: group)
        // Set before the first suspension, so a second call meanwhile updates this one.
        discovery = d
        do {
            try await d.start { [weak self] announcement, source in await self?.discoveryReceived(announcement, from: source) }
        } catch {
            configuration.logger.warning("local discovery could not start; trusted devices are dialled only at their configured addresses",
                                         metadata: ["port": "\(configuration.discovery.port)", "error": "\(error)"])
            if discovery === d { discovery = nil }
            return false
        }
        return true
    }

    /// Stops local discovery (the devices heard stay listed until they expire).
    package func stopDiscovery() async {
        let d = discovery
        discovery = nil
        await d?.stop()
    }

    /// The devices local discovery heard within the last few intervals
    /// (``DiscoveryConfiguration/expiryIntervals``), trusted or not, most recently heard first.
    public func discoveredDevices() -> [DiscoveredDevice] {
        expireDiscovered(Date())
        return discovered.list()
    }

    /// What to announce for the listening addresses: the unspecified address (or a host name)
    /// becomes "the packet's source address", a specific address itself, loopback nothing.
    static func endpoints(announcing listening: [(host: String, port: Int)]) -> [DiscoveryAnnouncement.Endpoint] {
        var out = [DiscoveryAnnouncement.Endpoint]()
        for (text, port) in listening {
            guard let port = UInt16(exactly: port), port > 0 else { continue }
            let host = text.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            if host == "localhost" { continue }
            guard let address = try? SocketAddress(ipAddress: host, port: Int(port)) else {
                out.append(.init(host: .source, port: port))
                continue
            }
            switch address {
            case .v4(let a):
                let ip = UInt32(bigEndian: a.address.sin_addr.s_addr)
                if ip >> 24 == 127 { continue }
                out.append(.init(host: ip == 0 ? .source : .ipv4(ip), port: port))
            case .v6(let a):
                let bytes = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
                let high = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, low = bytes.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                if high == 0 && low == 1 { continue }
                out.append(.init(host: high == 0 && low == 0 ? .source : .ipv6(high: high, low: low), port: port))
            default:
                continue
            }
        }
        return out
    }

    /// The addresses to dial for an announcement that came from `source`.
    ///
    /// Skipped: IPv6 link-local addresses (dialling one needs the interface, which an address
    /// string here cannot carry), multicast and unspecified addresses, and loopback addresses
    /// unless the packet itself came from loopback — a packet from the LAN naming 127.0.0.1 would
    /// only have this node dial itself.
    static func addresses(of announcement: DiscoveryAnnouncement, from source: SocketAddress) -> Set<PeerAddress> {
        let sourceIP = source.ipAddress ?? ""
        let fromLoopback = sourceIP.hasPrefix("127.") || sourceIP == "::1"
        var out = Set<PeerAddress>()
        for e in announcement.endpoints {
            let host: String
            switch e.host {
            case .source:
                guard !sourceIP.isEmpty else { continue }
                host = sourceIP
            case .ipv4, .ipv6:
                host = e.host.text
            }
            let lower = host.lowercased()
            let loopback = lower.hasPrefix("127.") || lower == "::1"
            let multicast = lower.hasPrefix("ff") || (Int(lower.prefix { $0 != "." }).map { (224...255).contains($0) } ?? false)
            if lower.hasPrefix("fe80:") || multicast || lower == "0.0.0.0" || lower == "::" || (loopback && !fromLoopback) { continue }
            out.insert(PeerAddress(host: host, port: Int(e.port)))
        }
        return out
    }

    /// Handles one announcement of another device (Spec/discovery.md §4): lists it, and for a
    /// trusted device dials its addresses and stops dialling the ones it no longer announces.
    package func discoveryReceived(_ announcement: DiscoveryAnnouncement, from source: SocketAddress) async {
        guard !stopped, announcement.device != tls.deviceID else { return }
        let now = Date()
        expireDiscovered(now)
        let addresses = Self.addresses(of: announcement, from: source)
        guard !addresses.isEmpty else { return }
        let isTrusted = trusted.contains(announcement.device)
        let update = discovered.record(announcement.device, instance: announcement.instance, addresses: addresses,
                                       ipv6: source.protocol == .inet6, pinned: isTrusted, at: now)
        if update.isNew {
            configuration.logger.info(isTrusted ? "discovered a trusted device" : "discovered a device that is not trusted", metadata: [
                "device": "\(announcement.device)", "addresses": "\(addresses.sorted().map(\.description))",
                "hint": isTrusted ? "dialling it" : "trust it with `shoal peer add \(announcement.device)` if it is yours",
            ])
            // It may not have heard this node yet: tell it now rather than at the next interval.
            await discovery?.announceSoon()
        }
        guard isTrusted else { return }
        for old in update.removed { stopDialing(old, because: "the device now announces \(addresses.sorted().map(\.description))") }
        dialDiscovered(announcement.device, restarted: update.restarted, moved: !update.removed.isEmpty)
    }

    /// Dials each discovered address of `device` that nothing dials yet, if it is trusted. An
    /// address already dialled is left to its dialler, except that one backing off after failed
    /// dials starts over when the device's node has restarted (it is likely up now).
    ///
    /// One connection per pair of devices is enough, and two nodes hearing each other at once
    /// would otherwise each dial the other (Spec/discovery.md §4): a device already connected is
    /// not dialled, and of two unconnected devices the one with the smaller ID dials at once; the
    /// other waits for one more announcement and dials then if still unconnected (the smaller one
    /// could not reach it). A device that moved (`moved`), or was just trusted (`now`), is dialled
    /// at once: its old connection is likely dead, or it may be backing off from our refusals.
    func dialDiscovered(_ device: DeviceID, restarted: Bool = false, moved: Bool = false, now: Bool = false) {
        guard trusted.contains(device), let entry = discovered.entries[device] else { return }
        if !moved && !now {
            if connections.values.contains(where: { $0.device == device }) {
                discoveryDeferred.remove(device)
                return
            }
            if tls.deviceID > device && discoveryDeferred.insert(device).inserted { return }
        }
        discoveryDeferred.remove(device)
        for address in entry.addresses.sorted() {
            if let state = peerStates[address.key] {
                if restarted, discoveryDials.contains(address), !state.isConnected, state.failures > 0 {
                    removePeer(host: address.host, port: address.port)
                    addPeer(host: address.host, port: address.port)
                    discoveryDials.insert(address)
                }
                continue
            }
            configuration.logger.info("dialling a discovered address", metadata: ["device": "\(device.short)", "address": "\(address)"])
            addPeer(host: address.host, port: address.port)
            discoveryDials.insert(address)
        }
    }

    /// Stops dialling `address` if discovery started dialling it (a configured or `--peer`
    /// address is never stopped here).
    func stopDialing(_ address: PeerAddress, because reason: String) {
        guard discoveryDials.remove(address) != nil else { return }
        configuration.logger.info("no longer dialling a discovered address", metadata: ["address": "\(address)", "reason": "\(reason)"])
        removePeer(host: address.host, port: address.port)
    }

    /// Forgets the devices not heard for ``DiscoveryConfiguration/expiryIntervals`` intervals,
    /// and stops dialling those of their addresses that are not connected.
    func expireDiscovered(_ now: Date) {
        let expiry = configuration.discovery.expiry.components
        let cutoff = now.addingTimeInterval(-(Double(expiry.seconds) + Double(expiry.attoseconds) / 1e18))
        for e in discovered.expire(before: cutoff) {
            for address in e.addresses where peerStates[address.key]?.isConnected != true {
                stopDialing(address, because: "no announcement from \(e.device.short) for \(configuration.discovery.expiry)")
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
            dialDiscovered(device, now: true)
        } else {
            discoveryDeferred.remove(device)
            for address in discovered.entries[device]?.addresses ?? [] { stopDialing(address, because: "the device is no longer trusted") }
        }
    }
}
