// Notifier: collects what a write transaction changed and, once it commits, hands each listener a
// coalesced "something changed since token T" per subscription — never an unbounded queue.

import ShoalWire
import Synchronization

/// Collects changes during a write transaction (actor-isolated use) and delivers them to
/// listeners (any task) after commit. Memory per listener is bounded by the number of
/// subscriptions times ``maxRecordIDs``.
final class Notifier: Sendable {
    /// Record IDs kept per pending notification; beyond, the notification says it was truncated.
    static let maxRecordIDs = 100
    /// Changed records kept per transaction for query subscriptions; beyond, every query
    /// subscription of the zone fires (truncated).
    static let maxTransactionRecords = 10_000

    struct Transaction {
        var zones: [RecordZone.ID: Bool] = [:]  // zone → the zone itself was created/deleted
        var records: [(zone: RecordZone.ID, old: Record?, new: Record)] = []
        var overflow: Set<RecordZone.ID> = []
        var wantsRecords = false
    }

    struct Listener {
        var pending: [String: StoreNotification] = [:]
        var waiter: CheckedContinuation<StoreNotification?, Never>?
        var finished = false
    }

    struct State {
        var tx = Transaction()
        var listeners: [UInt64: Listener] = [:]
        var nextListener: UInt64 = 0
        var wantsRecords = false
    }

    let state = Mutex(State())

    func setWantsRecords(_ wants: Bool) { state.withLock { $0.wantsRecords = wants } }

    /// Starts collecting a transaction's changes.
    /// - Returns: whether it wants every changed record (``recordChanged(zone:old:new:)`` for each);
    ///   when false, one call per changed zone is enough.
    func beginTransaction() -> Bool {
        state.withLock { s in
            s.tx = Transaction()
            s.tx.wantsRecords = s.wantsRecords && !s.listeners.isEmpty
            return s.tx.wantsRecords
        }
    }

    func zoneChanged(_ id: RecordZone.ID, deleted: Bool) {
        state.withLock { $0.tx.zones[id] = true }
    }

    func recordChanged(zone: RecordZone.ID, old: Record?, new: Record) {
        state.withLock { s in
            if s.tx.zones[zone] == nil { s.tx.zones[zone] = false }
            guard s.tx.wantsRecords, !s.tx.overflow.contains(zone) else { return }
            if s.tx.records.count >= Self.maxTransactionRecords {
                s.tx.overflow.insert(zone)
            } else {
                s.tx.records.append((zone, old, new))
            }
        }
    }

    func rollback() { state.withLock { $0.tx = Transaction() } }

    /// Delivers the committed transaction: `before` holds the zones' states before it, from which
    /// each notification's "since" tokens are made.
    func commit(
        subscriptions: [Subscription], before: [RecordZone.ID: ZoneState], after: [RecordZone.ID: ZoneState],
        storeIncarnation: NodeID, databaseIncarnation: NodeID, databaseSequenceBefore: UInt64
    ) {
        state.withLock { s in
            let tx = s.tx
            s.tx = Transaction()
            if s.listeners.isEmpty || tx.zones.isEmpty || subscriptions.isEmpty { return }
            var fired = [String: StoreNotification]()
            for sub in subscriptions {
                var n = StoreNotification(subscriptionID: sub.id)
                for (zone, itself) in tx.zones {
                    guard let z = after[zone] ?? before[zone] else { continue }
                    var hit = false
                    if case .query = sub.kind, !itself {
                        if tx.overflow.contains(zone) {
                            hit = sub.fires(zone: zone, scope: z.scope, old: nil, new: nil)
                            n.isTruncated = true
                        }
                        for c in tx.records
                        where c.zone == zone && sub.fires(zone: zone, scope: z.scope, old: c.old, new: c.new) {
                            hit = true
                            n.add(c.new.id)
                        }
                    } else {
                        hit = sub.fires(zone: zone, scope: z.scope, old: nil, new: nil)
                        if hit, case .zone = sub.kind {
                            for c in tx.records where c.zone == zone { n.add(c.new.id) }
                            if tx.overflow.contains(zone) { n.isTruncated = true }
                        }
                    }
                    guard hit else { continue }
                    n.zones.insert(zone)
                    if let b = before[zone], !b.deleted {
                        n.since[zone] = ChangeToken(
                            .init(
                                kind: .zone, incarnation: b.incarnation, vector: b.vector,
                                cursor: .init(source: storeIncarnation, sequence: b.seq)))
                    }
                }
                if !n.zones.isEmpty {
                    if case .database = sub.kind {
                        n.databaseSince = ChangeToken(
                            .init(
                                kind: .database, incarnation: databaseIncarnation, vector: VersionVector(),
                                cursor: .init(source: storeIncarnation, sequence: databaseSequenceBefore)))
                    }
                    fired[sub.id] = n
                }
            }
            if fired.isEmpty { return }
            for key in Array(s.listeners.keys) {
                guard var l = s.listeners[key], !l.finished else { continue }
                for (id, n) in fired {
                    if let old = l.pending[id] { l.pending[id] = old.coalesced(with: n) } else { l.pending[id] = n }
                }
                if let w = l.waiter, let next = Self.pop(&l) {
                    l.waiter = nil
                    w.resume(returning: next)
                }
                s.listeners[key] = l
            }
        }
    }

    static func pop(_ l: inout Listener) -> StoreNotification? {
        guard let id = l.pending.keys.min() else { return nil }
        return l.pending.removeValue(forKey: id)
    }

    func addListener() -> UInt64 {
        state.withLock { s in
            s.nextListener += 1
            s.listeners[s.nextListener] = Listener()
            return s.nextListener
        }
    }

    func removeListener(_ id: UInt64) {
        let w = state.withLock { s -> CheckedContinuation<StoreNotification?, Never>? in
            let w = s.listeners[id]?.waiter
            s.listeners[id] = nil
            return w
        }
        w?.resume(returning: nil)
    }

    func next(_ id: UInt64) async -> StoreNotification? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<StoreNotification?, Never>) in
                let immediate: StoreNotification?? = state.withLock { s in
                    guard var l = s.listeners[id], !l.finished, !Task.isCancelled else { return .some(nil) }
                    if let n = Self.pop(&l) {
                        s.listeners[id] = l
                        return .some(n)
                    }
                    l.waiter = c
                    s.listeners[id] = l
                    return .none
                }
                if let immediate { c.resume(returning: immediate) }
            }
        } onCancel: {
            removeListener(id)
        }
    }
}
