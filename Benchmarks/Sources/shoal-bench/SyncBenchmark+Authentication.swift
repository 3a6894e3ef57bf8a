// SyncBenchmark+Authentication: the initial sync with authenticated writes on and off, in one run.

import Foundation
import Shoal
import ShoalSamples

extension SyncBenchmark {
    /// How a run authenticates writes: `on` (the default: a peer's own writes taken on the
    /// connection's word), `eager` (every range rebuilt and chained as it arrives,
    /// `SyncConfiguration.takesOwnWritesOnWord` off) or `off`.
    enum AuthSetting: String, CaseIterable {
        case on, eager, off

        var configuration: SyncConfiguration {
            var c = syncConfiguration
            c.authenticatesWrites = self != .off
            c.takesOwnWritesOnWord = self == .on
            return c
        }
    }

    /// `initial-sync-auth`: the `initial-sync` case (A holds the records, B dials it over
    /// loopback TLS) with `SyncConfiguration.authenticatesWrites` on and off on both nodes,
    /// alternately, `SHOAL_BENCH_AUTH_PAIRS` pairs (default 3) of fresh nodes. Prints one line per
    /// run and a summary with the median rates and their ratio (what authentication keeps), by
    /// wall clock and per CPU second of the process (`cpu_`: steadier on a loaded machine).
    /// `SHOAL_BENCH_AUTH_EAGER=1` adds the `eager` setting to every round (the summary then gives
    /// its ratios too); `SHOAL_BENCH_AUTH_RELAY=1` has a third node C sync from B alone after
    /// each run, timed as `relay_records_per_s` (with `on`, B proves A's entries as it serves C).
    static func runAuthenticationCost() async throws {
        let n = recordCount
        let env = ProcessInfo.processInfo.environment
        let pairs = max(1, Int(env["SHOAL_BENCH_AUTH_PAIRS"] ?? "") ?? 3)
        // One setting only (`on`, `eager` or `off`), to profile it alone; the ratios are then meaningless.
        let only = env["SHOAL_BENCH_AUTH_ONLY"].flatMap(AuthSetting.init(rawValue:))
        let relay = env["SHOAL_BENCH_AUTH_RELAY"] == "1"
        var settings: [AuthSetting] = env["SHOAL_BENCH_AUTH_EAGER"] == "1" ? [.on, .eager, .off] : [.on, .off]
        if let only { settings = [only] }
        var rates = [AuthSetting: [Double]](), cpuRates = [AuthSetting: [Double]](), relays = [AuthSetting: [Double]]()
        var wire = [AuthSetting: Int]()
        for round in 0..<pairs {
            // Each setting goes first in turn: whichever runs later meets the machine as the one
            // before left it (caches, files freed, background checkpoints).
            for k in settings.indices {
                let setting = settings[(k + round) % settings.count]
                let run = try await timedInitialSync(records: n, sync: setting.configuration, relay: relay)
                rates[setting, default: []].append(Double(n) / run.seconds)
                cpuRates[setting, default: []].append(Double(n) / max(run.cpu, 1e-6))
                if let r = run.relaySeconds { relays[setting, default: []].append(Double(n) / r) }
                wire[setting] = run.bytes
                let b = run.statistics
                print(
                    "sync case=initial-sync-auth-run auth=\(setting.rawValue) records=\(n) records_per_s=\(Int(Double(n) / run.seconds)) cpu_records_per_s=\(Int(Double(n) / max(run.cpu, 1e-6))) wire_bytes=\(run.bytes) entries_verified=\(b.writerEntriesVerified) entries_taken=\(b.writerEntriesTaken) batches=\(b.batchesReceived) decoded_ahead=\(b.batchesDecodedAhead)\(run.relaySeconds.map { " relay_records_per_s=\(Int(Double(n) / $0))" } ?? "")"
                )
            }
        }
        func median(_ v: [Double]?) -> Double { v.map { $0.isEmpty ? 0 : $0.sorted()[$0.count / 2] } ?? 0 }
        let on = median(rates[.on]), off = median(rates[.off])
        let cpuOn = median(cpuRates[.on]), cpuOff = median(cpuRates[.off])
        let onWire = wire[.on] ?? 0, offWire = wire[.off] ?? 0
        var line =
            "sync case=initial-sync-auth records=\(n) pairs=\(pairs) on_records_per_s=\(Int(on)) off_records_per_s=\(Int(off)) rate_ratio=\(fixed(on / off, 3)) cpu_rate_ratio=\(fixed(cpuOn / cpuOff, 3)) on_bytes_per_record=\(fixed(Double(onWire) / Double(n), 1)) off_bytes_per_record=\(fixed(Double(offWire) / Double(n), 1)) on_min=\(Int(rates[.on]?.min() ?? 0)) on_max=\(Int(rates[.on]?.max() ?? 0)) off_min=\(Int(rates[.off]?.min() ?? 0)) off_max=\(Int(rates[.off]?.max() ?? 0))"
        if rates[.eager] != nil {
            let eager = median(rates[.eager]), cpuEager = median(cpuRates[.eager])
            line +=
                " eager_records_per_s=\(Int(eager)) eager_rate_ratio=\(fixed(eager / off, 3)) eager_cpu_rate_ratio=\(fixed(cpuEager / cpuOff, 3))"
        }
        for setting in settings where relays[setting] != nil {
            line += " \(setting.rawValue)_relay_records_per_s=\(Int(median(relays[setting])))"
        }
        print(line)
    }

