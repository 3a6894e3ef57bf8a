// Notifier: collects what a transaction changed and, once it commits, tells subscribers.

import ShoalWire

/// Collects changes during a write transaction and delivers them after commit.
final class Notifier: Sendable {
    func beginTransaction() {}
    func zoneChanged(_ id: RecordZone.ID, deleted: Bool) {}
    func recordChanged(zone: RecordZone.ID, old: Record?, new: Record) {}
    func commit(store: isolated Store) {}
    func rollback() {}
}
