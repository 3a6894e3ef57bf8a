// SyncBenchmark: replication over loopback TLS — store apply, initial sync, field-update bytes, change latency.

import Dispatch
import Foundation
import Shoal
import ShoalSamples

/// `shoal-bench sync`: replication of 8-field records of about 200 bytes (Benchmarks/README.md, `sync`).
///
/// `SHOAL_BENCH_RECORDS` sets the initial-sync size (default 200,000; the target is stated for
/// 1,000,000); `SHOAL_BENCH_SYNC_CASES` (comma-separated case names) runs only those cases.
/// Lines: `sync case=<name> key=value …`.
enum SyncBenchmark: BenchmarkSuite {
    static let name = "sync"
    static let summary =
        "replication over loopback: store-apply, initial-sync, field-update-bytes, change-latency, large-field-edit, initial-sync-auth"

    static var recordCount: Int { Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_RECORDS"] ?? "") ?? 200_000 }
    static let zone = RecordZone.ID(name: "bench")

    static func run() throws { try runBlocking { try await runAsync() } }

    /// The workload record `i`, saved by `node` at `hlc`.
    static func record(_ i: Int, node: NodeID, hlc: HLC, rng: inout SplitMix64) -> Record {
        var r = Record(recordType: "Item", id: Record.ID(name: "item-\(i)", zone: zone))
        r["text"] = .string(NotesCorpus.sentence(words: 6, using: &rng))
        r["modified"] = .int64(1_790_000_000_000 + Int64(i))
        r["version"] = .int64(Int64(i % 7))
        r["title"] = .string("Item number \(i)")
        r["score"] = .double(Double(i % 1000) / 10)
        r["done"] = .bool(i % 3 == 0)
        r["owner"] = .string(["alice", "bob", "carol"][i % 3])
        r["tag"] = .string(["red", "green", "blue", "amber"][i % 4])
        return Stamping.saved(r, by: node, at: hlc)
    }

    /// Makes `a` and `b` trust each other's device ID (what `shoal peer add` does on each machine).
    static func pair(_ a: ShoalNode, _ b: ShoalNode) async throws {
        try await a.trustDevice(b.deviceID)
        try await b.trustDevice(a.deviceID)
    }

    static func temporaryNode(_ label: String, sync: SyncConfiguration = syncConfiguration) async throws -> (
        ShoalNode, String
    ) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-bench-\(label)-\(UInt32.random(in: 0 ... .max))"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return (try await ShoalNode.open(directory: dir, sync: sync), dir)
    }

    /// The nodes' replication settings: defaults, or `SHOAL_BENCH_SYNC_WINDOW` (batches in flight),
    /// `SHOAL_BENCH_SYNC_BATCH` (records per batch) and `SHOAL_BENCH_LIVE_DELAY_MS` (the live
    /// batching delay, 0 for none) for experiments.
    static var syncConfiguration: SyncConfiguration {
        var c = SyncConfiguration()
        let env = ProcessInfo.processInfo.environment
        if let w = env["SHOAL_BENCH_SYNC_WINDOW"].flatMap({ UInt64($0) }), w > 0 { c.window = w }
        if let b = env["SHOAL_BENCH_SYNC_BATCH"].flatMap({ Int($0) }), b > 0 { c.batchRecords = b }
        if let d = env["SHOAL_BENCH_LIVE_DELAY_MS"].flatMap({ Int($0) }), d >= 0 { c.liveBatchDelay = .milliseconds(d) }
        return c
    }

    /// The cases, in the order they run.
    static let caseNames = [
        "store-apply", "initial-sync", "field-update-bytes", "change-latency", "large-field-edit", "initial-sync-auth"
    ]

    /// The cases to run: those `SHOAL_BENCH_SYNC_CASES` names (comma-separated), or all.
    static func wantedCases() throws -> Set<String> {
        guard let list = ProcessInfo.processInfo.environment["SHOAL_BENCH_SYNC_CASES"], !list.isEmpty else {
            return Set(caseNames)
        }
        let wanted = Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        let unknown = wanted.subtracting(caseNames)
        guard unknown.isEmpty else {
            throw BenchError(
                "SHOAL_BENCH_SYNC_CASES names unknown cases \(unknown.sorted()); the cases are \(caseNames.joined(separator: ","))"
            )
        }
        return wanted
    }