    /// What one run of ``timedInitialSync(records:sync:relay:)`` measured.
    struct AuthRun {
        /// The initial sync from A to B, by wall clock and in CPU seconds of the process.
        var seconds: Double, cpu: Double
        /// The bytes B received.
        var bytes: Int
        /// B's engine's counters (writer log entries verified and taken on A's word, batches
        /// received and decoded ahead).
        var statistics: SyncNode.Statistics
        /// C's initial sync from B alone afterwards, when asked for.
        var relaySeconds: Double?
    }

    /// One initial sync of `n` records from a fresh node A to a fresh node B configured `sync`,
    /// and, with `relay`, then from B to a fresh node C (a member of A's zone that never meets A).
    static func timedInitialSync(records n: Int, sync: SyncConfiguration, relay: Bool = false) async throws -> AuthRun {
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
        let portB = try await b.listen(host: "127.0.0.1", port: 0)
        let t = ContinuousClock.now, cpu0 = StoreBenchmark.cpuSeconds()
        await b.connect(to: "127.0.0.1", port: portA)
        try await waitForRecords(n, on: b, since: t)
        let seconds = Harness.seconds(ContinuousClock.now - t), cpu = StoreBenchmark.cpuSeconds() - cpu0
        guard try await a.digest(of: zone) == (try await b.digest(of: zone)) else {
            throw BenchError("digests differ after the initial sync")
        }
        var run = AuthRun(
            seconds: seconds, cpu: cpu, bytes: await b.traffic().bytesReceived, statistics: await b.sync.statistics)
        if relay {
            let (c, cDir) = try await temporaryNode("auth-c", sync: sync)
            defer { try? FileManager.default.removeItem(atPath: cDir) }
            try await pair(b, c)
            try await pair(a, c)
            try await a.shareZone(zone, with: c.deviceID, role: .readWrite)
            // B learns of C's membership from A's share before A goes away.
            while try await !b.members(of: zone).members.contains(where: { $0.device == c.deviceID }) {
                try await Task.sleep(for: .milliseconds(20))
                if ContinuousClock.now - t > .seconds(600) { throw BenchError("B never learnt of C's membership") }
            }
            await a.shutdown()
            let tc = ContinuousClock.now
            await c.connect(to: "127.0.0.1", port: portB)
            try await waitForRecords(n, on: c, since: tc)
            run.relaySeconds = Harness.seconds(ContinuousClock.now - tc)
            guard try await b.digest(of: zone) == (try await c.digest(of: zone)) else {
                throw BenchError("digests differ after the relayed sync")
            }
            await c.shutdown()
        } else {
            await a.shutdown()
        }
        await b.shutdown()
        return run
    }

    /// Waits until `node` has received `n` records, at most 10 minutes from `start`.
    static func waitForRecords(_ n: Int, on node: ShoalNode, since start: ContinuousClock.Instant) async throws {
        while await node.sync.statistics.recordsReceived < n {
            try await Task.sleep(for: .milliseconds(20))
            if ContinuousClock.now - start > .seconds(600) { throw BenchError("a sync did not finish in 10 minutes") }
        }
    }
}
