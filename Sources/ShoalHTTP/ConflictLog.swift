// ConflictLog: the last conflicts the node met, for the API and the console.

package import Foundation
package import Shoal

/// The most recent conflicts (at most ``capacity``), newest last, with when they were met.
package actor ConflictLog {
    /// One conflict and when it was met.
    package struct Entry: Sendable {
        package var event: ConflictEvent
        package var date: Date
    }

    /// The most entries kept.
    package let capacity: Int
    private var entries: [Entry] = []

    package init(capacity: Int = 200) { self.capacity = capacity }

    /// Keeps `event`, dropping the oldest beyond ``capacity``.
    package func record(_ event: ConflictEvent) {
        entries.append(Entry(event: event, date: Date()))
        if entries.count > capacity { entries.removeFirst(entries.count - capacity) }
    }

    /// The entries, oldest first.
    package func all() -> [Entry] { entries }

    /// Keeps every conflict the node meets until cancelled.
    package func run(node: ShoalNode) async {
        for await e in await node.conflicts() { record(e) }
    }
}
