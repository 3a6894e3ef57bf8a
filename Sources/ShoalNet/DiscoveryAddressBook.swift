// DiscoveryAddressBook: which discovered addresses of trusted devices a node keeps, tries and drops, and how much an announcement may make it do.

package import Foundation
package import ShoalWire

/// What a node believes about the addresses local discovery heard for its trusted devices, and
/// the rate limits on what an announcement may make it do (Spec/discovery.md §4.1).
///
/// An announcement is not authenticated, so it only ever *adds* a candidate address; nothing
/// heard takes an address away. An address is **verified** once a connection dialled there
/// showed the device by mutual TLS; it is kept (and redialled when its connection ends) until a
/// dial there fails: at TLS (another device, or no handshake), or — when the device no longer
/// announces it — at TCP. A **candidate** (heard, never verified) gets one dial: if that fails it
/// is dropped, and dialled again only when heard again after ``Policy/candidateRetry``.
///
/// A pure value: the node asks it what to do and tells it what happened; time is passed in.
package struct DiscoveryAddressBook: Sendable {
    /// The limits, derived from the announcement interval.
    package struct Policy: Sendable, Hashable {
        /// The announcement interval (``DiscoveryConfiguration/interval``).
        package var interval: Duration
        /// Least time between two probes of one device's connections.
        package var probeSpacing: Duration
        /// A candidate whose dial failed is not dialled again for this long.
        package var candidateRetry: Duration
        /// Most candidate dials per device per interval.
        package var dialsPerInterval: Int
        /// Most announcements sent in reply to announcements heard, per interval, over all
        /// devices; and at most one per device per interval.
        package var repliesPerInterval: Int
        /// Most addresses kept per device; past it the candidate heard longest ago goes.
        package var maxAddresses: Int

        /// The limits for `configuration`: a probe at most every
        /// ``DiscoveryConfiguration/probeSpacing``, a failed candidate retried after half an
        /// interval, four candidate dials per device and four replies per interval, 32 addresses.
        package init(_ configuration: DiscoveryConfiguration) {
            interval = configuration.interval
            probeSpacing = configuration.probeSpacing
            candidateRetry = configuration.interval / 2
            dialsPerInterval = 4
            repliesPerInterval = 4
            maxAddresses = 32
        }
    }

    /// Where an address stands.
    package enum Standing: Sendable, Hashable {
        /// Heard in an announcement; no dial there has shown the device yet.
        case candidate
        /// A connection dialled there showed the device by mutual TLS.
        case verified
    }

    /// One address of one device.
    package struct Address: Sendable, Hashable {
        /// Verified or a candidate.
        package var standing: Standing
        /// When an announcement last named it.
        package var lastHeard: Date
        /// When its last dial failed, while it may not be dialled again.
        package var failedAt: Date?
    }

    /// How a dial of a discovered address ended without showing its device.
    package enum Failure: Sendable, Hashable {
        /// No TCP connection (refused, unreachable, timed out).
        case unreachable
        /// TCP connected, but mutual TLS did not show the device: another device answered or the
        /// handshake failed. (A dial that showed the device is verified, however it ended.)
        case notTheDevice
    }

    /// What to do about a device's addresses after an announcement.
    package enum Action: Sendable, Hashable {
        /// Nothing.
        case none
        /// Probe the device's open connections after this delay (zero: at once).
        case probe(after: Duration)
    }

    /// What the book holds for one device.
    struct Device: Sendable {
        var addresses: [PeerAddress: Address] = [:]
        /// When the last probe was started or is planned, and whether it is still to come.
        var lastProbe: Date?
        var probePending = false
        /// When candidate dials started, within the last interval.
        var dials: [Date] = []
        /// When dialers backing off were last made to start over for a new instance.
        var lastRestart: Date?
    }

    package let policy: Policy
    var devices: [DeviceID: Device] = [:]
    /// Replies sent within the last interval, by device.
    var replies: [DeviceID: Date] = [:]

    /// An empty book with `policy`'s limits.
    package init(policy: Policy) { self.policy = policy }

    /// The addresses kept for `device` and where each stands.
    package func addresses(of device: DeviceID) -> [PeerAddress: Address] { devices[device]?.addresses ?? [:] }

    /// The device whose address `address` is, if it is kept for exactly one.
    package func device(at address: PeerAddress) -> DeviceID? {
        let owners = devices.filter { $0.value.addresses[address] != nil }.map(\.key)
        return owners.count == 1 ? owners[0] : nil
    }

    /// Records that `device` announced `heard` at `now`. `connected`: a connection to it is
    /// open; `changed`: the announcement named other addresses than the one before it (of its
    /// family). Returns whether to probe: only a connected device heard at changed addresses is
    /// probed, at most once per ``Policy/probeSpacing`` (a probe asked for sooner is planned for
    /// when the spacing ends; one planned already covers it).
    package mutating func heard(
        _ device: DeviceID, at heard: Set<PeerAddress>, connected: Bool, changed: Bool, now: Date
    ) -> Action {
        var d = devices[device] ?? Device()
        for a in heard {
            if var known = d.addresses[a] {
                known.lastHeard = now
                d.addresses[a] = known
            } else {
                d.addresses[a] = Address(standing: .candidate, lastHeard: now, failedAt: nil)
            }
        }
        Self.bound(&d, to: policy.maxAddresses)
        var action = Action.none
        if connected && changed && !d.probePending {
            let due = d.lastProbe.map { $0.addingTimeInterval(policy.probeSpacing.inSeconds) } ?? now
            let wait = max(0, due.timeIntervalSince(now))
            d.lastProbe = max(now, due)
            d.probePending = true
            action = .probe(after: .seconds(wait))
        }
        devices[device] = d
        return action
    }

    /// Of `wanted` (addresses of `device` that nothing dials now), those to dial at `now`:
    /// verified ones always; a candidate unless its last dial failed less than
    /// ``Policy/candidateRetry`` ago, and only while the device's candidate dials in the last
    /// interval are fewer than ``Policy/dialsPerInterval``. Records the candidate dials.
    package mutating func toDial(_ device: DeviceID, from wanted: [PeerAddress], now: Date) -> [PeerAddress] {
        var d = devices[device] ?? Device()
        let windowStart = now.addingTimeInterval(-policy.interval.inSeconds)
        d.dials.removeAll { $0 <= windowStart }
        var out = [PeerAddress]()
        for a in wanted.sorted() {
            let known = d.addresses[a] ?? Address(standing: .candidate, lastHeard: now, failedAt: nil)
            if known.standing == .verified {
                out.append(a)
                continue
            }
            if let failed = known.failedAt, now.timeIntervalSince(failed) < policy.candidateRetry.inSeconds { continue }
            guard d.dials.count < policy.dialsPerInterval else { continue }
            d.dials.append(now)
            d.addresses[a] = Address(standing: .candidate, lastHeard: known.lastHeard, failedAt: nil)
            out.append(a)
        }
        devices[device] = d
        return out
    }

    /// A connection dialled to `address` showed `device` by mutual TLS.
    package mutating func verified(_ device: DeviceID, at address: PeerAddress, now: Date) {
        var d = devices[device] ?? Device()
        let heard = d.addresses[address]?.lastHeard ?? now
        d.addresses[address] = Address(standing: .verified, lastHeard: heard, failedAt: nil)
        Self.bound(&d, to: policy.maxAddresses)
        devices[device] = d
    }

    /// A dial of `address` for `device` failed with `failure`; `announced` says whether the
    /// device's last announcement (of that family) still named it. Returns whether to stop
    /// dialling it: a candidate's first failure stops it; a verified address stops only when TLS
    /// there did not show the device, or when TCP failed and the device no longer announces it.
    /// A stopped address stays known as a candidate, not dialled again before
    /// ``Policy/candidateRetry``.
    package mutating func dialFailed(
        _ device: DeviceID, at address: PeerAddress, _ failure: Failure, announced: Bool, now: Date
    ) -> Bool {
        guard var d = devices[device], var a = d.addresses[address] else { return true }
        let stop = a.standing == .candidate || failure == .notTheDevice || !announced
        if stop {
            a.standing = .candidate
            a.failedAt = now
            d.addresses[address] = a
            devices[device] = d
        }
        return stop
    }

    /// The probe of `device`'s connections planned by ``heard(_:at:connected:changed:now:)`` is
    /// over (answered or not); the next may be planned.
    package mutating func probed(_ device: DeviceID) {
        devices[device]?.probePending = false
    }

    /// Whether to announce soon in reply to an announcement of `device` that was new (a device or
    /// instance not heard before): at most once per device per interval, and at most
    /// ``Policy/repliesPerInterval`` times per interval in all. Records the reply.
    package mutating func mayReply(to device: DeviceID, now: Date) -> Bool {
        let windowStart = now.addingTimeInterval(-policy.interval.inSeconds)
        replies = replies.filter { $0.value > windowStart }
        guard replies[device] == nil, replies.count < policy.repliesPerInterval else { return false }
        replies[device] = now
        return true
    }

    /// Whether a new instance of `device` may make its dialers that back off start over, and its
    /// candidates that failed be dialled again at once (its node restarted: it is likely up now):
    /// at most once per interval. Records it, and clears the candidates' failures when it may.
    package mutating func mayRestartDialers(_ device: DeviceID, now: Date) -> Bool {
        var d = devices[device] ?? Device()
        if let last = d.lastRestart, now.timeIntervalSince(last) < policy.interval.inSeconds { return false }
        d.lastRestart = now
        for (a, var entry) in d.addresses where entry.failedAt != nil {
            entry.failedAt = nil
            d.addresses[a] = entry
        }
        devices[device] = d
        return true
    }

    /// Forgets `device` (no longer trusted, or not heard for the expiry).
    package mutating func forget(_ device: DeviceID) {
        devices[device] = nil
    }

    /// Keeps at most `limit` addresses: verified ones first, then the candidates heard last.
    static func bound(_ d: inout Device, to limit: Int) {
        guard d.addresses.count > limit else { return }
        let ranked = d.addresses.sorted { x, y in
            (x.value.standing == .verified ? 1 : 0, x.value.lastHeard, y.key) > (
                y.value.standing == .verified ? 1 : 0, y.value.lastHeard, x.key
            )
        }
        d.addresses = Dictionary(uniqueKeysWithValues: ranked.prefix(limit).map { ($0.key, $0.value) })
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var inSeconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}
