// ChangeHub: tells long polls and event streams when zones change, from one database subscription.

import Foundation
package import Shoal

/// Fans the node's changes out to the API's waiting requests: one database subscription
/// (``subscriptionID``) for all of them, and a bounded stream per listener.
///
/// A listener that falls more than 64 events behind loses the oldest; every event only says
/// "look again", so a lost one costs nothing once a later one arrives.
package actor ChangeHub {
    /// What a listener hears.
    package enum Event: Sendable {
        /// Records of these zones changed (locally or from a peer).
        case changed(Set<RecordZone.ID>)
        /// A conflict was met.
        case conflict(ConflictEvent)
    }

    /// The subscription the hub keeps while it runs.
    package static let subscriptionID = "shoal.http"

    private var listeners: [UInt64: AsyncStream<Event>.Continuation] = [:]
    private var nextID: UInt64 = 0
    /// The most listeners at once (long polls and event streams together).
    package let maxListeners: Int

    package init(maxListeners: Int) { self.maxListeners = maxListeners }

    /// A new listener's ID and stream.
    /// - Throws: ``APIError`` 429 `requestRateLimited` when ``maxListeners`` already listen.
    package func listen() throws(APIError) -> (id: UInt64, events: AsyncStream<Event>) {
        guard listeners.count < maxListeners else {
            var e = APIError(
                .tooManyRequests, ShoalError.Code.requestRateLimited.name,
                "\(maxListeners) requests already wait for changes; retry later or close an event stream")
            e.details["retryAfter"] = 1.0
            throw e
        }
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(64))
        nextID &+= 1
        listeners[nextID] = continuation
        return (nextID, stream)
    }

    /// Ends the listener `id`'s stream.
    package func stopListening(_ id: UInt64) {
        listeners.removeValue(forKey: id)?.finish()
    }

    /// Tells every listener.
    package func publish(_ event: Event) {
        for l in listeners.values { l.yield(event) }
    }

    /// Follows the node's changes and conflicts until cancelled, then drops its subscription.
    /// `observe` sees every notification first (the metrics' latency).
    package func run(node: ShoalNode, observe: @escaping @Sendable (StoreNotification) async -> Void) async {
        let notifications = await node.store.notifications()
        let conflicts = await node.conflicts()
        do {
            try await node.saveSubscription(Subscription(id: Self.subscriptionID, kind: .database(nil)))
        } catch {
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await e in conflicts { await self.publish(.conflict(e)) }
            }
            group.addTask {
                for await n in notifications where n.subscriptionID == Self.subscriptionID {
                    await observe(n)
                    await self.publish(.changed(n.zones))
                }
            }
            await group.waitForAll()
        }
        try? await node.deleteSubscription(id: Self.subscriptionID)
        for l in listeners.values { l.finish() }
        listeners = [:]
    }

    /// Waits until `zone` changes, or `seconds` pass; true when it changed.
    package static func wait(for zone: RecordZone.ID, in events: AsyncStream<Event>, seconds: Int) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await e in events { if case .changed(let zones) = e, zones.contains(zone) { return true } }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
