// StoreNotification and StoreNotifications: what a subscription's listener receives, as an
// AsyncSequence that coalesces while the consumer lags.

public import ShoalWire

/// "Something this subscription watches changed since these tokens."
///
/// Notifications coalesce: while a consumer has not taken one, later changes for the same
/// subscription merge into it, keeping the earliest "since" tokens, so a slow consumer receives
/// one notification saying everything changed since T — fetch ``Store/changes(in:since:limit:)``
/// from ``since`` to catch up — instead of an unbounded queue.
public struct StoreNotification: Sendable, Hashable {
    /// The subscription that fired.
    public var subscriptionID: String
    /// Zones with changes it watches.
    public var zones: Set<RecordZone.ID> = []
    /// Per zone, the change token from before the first change coalesced here (absent for zones
    /// created since).
    public var since: [RecordZone.ID: ChangeToken] = [:]
    /// For database subscriptions, the database token from before the first change.
    public var databaseSince: ChangeToken?
    /// Records that changed (matching, for query subscriptions), at most 100; see ``isTruncated``.
    public var recordIDs: [Record.ID] = []
    /// Whether more records changed than ``recordIDs`` lists.
    public var isTruncated = false

    init(subscriptionID: String) { self.subscriptionID = subscriptionID }

    mutating func add(_ id: Record.ID) {
        if recordIDs.contains(id) { return }
        if recordIDs.count < Notifier.maxRecordIDs { recordIDs.append(id) } else { isTruncated = true }
    }

    func coalesced(with later: StoreNotification) -> StoreNotification {
        var n = self
        n.zones.formUnion(later.zones)
        n.since.merge(later.since) { first, _ in first }
        n.databaseSince = databaseSince ?? later.databaseSince
        n.isTruncated = isTruncated || later.isTruncated
        for id in later.recordIDs { n.add(id) }
        return n
    }
}

/// The notifications of every subscription of a store, from when the sequence was made.
public struct StoreNotifications: AsyncSequence, Sendable {
    public typealias Element = StoreNotification
    let notifier: Notifier
    let id: UInt64

    /// Iterates notifications; ends when the task is cancelled.
    public final class AsyncIterator: AsyncIteratorProtocol {
        let notifier: Notifier
        let id: UInt64
        init(notifier: Notifier, id: UInt64) {
            self.notifier = notifier
            self.id = id
        }
        deinit { notifier.removeListener(id) }
        /// The next notification, waiting for one; nil once cancelled.
        public func next() async -> StoreNotification? { await notifier.next(id) }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(notifier: notifier, id: id) }
}

extension Store {
    /// Notifications for every subscription, for changes committed after this call — local saves
    /// and deletes, and changes applied from peers alike.
    ///
    /// Iterate it once. A consumer that falls behind gets one coalesced notification per
    /// subscription; memory stays bounded.
    public func notifications() -> StoreNotifications {
        StoreNotifications(notifier: notifier, id: notifier.addListener())
    }
}
