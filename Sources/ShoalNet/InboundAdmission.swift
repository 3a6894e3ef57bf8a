// InboundAdmission: the places for accepted connections — how many, from one address, and which one gives its place up to a newer one.

import Logging
import NIOCore
import ShoalWire
import Synchronization

/// The places a node has for the connections it accepts (dialled ones are not counted): at most
/// ``NetworkConfiguration/maxInboundConnections`` at once, and at most
/// ``NetworkConfiguration/maxConnectionsPerAddress`` from one remote address.
///
/// A place is held by a stranger until its connection has completed TLS and shown a trusted
/// device's certificate; only then is it kept for good. When every place is taken, a new
/// connection takes the place of one that has not shown a trusted device, instead of being
/// refused (Spec/replication.md §2). Which one: a connection silent (no byte received) for
/// ``silentGrace`` first; then one from the address holding the most places not yet trusted;
/// among those, a silent one before one whose TLS handshake has begun; then the oldest.
///
/// Strangers that open idle connections from many addresses, and reopen each one closed,
/// therefore cannot keep a trusted device out: its connection sends its TLS hello at once and
/// comes from an address holding one place, so each stranger's new connection takes another
/// stranger's place until the trusted device has shown itself, milliseconds later. Only when
/// every place is held by a trusted device is a new connection refused; one from an address at
/// its own limit is refused too. Both are decided on acceptance, before TLS, so a refused
/// connection costs a socket and nothing more.
final class InboundAdmission: Sendable {
    /// How far an accepted connection has come: the earlier, the sooner it gives its place up.
    enum Phase {
        /// Accepted, and no byte received: TLS has not started. Evicted first once it has been
        /// silent for ``InboundAdmission/silentGrace``.
        case silent
        /// Bytes arrived (the TLS handshake has begun), but no trusted device has been shown.
        case handshaking
        /// TLS completed with a trusted device's certificate: its place is never taken.
        case trusted
    }

    /// What happens to new connections at the total limit, logged once each time it changes.
    enum Pressure {
        /// Below the limit: every connection within its address's limit is admitted.
        case normal
        /// At the limit: a new connection takes a place not held by a trusted device.
        case evicting
        /// At the limit, and every place is held by a trusted device: new connections are refused.
        case refusing
    }

    /// The answer to a new connection.
    enum Decision {
        /// It has a place; when `evicting` is not nil, that connection gave its place up and
        /// must be closed (``TrustGate/evict(_:)``).
        case admitted(evicting: (any Channel)?)
        /// It has none, for the reason given (naming the limit); it must be closed.
        case refused(String)
    }

    private struct Entry {
        let channel: any Channel
        let address: String
        /// The order of acceptance: a smaller one is older.
        let order: UInt64
        /// When it was accepted.
        let accepted: ContinuousClock.Instant
        var phase: Phase
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var byAddress: [String: Int] = [:]
        /// The places of each address not held by a trusted device.
        var untrustedByAddress: [String: Int] = [:]
        var trustedDevices: Set<DeviceID>
        var next: UInt64 = 0
        var refused = 0
        var evicted = 0
        var pressure = Pressure.normal
        /// The addresses with a connection refused for their limit since they were last below it.
        var addressesAtLimit: Set<String> = []
    }

    private let state: Mutex<State>
    private let maxTotal: Int
    private let maxPerAddress: Int
    private let logger: Logger

    init(maxTotal: Int, maxPerAddress: Int, trusting devices: Set<DeviceID>, logger: Logger) {
        self.maxTotal = max(1, maxTotal)
        self.maxPerAddress = max(1, maxPerAddress)
        self.logger = logger
        state = Mutex(State(trustedDevices: devices))
    }

    /// How long a connection may send nothing before it counts as silent (and is evicted
    /// first): its client's TLS hello may simply not have been read yet.
    static let silentGrace = Duration.milliseconds(250)

    private var totalLimit: String { "NetworkConfiguration.maxInboundConnections = \(maxTotal)" }
    private var addressLimit: String { "NetworkConfiguration.maxConnectionsPerAddress = \(maxPerAddress)" }

    /// Takes a place for `channel`, accepted from `address`, evicting a connection that has not
    /// shown a trusted device when every place is taken; every place taken is given back with
    /// ``release(_:)``.
    func admit(_ channel: any Channel, from address: String, at now: ContinuousClock.Instant = .now) -> Decision {
        let (decision, log) = state.withLock { s -> (Decision, (() -> Void)?) in
            let fromHere = s.byAddress[address, default: 0]
            if fromHere >= maxPerAddress {
                s.refused &+= 1
                let reason =
                    "\(fromHere) connections from \(address) are open, the limit for one address (\(addressLimit))"
                guard s.addressesAtLimit.insert(address).inserted else { return (.refused(reason), nil) }
                return (
                    .refused(reason),
                    { [logger, addressLimit] in
                        logger.notice(
                            "connections from one address are at its limit: more from it are refused until one closes",
                            metadata: ["remote": "\(address)", "limit": "\(addressLimit)"])
                    }
                )
            }
            var evicting: (any Channel)? = nil
            var log: (() -> Void)? = nil
            if s.entries.count >= maxTotal {
                guard let victim = Self.victim(in: s, at: now) else {
                    s.refused &+= 1
                    let reason =
                        "\(s.entries.count) connections are open, each of a trusted device: the limit (\(totalLimit))"
                    return (.refused(reason), s.pressure == .refusing ? nil : change(&s, to: .refusing))
                }
                evicting = remove(victim, from: &s)?.channel
                s.evicted &+= 1
                if s.pressure != .evicting { log = change(&s, to: .evicting) }
            }
            s.next &+= 1
            s.entries[ObjectIdentifier(channel)] = Entry(
                channel: channel, address: address, order: s.next, accepted: now, phase: .silent)
            // Counted after the eviction, which may have been from this address.
            s.byAddress[address, default: 0] &+= 1
            s.untrustedByAddress[address, default: 0] &+= 1
            return (.admitted(evicting: evicting), log)
        }
        log?()
        return decision
    }

