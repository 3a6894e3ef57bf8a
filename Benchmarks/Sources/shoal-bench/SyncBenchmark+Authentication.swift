// SyncBenchmark+Authentication: the initial sync with authenticated writes on and off, in one run.

import Foundation
import Shoal
import ShoalSamples

extension SyncBenchmark {
    /// `initial-sync-auth`: the `initial-sync` case (A holds the records, B dials it over
    /// loopback TLS) with `SyncConfiguration.authenticatesWrites` on and off on both nodes,
    /// alternately, `SHOAL_BENCH_AUTH_PAIRS` pairs (default 3) of fresh nodes. Prints one line per
    /// run and a summary with the median rates and their ratio (what authentication keeps), by
    /// wall clock and per CPU second of the process (`cpu_`: steadier on a loaded machine).
    static func runAuthenticationCost() async throws {
        let n = recordCount
        let pairs = max(1, Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_AUTH_PAIRS"] ?? "") ?? 3)
        // One setting only (`on` or `off`), to profile it alone; the ratios are then meaningless.
        let only = ProcessInfo.processInfo.environment["SHOAL_BENCH_AUTH_ONLY"].map { $0 == "on" }
        var rates: [Bool: [Double]] = [true: [], false: []]
        var cpuRates: [Bool: [Double]] = [true: [], false: []]
        var wire: [Bool: Int] = [:]
        for pair in 0..<pairs {
            // Each setting goes first in every other pair: whichever runs second meets the
            // machine as the first left it (caches, files freed, background checkpoints).
            for on in pair % 2 == 0 ? [true, false] : [false, true] where only.map({ $0 == on }) ?? true {
                var c = syncConfiguration
                c.authenticatesWrites = on
                let (seconds, cpu, bytes, b) = try await timedInitialSync(records: n, sync: c)
                rates[on, default: []].append(Double(n) / seconds)
                cpuRates[on, default: []].append(Double(n) / max(cpu, 1e-6))
                wire[on] = bytes
                print(
                    "sync case=initial-sync-auth-run auth=\(on ? "on" : "off") records=\(n) records_per_s=\(Int(Double(n) / seconds)) cpu_records_per_s=\(Int(Double(n) / max(cpu, 1e-6))) wire_bytes=\(bytes) entries_verified=\(b.writerEntriesVerified) entries_taken=\(b.writerEntriesTaken) batches=\(b.batchesReceived) decoded_ahead=\(b.batchesDecodedAhead)"
                )
            }
        }
        func median(_ v: [Double]) -> Double { v.isEmpty ? 0 : v.sorted()[v.count / 2] }
        let on = median(rates[true] ?? [1]), off = median(rates[false] ?? [1])
        let cpuOn = median(cpuRates[true] ?? [1]), cpuOff = median(cpuRates[false] ?? [1])
        let onWire = wire[true] ?? 0, offWire = wire[false] ?? 0
        print(
            "sync case=initial-sync-auth records=\(n) pairs=\(pairs) on_records_per_s=\(Int(on)) off_records_per_s=\(Int(off)) rate_ratio=\(fixed(on / off, 3)) cpu_rate_ratio=\(fixed(cpuOn / cpuOff, 3)) on_bytes_per_record=\(fixed(Double(onWire) / Double(n), 1)) off_bytes_per_record=\(fixed(Double(offWire) / Double(n), 1)) on_min=\(Int(rates[true]?.min() ?? 0)) on_max=\(Int(rates[true]?.max() ?? 0)) off_min=\(Int(rates[false]?.min() ?? 0)) off_max=\(Int(rates[false]?.max() ?? 0))"
        )
    }

    /// One initial sync of `n` records from a fresh node A to a fresh node B configured `sync`:
    /// its seconds, the process's CPU seconds meanwhile, the bytes B received, and B's engine's
    /// counters (writer log entries verified and taken on A's word, batches received and decoded ahead).
    static func timedInitialSync(records n: Int, sync: SyncConfiguration) async throws -> (
        Double, Double, Int, SyncNode.Statistics
    ) {
        let (a, aDir) = try await temporaryNode("auth-a", sync: sync)
        defer { try? FileManager.default.removeItem(atPath: aDir) }
        let (b, bDir) = try await temporaryNode("auth-b", sync: sync)
        defer { try? FileManager.default.removeItem(atPath: bDir) }
        let writer = a.nodeID
        let base = UInt64(Timestamp.now().millisecondsSince1970) - UInt64(n) - 10_000
        var rng = SplitMix64(seed: 7)
        try await a.createZone(zone)
        for start in stride(from: 0, to: n, by: 5000) {
            let chunk = (start..<min(n, start + 5000)).map {
                record($0, node: writer, hlc: HLC(milliseconds: base + UInt64($0), logical: 0), rng: &rng)
            }
            try await a.store.apply(remoteChanges: chunk)
        }
        try await pair(a, b)
        try await a.shareZone(zone, with: b.deviceID, role: .readWrite)
        let portA = try await a.listen(host: "127.0.0.1", port: 0)
        _ = try await b.listen(host: "127.0.0.1", port: 0)
        let t = ContinuousClock.now, cpu0 = StoreBenchmark.cpuSeconds()
        await b.connect(to: "127.0.0.1", port: portA)
        while await b.sync.statistics.recordsReceived < n {
            try await Task.sleep(for: .milliseconds(20))
            if ContinuousClock.now - t > .seconds(600) { throw BenchError("initial sync did not finish in 10 minutes") }
        }
        let seconds = Harness.seconds(ContinuousClock.now - t), cpu = StoreBenchmark.cpuSeconds() - cpu0
        guard try await a.digest(of: zone) == (try await b.digest(of: zone)) else {
            throw BenchError("digests differ after the initial sync")
        }
        let bytes = await b.traffic().bytesReceived
        let statistics = await b.sync.statistics
        await a.shutdown()
        await b.shutdown()
        return (seconds, cpu, bytes, statistics)
    }
}
