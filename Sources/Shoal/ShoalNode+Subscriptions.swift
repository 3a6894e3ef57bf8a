// ShoalNode+Subscriptions: atomic batches, subscriptions with one notification stream each, and
// the database's changes — CloudKit's modify, subscription and database-changes operations.

public import ShoalStore
public import ShoalWire

extension ShoalNode {
    /// Saves and deletes records in one request (CloudKit's `CKModifyRecordsOperation`).
    ///
    /// With `atomically` (the default) the items of each zone commit all or nothing: if one
    /// fails, the others of its zone fail with `batchRequestFailed`. Otherwise each item succeeds
    /// or fails alone. Saved records and deletions replicate as single saves do.
    /// - Returns: the saved records (with their new change tags) and the deleted IDs.
    /// - Throws: `ShoalError` `partialFailure` when some items failed (`partialErrors` holds
    ///   each one's error, `savedRecords` what was saved); `invalidArguments` for a malformed
    ///   request (an ID twice); `limitExceeded` for an atomic batch over the store's limit;
    ///   `operationCancelled` when the calling task is cancelled before the request starts
    ///   (nothing is saved or deleted then; once started, a request runs to its end).
    @discardableResult
    public func modify(
        saving: [Record] = [], deleting: [Record.ID] = [], policy: SavePolicy = .ifServerRecordUnchanged,
        atomically: Bool = true
    ) async throws(ShoalError) -> ModifyResult {
        if Task.isCancelled {
            throw .from(CancellationError(), doing: "saving \(saving.count) and deleting \(deleting.count) records")
        }
        return try await store.modify(saving: saving, deleting: deleting, policy: policy, atomically: atomically)
    }

    /// Saves a subscription (replacing one with the same ID); it persists across restarts.
    /// Its notifications arrive through ``notifications(of:)``.
    /// - Throws: `ShoalError` `invalidArguments` for an empty ID or a query with an invalid
    ///   record type.
    public func saveSubscription(_ subscription: Subscription) async throws(ShoalError) {
        try await store.saveSubscription(subscription)
    }

    /// Deletes the subscription with `id`; its streams get nothing more.
    /// - Throws: `ShoalError` `invalidArguments` when no subscription has that ID.
    public func deleteSubscription(id: String) async throws(ShoalError) {
        try await store.deleteSubscription(id: id)
    }

    /// The saved subscriptions.
    public func subscriptions() async -> [Subscription] { await store.allSubscriptions() }

    /// The notifications of the subscription with `id`, for changes committed after this call —
    /// saves and deletions made here and changes applied from peers alike.
    ///
    /// Iterate it once; it ends when the iterating task is cancelled. A consumer that falls
    /// behind gets one coalesced notification saying what changed since which tokens, so memory
    /// stays bounded; fetch ``changes(in:since:limit:)`` from its tokens to catch up.
    public func notifications(of id: String) async -> SubscriptionNotifications {
        SubscriptionNotifications(all: await store.notifications(), subscriptionID: id)
    }

    /// The zones created, changed or deleted since `token` (all zones when nil), in `scope` (every
    /// scope when nil), and the token to pass next time (CloudKit's database changes).
    /// - Throws: `ShoalError` `changeTokenExpired` for a token of another database;
    ///   `invalidArguments` for bytes that are not a database token.
    public func databaseChanges(since token: ChangeToken?, scope: DatabaseScope? = nil) async throws(ShoalError)
        -> DatabaseChanges
    {
        try await store.databaseChanges(since: token, scope: scope)
    }
}

/// The notifications of one subscription (``ShoalNode/notifications(of:)``).
public struct SubscriptionNotifications: AsyncSequence, Sendable {
    /// A notification: what changed since which tokens.
    public typealias Element = StoreNotification
    let all: StoreNotifications
    /// The subscription whose notifications this sequence yields.
    public let subscriptionID: String

    /// Iterates the subscription's notifications; `nil` once the task is cancelled.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let base: StoreNotifications.AsyncIterator
        let subscriptionID: String

        /// The subscription's next notification, waiting for one.
        public mutating func next() async -> StoreNotification? {
            while let n = await base.next() {
                if n.subscriptionID == subscriptionID { return n }
            }
            return nil
        }
    }

    /// Starts iterating.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: all.makeAsyncIterator(), subscriptionID: subscriptionID)
    }
}
