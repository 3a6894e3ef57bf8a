// AcknowledgementThrottle: when each peer's acknowledgements of a zone are written to the store.

import ShoalWire

/// When what a peer acknowledged of a zone reaches the store: at most once per ``interval`` per
/// peer and zone. An acknowledgement that comes sooner is held, merged with those that follow,
/// and written once the interval is up, so the last one of a burst is never lost (a tombstone
/// purge would wait for it forever). Acknowledgements merge by union, so their order does not
/// matter.
///
/// It reads no clock: the engine passes the time from ``SyncConfiguration/now``, so a simulation
/// that drives its own clock replays the same writes.
struct AcknowledgementThrottle {
    /// The shortest time between two writes for one peer and zone: a second, or none (every
    /// acknowledgement written as it comes).
    let interval: Duration

    init(interval: Duration = .seconds(1)) { self.interval = interval }

    /// When each peer's acknowledgement of each zone was last written.
    private var lastWrite: [PeerZone: ContinuousClock.Instant] = [:]
    /// What arrived within the interval of the last write, merged.
    private var held: [PeerZone: VersionVector] = [:]

    /// Notes that `key`'s peer acknowledged `knowledge` of its zone at `now`: what to write now,
    /// or nil when it is held until ``deadline``.
    mutating func note(_ knowledge: VersionVector, for key: PeerZone, at now: ContinuousClock.Instant)
        -> VersionVector?
    {
        if let last = lastWrite[key], now - last < interval {
            held[key] = (held[key] ?? VersionVector()).union(knowledge)
            return nil
        }
        lastWrite[key] = now
        guard let earlier = held.removeValue(forKey: key) else { return knowledge }
        return earlier.union(knowledge)
    }

    /// When the earliest held acknowledgement is due; nil when none is held.
    var deadline: ContinuousClock.Instant? {
        held.keys.compactMap { lastWrite[$0].map { $0 + interval } }.min()
    }

    /// How many acknowledgements are held.
    var heldCount: Int { held.count }

    /// What is held for `key`, merged; nil when nothing is.
    func held(for key: PeerZone) -> VersionVector? { held[key] }

    /// Takes the held acknowledgements due at `now`, by peer then zone, each noted as written at
    /// `now`.
    mutating func due(at now: ContinuousClock.Instant) -> [(key: PeerZone, knowledge: VersionVector)] {
        take(held.keys.filter { k in lastWrite[k].map { now - $0 >= interval } ?? true }, at: now)
    }

    /// Takes every held acknowledgement, due or not, by peer then zone, each noted as written at
    /// `now`: what a node stopping writes before it goes.
    mutating func all(at now: ContinuousClock.Instant) -> [(key: PeerZone, knowledge: VersionVector)] {
        take(Array(held.keys), at: now)
    }

    /// Takes the acknowledgements held for `keys`, by peer then zone, each noted as written at `now`.
    private mutating func take(_ keys: [PeerZone], at now: ContinuousClock.Instant) -> [(
        key: PeerZone, knowledge: VersionVector
    )] {
        keys.sorted { ($0.peer, $0.zone) < ($1.peer, $1.zone) }.compactMap { k in
            guard let knowledge = held.removeValue(forKey: k) else { return nil }
            lastWrite[k] = now
            return (k, knowledge)
        }
    }
}