    static func runAsync() async throws {
        let wanted = try wantedCases()
        if !wanted.isDisjoint(with: ["store-apply", "initial-sync", "field-update-bytes"]) {
            try await runBulkCases(wanted)
        }
        if wanted.contains("change-latency") { try await runChangeLatency() }
        if wanted.contains("large-field-edit") { try await runLargeFieldEdit() }
        if wanted.contains("initial-sync-auth") { try await runAuthenticationCost() }
    }

    /// `store-apply`, then `initial-sync` and `field-update-bytes` on the nodes it synced (either
    /// of the last two needs the initial sync; it prints only the lines of the wanted cases).
    static func runBulkCases(_ wanted: Set<String>) async throws {
        let n = recordCount
        // The records are node A's own writes (A's knowledge covers them, as it covers anything a
        // node wrote or fully caught up with), stamped in the recent past.
        let (a, aDir) = try await temporaryNode("a")
        defer { try? FileManager.default.removeItem(atPath: aDir) }
        let writer = a.nodeID
        let base = UInt64(Timestamp.now().millisecondsSince1970) - UInt64(n) - 10_000
        var rng = SplitMix64(seed: 7)
        let records = (0..<n).map {
            record($0, node: writer, hlc: HLC(milliseconds: base + UInt64($0), logical: 0), rng: &rng)
        }
        let averageBytes = records.prefix(1000).reduce(0) { $0 + $1.encoded().count } / min(1000, max(n, 1))
        printNote("\(n) records of about \(averageBytes) bytes encoded")

        let applyRate = wanted.contains("store-apply") ? try await runStoreApply(records, writer: writer) : nil
        guard !wanted.isDisjoint(with: ["initial-sync", "field-update-bytes"]) else { return }

        // initial-sync: A holds the records, B is empty and dials A over loopback TCP.
        let (b, bDir) = try await temporaryNode("b")
        defer { try? FileManager.default.removeItem(atPath: bDir) }
        try await a.createZone(zone)
        for start in stride(from: 0, to: n, by: 5000) {
            try await a.store.apply(remoteChanges: Array(records[start..<min(n, start + 5000)]))
        }
        // Paired by device ID: the sync runs over mutual TLS 1.3, as every peer connection does;
        // A owns the zone and shares it with B.
        try await pair(a, b)
        try await a.shareZone(zone, with: b.deviceID, role: .readWrite)
        let portA = try await a.listen(host: "127.0.0.1", port: 0)
        _ = try await b.listen(host: "127.0.0.1", port: 0)
        let t1 = ContinuousClock.now
        await b.connect(to: "127.0.0.1", port: portA)
        // Poll the cheap counter (a digest hashes the whole zone and would slow the sync down),
        // then check the digests once.
        while await b.sync.statistics.recordsReceived < n {
            try await Task.sleep(for: .milliseconds(20))
            if ContinuousClock.now - t1 > .seconds(600) {
                throw BenchError("initial sync did not finish in 10 minutes")
            }
        }
        let syncSeconds = Harness.seconds(ContinuousClock.now - t1)
        guard try await a.digest(of: zone) == (try await b.digest(of: zone)) else {
            throw BenchError("digests differ after the initial sync")
        }
        let syncRate = Double(n) / syncSeconds
        let syncWire = await b.traffic().bytesReceived
        if wanted.contains("initial-sync") {
            let versus = applyRate.map { " vs_store_apply=\(fixed($0 / syncRate, 2))" } ?? ""
            print(
                "sync case=initial-sync tls=on records=\(n) records_per_s=\(Int(syncRate)) wire_bytes=\(syncWire) bytes_per_record=\(fixed(Double(syncWire) / Double(n), 1))\(versus)"
            )
        }

        guard wanted.contains("field-update-bytes") else { await a.shutdown(); await b.shutdown(); return }
        // field-update-bytes: 1 % of the records get a new `text`; bytes B receives for them.
        // mode=batch saves the updates in one request (an app syncing an edit session); mode=live
        // saves them one at a time, each pushed on its own as soon as it commits.
        let updates = max(1, min(n, 100_000) / 100)
        for mode in ["batch", "live"] {
            let beforePayload = await b.sync.statistics.bytesReceived
            let beforeWire = await b.traffic().bytesReceived
            let received = await b.sync.statistics.recordsReceived
            let sparseBefore = await b.sync.statistics.sparseRecordsReceived
            var changed = 0
            var edited = [Record]()
            for i in stride(from: mode == "batch" ? 0 : 50, to: updates * 100, by: 100) {
                var r = try await a.record(for: Record.ID(name: "item-\(i)", zone: zone))
                let text = NotesCorpus.sentence(words: 6, using: &rng)
                r["text"] = .string(text)
                changed += text.utf8.count + "text".utf8.count + r.id.name.utf8.count
                if mode == "batch" { edited.append(r) } else { try await a.save(r, policy: .changedKeys) }
            }
            if mode == "batch" { try await a.store.modify(saving: edited, policy: .changedKeys, atomically: false) }
            let t2 = ContinuousClock.now
            while await b.sync.statistics.recordsReceived < received + updates {
                try await Task.sleep(for: .milliseconds(20))
                if ContinuousClock.now - t2 > .seconds(60) {
                    let got = await b.sync.statistics.recordsReceived - received
                    throw BenchError(
                        "only \(got) of \(updates) updated records reached B in 60 s; A sent \(await a.sync.statistics.recordsSent) records in \(await a.sync.statistics.batchesSent) batches; B's peers: \(await b.peers()); B's errors: \(await b.sync.lastErrors()); A's errors: \(await a.sync.lastErrors())"
                    )
                }
            }
            guard try await a.digest(of: zone) == (try await b.digest(of: zone)) else {
                throw BenchError("digests differ after the updates")
            }
            let payload = await b.sync.statistics.bytesReceived - beforePayload
            let compressed = await b.traffic().bytesReceived - beforeWire
            let sparse = await b.sync.statistics.sparseRecordsReceived - sparseBefore
            print(
                "sync case=field-update-bytes mode=\(mode) updates=\(updates) sparse=\(sparse) wire_bytes=\(payload) changed_bytes=\(changed) ratio=\(fixed(Double(payload) / Double(changed), 2)) compressed_bytes=\(compressed) compressed_ratio=\(fixed(Double(compressed) / Double(changed), 2))"
            )
        }
        await a.shutdown(); await b.shutdown()
    }

