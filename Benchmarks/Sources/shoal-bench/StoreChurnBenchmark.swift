// StoreChurnBenchmark: records created and deleted over and over on two replicating stores with
// tombstone purging — how many tombstones stay and how much disk the churn leaves behind.

import Foundation
import Shoal
import ShoalSamples

/// `store case=churn`: `SHOAL_BENCH_CHURN` create-then-delete cycles (default 100,000; the
/// target is for 1,000,000; 0 skips the case) on store A, replicated to store B in batches of
/// 2,000 through the change feed, each side acknowledging what it holds to the other (as
/// replication does) and purging after every batch. 10,000 records stay live throughout.
///
/// Line: `store case=churn cycles= live_records= tombstones_left= db_bytes_before= db_bytes_after=
/// file_bytes_after= growth= purged= purge_records_per_s=`, where `db_bytes_*` are store A's bytes
/// in use (``StorageUsage/usedBytes``) before and after the churn, `growth` their ratio (goal ≤ 1.5),
/// and `file_bytes_after` its database file (free pages included, which later writes reuse).
enum StoreChurnBenchmark {
    static var cycles: Int { Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_CHURN"] ?? "") ?? 100_000 }
    static let zone = RecordZone.ID(name: "churn")
    static let batch = 2_000

    static func record(_ name: String, rng: inout SplitMix64) -> Record {
        var r = Record(recordType: "Item", id: Record.ID(name: name, zone: zone))
        r["text"] = .string(NotesCorpus.sentence(words: 6, using: &rng))
        r["title"] = .string("Item \(name)")
        r["score"] = .double(Double(rng.next() % 1000) / 10)
        return r
    }

    static func run() async throws {
        let n = cycles
        guard n > 0 else { return }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-bench-churn-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try await Store.open(directory: root + "/a"), b = try await Store.open(directory: root + "/b")
        let incarnation = try await a.createZone(zone).incarnation
        try await b.createZone(zone, incarnation: incarnation)
        var rng = SplitMix64(seed: 36)
        var tokenB: ChangeToken? = nil

        /// B takes what A has, and each acknowledges what it holds to the other; both purge.
        func replicateAndPurge() async throws -> Int {
            while true {
                let page = try await a.changes(in: zone, since: tokenB, limit: 5_000)
                if !page.records.isEmpty { try await b.apply(remoteChanges: page.records) }
                tokenB = page.token
                if !page.moreComing { break }
            }
            try await a.acknowledge(peer: b.nodeID, zone: zone, vector: try await b.zone(zone).versionVector)
            try await b.acknowledge(peer: a.nodeID, zone: zone, vector: try await a.zone(zone).versionVector)
            return try await a.purgeTombstones() + (try await b.purgeTombstones())
        }

        for start in stride(from: 0, to: 10_000, by: batch) {
            try await a.modify(
                saving: (start..<start + batch).map { record("live-\($0)", rng: &rng) }, policy: .allKeys)
        }
        _ = try await replicateAndPurge()
        let before = try await a.storageUsage()

        var purged = 0
        var purgeSeconds = 0.0
        for start in stride(from: 0, to: n, by: batch) {
            let names = (start..<min(n, start + batch)).map { "churn-\($0)" }
            try await a.modify(saving: names.map { record($0, rng: &rng) }, policy: .allKeys)
            try await a.modify(deleting: names.map { Record.ID(name: $0, zone: zone) }, policy: .allKeys)
            let t = ContinuousClock.now
            purged += try await replicateAndPurge()
            purgeSeconds += Harness.seconds(ContinuousClock.now - t)
        }
        let after = try await a.storageUsage()
        let state = try await a.tombstoneState(of: zone)
        print(
            "store case=churn cycles=\(n) live_records=\(state.liveRecords) tombstones_left=\(state.tombstones) db_bytes_before=\(before.usedBytes) db_bytes_after=\(after.usedBytes) file_bytes_after=\(after.fileBytes) growth=\(fixed(Double(after.usedBytes) / Double(max(before.usedBytes, 1)), 2)) purged=\(purged) purge_records_per_s=\(Int(Double(purged) / max(purgeSeconds, 0.000_001)))"
        )
    }
}
