// Subscription: a persisted request to be notified of changes — to a query, a zone or a database.

public import ShoalWire

/// A persisted request to be notified of changes (CloudKit's query, zone and database
/// subscriptions). Notifications arrive through ``Store/notifications()``.
public struct Subscription: Sendable, Hashable {
    /// What the subscription watches.
    public enum Kind: Sendable, Hashable {
        /// Records of the query's type in `zone` that match its predicate before or after a change
        /// (so creations, updates, deletions and records leaving the match all fire).
        case query(Query, zone: RecordZone.ID)
        /// Any change to the zone's records, or the zone's deletion.
        case zone(RecordZone.ID)
        /// Any zone of the database created, changed or deleted; all scopes when nil.
        case database(DatabaseScope?)
    }

    /// The subscription's ID, chosen by the caller; saving another with the same ID replaces it.
    public var id: String
    /// What it watches.
    public var kind: Kind

    /// Creates a subscription.
    public init(id: String, kind: Kind) {
        self.id = id
        self.kind = kind
    }

    /// Whether a change to `zone` (record `old` → `new`, or the zone itself when both are nil) fires it.
    func fires(zone: RecordZone.ID, scope: DatabaseScope, old: Record?, new: Record?) -> Bool {
        switch kind {
        case .database(let s): return s == nil || s == scope
        case .zone(let z): return z == zone
        case let .query(q, z):
            guard z == zone else { return false }
            if old == nil && new == nil { return true }
            func matches(_ r: Record?) -> Bool {
                guard let r, !r.isDeleted, r.recordType == q.recordType else { return false }
                return q.predicate.evaluate(r)
            }
            return matches(old) || matches(new)
        }
    }
}

extension Store {
    /// Saves (or replaces, by ID) a subscription; it persists across restarts.
    /// - Throws: `invalidArguments` for an empty ID or a query with an invalid record type.
    public func saveSubscription(_ s: Subscription) throws(ShoalError) {
        guard !s.id.isEmpty, s.id.utf8.count <= 255 else {
            throw .invalidArguments("subscription ID \(s.id.debugDescription) must be 1–255 UTF-8 bytes")
        }
        if case let .query(q, _) = s.kind, !Self.isIdentifier(q.recordType) {
            throw .invalidArguments(
                "subscription \(s.id) queries record type \(q.recordType.debugDescription), which is not a valid record type"
            )
        }
        try writeTransaction { () throws(ShoalError) in
            try db.statement("INSERT OR REPLACE INTO subscriptions(id, bytes) VALUES(?, ?)")
                .bind(1, s.id).bind(2, SubscriptionCoding.encode(s)).run()
        }
        subscriptions[s.id] = s
        updateWantsRecords()
    }

    func updateWantsRecords() {
        notifier.setWantsRecords(subscriptions.values.contains { if case .database = $0.kind { false } else { true } })
    }

    /// Deletes a subscription.
    /// - Throws: `unknownItem`-style `invalidArguments` when no subscription has that ID.
    public func deleteSubscription(id: String) throws(ShoalError) {
        guard subscriptions[id] != nil else {
            throw .invalidArguments("no subscription has ID \(id.debugDescription); list them with subscriptions()")
        }
        try writeTransaction { () throws(ShoalError) in
            try db.statement("DELETE FROM subscriptions WHERE id = ?").bind(1, id).run()
        }
        subscriptions[id] = nil
        updateWantsRecords()
    }

    /// Every saved subscription, sorted by ID.
    public func allSubscriptions() -> [Subscription] {
        subscriptions.values.sorted { $0.id < $1.id }
    }
}