    /// `store-apply`: the receiving side's own rate, batches of 500 as replication sends them.
    /// Returns the rate, records per second.
    static func runStoreApply(_ records: [Record], writer: NodeID) async throws -> Double {
        let n = records.count
        let (sink, sinkDir) = try await temporaryNode("apply")
        defer { try? FileManager.default.removeItem(atPath: sinkDir) }
        try await sink.createZone(zone)
        // What the batches weigh as frames, measured before (not during) the timed applies.
        var wire = 0
        let encoder = FrameEncoder()
        for start in stride(from: 0, to: n, by: 500) {
            wire += try encoder.encode(
                .changes,
                payload: ChangesMessage(
                    zone: zone, incarnation: writer, batch: 1, isCaughtUp: false,
                    token: ChangeToken(bytes: []), records: Array(records[start..<min(n, start + 500)])
                ).encoded()
            ).count
        }
        let t0 = ContinuousClock.now
        for start in stride(from: 0, to: n, by: 500) {
            try await sink.store.apply(remoteChanges: Array(records[start..<min(n, start + 500)]))
        }
        let applySeconds = Harness.seconds(ContinuousClock.now - t0)
        let applyRate = Double(n) / applySeconds
        print(
            "sync case=store-apply records=\(n) records_per_s=\(Int(applyRate)) wire_bytes=\(wire) bytes_per_record=\(fixed(Double(wire) / Double(n), 1))"
        )
        return applyRate
    }

