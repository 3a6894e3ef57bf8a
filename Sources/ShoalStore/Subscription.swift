// Subscription: a persisted request to be notified of changes (query, zone or database).

public import ShoalWire

/// A persisted subscription.
public struct Subscription: Sendable, Hashable {
    /// The subscription's ID, chosen by the caller.
    public var id: String
    static func loadAll(_ db: SQLiteDatabase) throws(ShoalError) -> [String: Subscription] { [:] }
}