    /// The connection that gives its place up to a new one, among those not held by a trusted
    /// device: one silent for ``silentGrace`` first; then the one from the address with the most
    /// of them; among those, one that is silent (even for less than the grace) before one whose
    /// handshake has begun; then the oldest.
    private static func victim(in s: State, at now: ContinuousClock.Instant) -> ObjectIdentifier? {
        let silentSince = now - silentGrace
        var best: (key: ObjectIdentifier, rank: Int, crowd: Int, heard: Int, order: UInt64)? = nil
        for (key, e) in s.entries where e.phase != .trusted {
            let heard = e.phase == .silent ? 0 : 1
            let rank = heard == 0 && e.accepted <= silentSince ? 0 : 1
            let crowd = s.untrustedByAddress[e.address, default: 0]
            if let b = best, (b.rank, -b.crowd, b.heard, b.order) < (rank, -crowd, heard, e.order) { continue }
            best = (key, rank, crowd, heard, e.order)
        }
        return best?.key
    }

    /// Takes `key`'s entry out of `s`, with its counts; nil when it is not there.
    private func remove(_ key: ObjectIdentifier, from s: inout State) -> Entry? {
        guard let e = s.entries.removeValue(forKey: key) else { return nil }
        let left = s.byAddress[e.address, default: 0] &- 1
        s.byAddress[e.address] = left > 0 ? left : nil
        if left < maxPerAddress { s.addressesAtLimit.remove(e.address) }
        if e.phase != .trusted {
            let untrusted = s.untrustedByAddress[e.address, default: 0] &- 1
            s.untrustedByAddress[e.address] = untrusted > 0 ? untrusted : nil
        }
        return e
    }

    /// Records the new pressure and returns its log line, to write outside the lock.
    private func change(_ s: inout State, to pressure: Pressure) -> () -> Void {
        s.pressure = pressure
        let open = s.entries.count, evicted = s.evicted, refused = s.refused
        let logger = self.logger, limit = totalLimit
        switch pressure {
        case .evicting:
            return {
                logger.warning(
                    "inbound connections are at their limit: each new one takes the place of the oldest that has not shown a trusted device",
                    metadata: [
                        "limit": "\(limit)", "open": "\(open)",
                        "hint": "hosts are opening connections that do not complete TLS; trusted devices still get in"
                    ])
            }
        case .refusing:
            return {
                logger.warning(
                    "inbound connections are at their limit, each of a trusted device: new connections are refused",
                    metadata: [
                        "limit": "\(limit)", "open": "\(open)", "hint": "raise the limit, or trust fewer devices"
                    ])
            }
        case .normal:
            return {
                logger.notice(
                    "inbound connections are below their limit again",
                    metadata: ["limit": "\(limit)", "open": "\(open)", "evicted": "\(evicted)", "refused": "\(refused)"]
                )
            }
        }
    }

    /// The connection of `channel` has received its first bytes: its TLS handshake has begun.
    func heard(_ channel: any Channel) {
        state.withLock { s in
            let key = ObjectIdentifier(channel)
            if s.entries[key]?.phase == .silent { s.entries[key]?.phase = .handshaking }
        }
    }

    /// The connection of `channel` completed TLS with `device`'s certificate: when the device is
    /// trusted, its place is never taken by another connection from now on.
    func shown(_ device: DeviceID, by channel: any Channel) {
        state.withLock { s in
            let key = ObjectIdentifier(channel)
            guard s.trustedDevices.contains(device), let e = s.entries[key], e.phase != .trusted else { return }
            s.entries[key]?.phase = .trusted
            let untrusted = s.untrustedByAddress[e.address, default: 0] &- 1
            s.untrustedByAddress[e.address] = untrusted > 0 ? untrusted : nil
        }
    }

    /// The devices whose connections keep their places once shown (the node's trusted devices).
    func trust(_ devices: Set<DeviceID>) {
        state.withLock { $0.trustedDevices = devices }
    }

    /// Gives back the place of `channel`, closed (nothing when it was evicted).
    func release(_ channel: any Channel) {
        let log = state.withLock { s -> (() -> Void)? in
            guard remove(ObjectIdentifier(channel), from: &s) != nil else { return nil }
            // Back to normal once a quarter of the places are free, so a flood that keeps the
            // node near its limit is logged once, not at each place freed and taken again.
            guard s.pressure != .normal, s.entries.count <= maxTotal - max(1, maxTotal / 4) else { return nil }
            return change(&s, to: .normal)
        }
        log?()
    }

    /// Connections refused for a limit since the node started.
    var refused: Int { state.withLock { $0.refused } }

    /// Connections closed to give their places to newer ones since the node started.
    var evicted: Int { state.withLock { $0.evicted } }

    /// The accepted connections holding a place now, by phase.
    var open: [Phase: Int] {
        state.withLock { s in s.entries.values.reduce(into: [:]) { $0[$1.phase, default: 0] += 1 } }
    }
}

/// Why an accepted connection was closed at once: a limit of ``InboundAdmission`` was reached.
struct InboundRefused: Error, CustomStringConvertible {
    let reason: String
    var description: String { "connection refused: \(reason)" }
}