    /// `change-latency`: A – B – C in a line; a save on A until B's and C's stores announce it.
    static func runChangeLatency() async throws {
        // Each receiver's notification stream (a zone subscription, as an app would watch) stamps
        // the arrival instant, so the measuring loop never competes with replication for the
        // receivers' actors; it sleeps 1 ms between looks.
        let (la, laDir) = try await temporaryNode("la"), (lb, lbDir) = try await temporaryNode("lb"),
            (lc, lcDir) = try await temporaryNode("lc")
        defer { for d in [laDir, lbDir, lcDir] { try? FileManager.default.removeItem(atPath: d) } }
        try await la.createZone(zone)
        try await pair(la, lb)
        try await pair(lb, lc)
        // C meets only B; la trusts it to share the zone with it (its share reaches C through B).
        try await pair(la, lc)
        for node in [lb, lc] { try await la.shareZone(zone, with: node.deviceID, role: .readWrite) }
        let pa = try await la.listen(host: "127.0.0.1", port: 0), pb = try await lb.listen(host: "127.0.0.1", port: 0)
        _ = try await lc.listen(host: "127.0.0.1", port: 0)
        await lb.connect(to: "127.0.0.1", port: pa)
        await lc.connect(to: "127.0.0.1", port: pb)
        while (try? await lc.zones().count) != 1 { try await Task.sleep(for: .milliseconds(10)) }
        let arrivals = Arrivals()
        var watchers = [Task<Void, Never>]()
        for (label, node) in [("b", lb), ("c", lc)] {
            try await node.store.saveSubscription(Subscription(id: "latency", kind: .zone(zone)))
            let stream = await node.store.notifications()
            watchers.append(
                Task {
                    for await n in stream {
                        let now = ContinuousClock.now
                        for id in n.recordIDs { await arrivals.note(label + "/" + id.name, at: now) }
                    }
                })
        }
        var toB = [Double](), toC = [Double](), saves = [Double]()
        for i in 0..<200 {
            var r = Record(recordType: "Item", id: Record.ID(name: "latency-\(i)", zone: zone))
            r["text"] = .string("change \(i)")
            let start = ContinuousClock.now
            try await la.save(r)
            saves.append(Harness.seconds(ContinuousClock.now - start) * 1000)
            let deadline = start + .seconds(10)
            while ContinuousClock.now < deadline {
                if let b = await arrivals.instant("b/" + r.id.name), let c = await arrivals.instant("c/" + r.id.name) {
                    toB.append(Harness.seconds(b - start) * 1000)
                    toC.append(Harness.seconds(c - start) * 1000)
                    break
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            guard toC.count == i + 1 else { throw BenchError("change \(i) did not reach B and C within 10 s") }
        }
        for w in watchers { w.cancel() }
        let slowest = toC.indices.sorted { toC[$0] > toC[$1] }.prefix(5)
        printNote(
            "slowest changes to C: "
                + slowest.map { "#\($0) \(fixed(toC[$0], 2)) ms (B \(fixed(toB[$0], 2)))" }.joined(separator: ", "))
        func pct(_ xs: [Double], _ p: Double) -> Double {
            let s = xs.sorted(); return s[min(s.count - 1, Int(Double(s.count) * p))]
        }
        print(
            "sync case=change-latency tls=on changes=200 p50_ms=\(fixed(pct(toC, 0.5), 2)) p99_ms=\(fixed(pct(toC, 0.99), 2)) first_hop_p50_ms=\(fixed(pct(toB, 0.5), 2)) first_hop_p99_ms=\(fixed(pct(toB, 0.99), 2)) save_p50_ms=\(fixed(pct(saves, 0.5), 2)) save_p99_ms=\(fixed(pct(saves, 0.99), 2))"
        )
        for node in [la, lb, lc] { await node.shutdown() }
    }
}

/// When each receiver's notification stream announced each record ("b/latency-7" → instant).
actor Arrivals {
    var seen: [String: ContinuousClock.Instant] = [:]
    func note(_ key: String, at t: ContinuousClock.Instant) { if seen[key] == nil { seen[key] = t } }
    func instant(_ key: String) -> ContinuousClock.Instant? { seen[key] }
}
