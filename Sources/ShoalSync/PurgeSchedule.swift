// PurgeSchedule: when a node purges its tombstones and deleted zones, and what it logs (Spec/replication.md §3.5.2–3.5.3, §4.1).

package import Logging
import ShoalStore

/// Purges a node's tombstones and deleted zones now and then.
///
/// Each round purges the tombstones every known peer of their zone has acknowledged, or older
/// than ``retention`` (a peer away past the purge resyncs in full: Spec/replication.md
/// §3.5.2–3.5.3), and the deleted zones every peer of the zone has announced deleted, or older
/// than ``retention`` (§4.1). What goes, and why, is the store's rule
/// (``SyncNode/purgeTombstones(retention:)``); this type only says when, and logs what happened.
package struct PurgeSchedule: Sendable {
    /// The time between two rounds.
    package var interval: Duration
    /// How long a tombstone or deleted zone waits for a peer that has not acknowledged it (nil:
    /// for ever).
    package var retention: Duration?
    /// Where each round's counts, and a failure, are logged.
    package var logger: Logger

    package init(interval: Duration, retention: Duration?, logger: Logger) {
        self.interval = interval
        self.retention = retention
        self.logger = logger
    }

    /// Runs a round every ``interval`` until the task is cancelled.
    package func run(on sync: SyncNode) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            await round(on: sync)
        }
    }

    /// One round: the counts purged are logged at `info`; a store failure is logged at
    /// `warning`, and the next round tries again.
    package func round(on sync: SyncNode) async {
        do throws(ShoalError) {
            let zonesBefore = await sync.statistics.zoneTombstonesPurged
            let n = try await sync.purgeTombstones(retention: retention)
            let zones = await sync.statistics.zoneTombstonesPurged &- zonesBefore
            if n > 0 { logger.info("purged tombstones", metadata: ["count": "\(n)"]) }
            if zones > 0 { logger.info("purged zone tombstones", metadata: ["count": "\(zones)"]) }
        } catch {
            logger.warning("could not purge tombstones", metadata: ["error": "\(error)"])
        }
    }
}
