// AssetsTransferBenchmark: an asset between two nodes over loopback TCP (the asset lane), next to
// cp of the same file, and record-change latency idle and during the transfer.

import Foundation
import Shoal

extension AssetsBenchmark {
    /// `SHOAL_BENCH_TRANSFER_MIB` (default 1024) MiB of random bytes: imported on A, fetched with
    /// `fetchAsset` by a new receiver B in each of `SHOAL_BENCH_TRANSFER_ROUNDS` (default 5)
    /// rounds, each of which first takes 100 idle latency samples. Lines: `transfer-<n>mib`
    /// (`MBps`: the median round's, every round's in `MBps_rounds`; `peak_rss_mb`: the largest of
    /// the process holding both nodes), `cp-<n>mib` (`MBps`),
    /// `latency-idle` and `latency-during-transfer` (`p50_ms`, `p99_ms`: a save on A until
    /// readable on B; `save_p50_ms`, `save_p99_ms`: the part spent in A's local save, its commit
    /// and fsync; `stolen_samples`, `p99_unstolen_ms`: how many samples overlapped time the
    /// hypervisor stole, and the p99 of the rest; `stolen_cpu_pct` on the transfer line: the share
    /// stolen during it; `cpu_s_per_gib`: the process's CPU time per GiB moved, both nodes, including
    /// the latency samples; `switches_per_chunk`: its context switches per chunk received; each the
    /// median round's). The latency lines pool every round's samples; `p99_rounds_ms` and
    /// `samples_rounds` give each round's own p99 and sample count.
    /// `SHOAL_BENCH_SENDER_DIR` puts A's data directory there instead of beside B's —
    /// on another file system it stands for the sender's own disk, as on two machines.
    /// `SHOAL_BENCH_LATENCY_SAMPLES` names a file every latency sample is appended to.
    static func transferCases() async throws {
        let mib = Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_TRANSFER_MIB"] ?? "") ?? 1024
        // The 1 GiB cases are named `transfer-1gib` and `cp-1gib`; other sizes keep MiB.
        let label = mib % 1024 == 0 ? "\(mib / 1024)gib" : "\(mib)mib"
        let size = mib << 20
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-bench-transfer-\(UInt32.random(in: 0 ... .max))"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        /// Removes `path`, trying again for up to 2 s: a node's last writes can race the removal
        /// (ENOTEMPTY), and a left-behind run holds 2 GiB.
        func remove(_ path: String) {
            for _ in 0..<10 where FileManager.default.fileExists(atPath: path) {
                if (try? FileManager.default.removeItem(atPath: path)) != nil { break }
                usleep(200_000)
            }
        }
        defer { remove(dir) }
        let source = dir + "/source.bin"
        try writeRandomFile(source, bytes: size, seed: 7, replacing: nil)

        // cp of the same file (read + write from the page cache, no fsync).
        let t0 = ContinuousClock.now
        try FileManager.default.copyItem(atPath: source, toPath: dir + "/copy.bin")
        let cpSeconds = Harness.seconds(ContinuousClock.now - t0)
        try? FileManager.default.removeItem(atPath: dir + "/copy.bin")

        // SHOAL_BENCH_TRANSFER_FSYNC=0 stores chunks without fsync (the lane's cost alone); the
        // default is what a node does: every chunk durable before the asset's manifest is written
        // (in batches, Spec/assets.md §5.1).
        var config = AssetStore.Configuration()
        config.fsync = ProcessInfo.processInfo.environment["SHOAL_BENCH_TRANSFER_FSYNC"] != "0"
        // SHOAL_BENCH_RECEIVE_BATCH_KIB: AssetStore.Configuration.receiveBatchBytes, in KiB.
        if let k = ProcessInfo.processInfo.environment["SHOAL_BENCH_RECEIVE_BATCH_KIB"].flatMap({ Int($0) }), k > 0 {
            config.receiveBatchBytes = k << 10
        }
        printNote(
            "transfer: \(mib) MiB, chunk fsync \(config.fsync), receive batch \(config.receiveBatchBytes >> 10) KiB")
        // SHOAL_BENCH_ASSET_WINDOW: chunks B keeps requested (SyncConfiguration.assetWindow).
        var sync = SyncConfiguration()
        if let w = ProcessInfo.processInfo.environment["SHOAL_BENCH_ASSET_WINDOW"].flatMap({ Int($0) }), w > 0 {
            sync.assetWindow = w
        }
        printNote("asset window \(sync.assetWindow) chunks")
        // SHOAL_BENCH_ASSET_RATE_MBPS: B's NetworkConfiguration.assetReceiveRate, in MB/s (10^6).
        var bNetwork = NetworkConfiguration()
        if let r = ProcessInfo.processInfo.environment["SHOAL_BENCH_ASSET_RATE_MBPS"].flatMap({ Double($0) }), r > 0,
            r < 1e6
        {
            bNetwork.assetReceiveRate = Int(r * 1e6)
            printNote("B receives assets at most \(r) MB/s")
        }
        // SHOAL_BENCH_SENDER_DIR: A's data directory under another folder (another file system
        // stands for the sender's own disk); removed at the end like the rest.
        let senderRoot = ProcessInfo.processInfo.environment["SHOAL_BENCH_SENDER_DIR"].map {
            $0 + "/shoal-bench-sender-\(UInt32.random(in: 0 ... .max))"
        }
        let aDirectory = senderRoot ?? dir + "/a"
        defer { if let senderRoot { remove(senderRoot) } }
        // SHOAL_BENCH_TRANSFER_ROUNDS: transfers in this run, each of the whole asset to a receiver
        // of its own. A 1 GiB transfer on this machine lasts 1.5–5 s, room for 60–100 samples at
        // one per ~23 ms, whose "p99" is then their largest; pooling the rounds' samples makes the
        // latency lines' p99 an estimate of one (Benchmarks/README.md, `assets`).
        let rounds = max(
            1, min(Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_TRANSFER_ROUNDS"] ?? "") ?? 5, 100))
        printNote("sender A in \(aDirectory), receivers B in \(dir)/b-<round>, \(rounds) round(s)")
        let a = try await ShoalNode.open(directory: aDirectory, sync: sync, assets: config)
        let zone = RecordZone.ID(name: "media")
        try await a.createZone(zone)
        let port = try await a.listen(host: "127.0.0.1", port: 0)
        var photo = Record(recordType: "Media", id: Record.ID(name: "big", zone: zone))
        photo["title"] = .string("a large file")
        let saved = try await a.save(photo, attaching: ["file": source])
        guard case .asset(let asset)? = saved["file"] else { throw BenchError("the saved record holds no asset") }

        var idle = [Sample](), during = [Sample]()
        var results = [RoundResult]()
        // The last record A saved: a new receiver has caught up once it holds it.
        var lastID = saved.id
        for round in 0..<rounds {
            let bDirectory = dir + "/b-\(round)"
            let b = try await ShoalNode.open(directory: bDirectory, sync: sync, network: bNetwork, assets: config)
            // Paired by device ID: the transfer runs over mutual TLS 1.3.
            try await a.trustDevice(b.deviceID)
            try await b.trustDevice(a.deviceID)
            try await a.shareZone(zone, with: b.deviceID, role: .readOnly)
            await b.connect(to: "127.0.0.1", port: port)
            while (try? await b.record(for: lastID)) == nil { try await Task.sleep(for: .milliseconds(5)) }
            let r = try await transferRound(round, from: a, to: b, zone: zone, asset: asset, bytes: size)
            idle += r.idle
            during += r.during
            results.append(r)
            lastID = r.lastID
            await b.shutdown()
            remove(bDirectory)
        }
        await a.shutdown()

        /// The nearest-rank percentile: the smallest sample with at least `p` of them at or below it.
        func pct(_ xs: [Double], _ p: Double) -> Double {
            let s = xs.sorted()
            return s.isEmpty ? 0 : s[max(0, min(s.count - 1, Int((Double(s.count) * p).rounded(.up)) - 1))]
        }
        func median(_ xs: [Double]) -> Double { pct(xs, 0.5) }
        func each(_ xs: [Double], _ digits: Int) -> String { xs.map { fixed($0, digits) }.joined(separator: "/") }
        // One line per case: the median round, every round's figure beside it (`*_rounds`, in order).
        let mbps = results.map { Double(size) / $0.seconds / 1e6 }
        let seconds = results.map(\.seconds)
        print(
            "assets case=transfer-\(label) MBps=\(fixed(median(mbps), 1)) seconds=\(fixed(median(seconds), 2)) peak_rss_mb=\(fixed(results.map(\.rss).max() ?? 0, 1)) chunks_received=\(results.last?.chunks ?? 0) stolen_cpu_pct=\(fixed(median(results.map(\.stolenPercent)), 1)) cpu_s_per_gib=\(fixed(median(results.map(\.cpuPerGiB)), 2)) switches_per_chunk=\(fixed(median(results.map(\.switchesPerChunk)), 1)) rounds=\(rounds) MBps_rounds=\(each(mbps, 1)) peak_rss_mb_rounds=\(each(results.map(\.rss), 1))"
        )
        print(
            "assets case=cp-\(label) MBps=\(fixed(Double(size) / cpSeconds / 1e6, 1)) transfer_vs_cp=\(fixed(cpSeconds / median(seconds), 3))"
        )
        // stolen_samples: samples during which the hypervisor stole time; p99_unstolen_ms: the p99
        // of the others. Attribution only: p99_ms, over every sample, is the figure.
        func line(_ name: String, _ xs: [Sample], perRound: [[Sample]], extra: String = "") -> String {
            let total = xs.map(\.total), save = xs.map(\.save), unstolen = xs.filter { !$0.stolen }.map(\.total)
            return
                "assets case=\(name) samples=\(xs.count) p50_ms=\(fixed(pct(total, 0.5), 2)) p90_ms=\(fixed(pct(total, 0.9), 2)) p99_ms=\(fixed(pct(total, 0.99), 2)) max_ms=\(fixed(total.max() ?? 0, 2)) save_p50_ms=\(fixed(pct(save, 0.5), 2)) save_p99_ms=\(fixed(pct(save, 0.99), 2)) stolen_samples=\(xs.count - unstolen.count) p99_unstolen_ms=\(fixed(pct(unstolen, 0.99), 2))\(extra) p99_rounds_ms=\(each(perRound.map { pct($0.map(\.total), 0.99) }, 2)) samples_rounds=\(perRound.map { String($0.count) }.joined(separator: "/"))"
        }
        // SHOAL_BENCH_LATENCY_SAMPLES=<file>: every sample appended to that file, one line each,
        // so that runs can be pooled (Scripts/latency-pairs.sh).
        if let path = ProcessInfo.processInfo.environment["SHOAL_BENCH_LATENCY_SAMPLES"] {
            let lines = [("idle", idle), ("during", during)].flatMap { phase, xs in
                xs.map {
                    "phase=\(phase) total_ms=\(fixed($0.total, 3)) save_ms=\(fixed($0.save, 3)) stolen=\($0.stolen ? 1 : 0)\n"
                }
            }.joined()
            guard
                let out = FileHandle(forWritingAtPath: path)
                    ?? (FileManager.default.createFile(atPath: path, contents: nil)
                        ? FileHandle(forWritingAtPath: path) : nil)
            else {
                throw BenchError("cannot write latency samples to \(path) (SHOAL_BENCH_LATENCY_SAMPLES)")
            }
            out.seekToEndOfFile()
            out.write(Data(lines.utf8))
            out.closeFile()
        }
        print(line("latency-idle", idle, perRound: results.map(\.idle)))
        print(
            line(
                "latency-during-transfer", during, perRound: results.map(\.during),
                extra:
                    " vs_idle_p99=\(fixed(pct(during.map(\.total), 0.99) / max(pct(idle.map(\.total), 0.99), 0.001), 2))"
            ))
    }

    /// What one round of ``transferCases()`` measured.
    struct RoundResult {
        var idle: [Sample]
        var during: [Sample]
        var seconds: Double
        var rss: Double
        var chunks: Int
        var stolenPercent: Double
        var cpuPerGiB: Double
        var switchesPerChunk: Double
        /// The last record the round saved on A.
        var lastID: Record.ID
    }

    /// One round: 100 record changes from A to `b` with nothing else running, then `b` fetches
    /// `asset` (`bytes` long) while record changes are sampled until the fetch ends (at most 100).
    static func transferRound(
        _ round: Int, from a: ShoalNode, to b: ShoalNode, zone: RecordZone.ID, asset: Asset, bytes size: Int
    ) async throws -> RoundResult {
        // B's notification stream (a zone subscription, as an app would watch) stamps when each
        // record arrives, so measuring does not compete with replication for B's actors.
        let arrivals = Arrivals()
        try await b.store.saveSubscription(Subscription(id: "latency", kind: .zone(zone)))
        let stream = await b.store.notifications()
        let watcher = Task {
            for await n in stream {
                let now = ContinuousClock.now
                for id in n.recordIDs { await arrivals.note(id.name, at: now) }
            }
        }
        defer { watcher.cancel() }
        var lastID: Record.ID? = nil
        /// Per sample: milliseconds from A's save to B's notification, those spent in the save, and
        /// whether the hypervisor stole CPU time while it ran (read again after a tick, 10 ms, since
        /// the guest books stolen time at its next tick).
        func latencies(_ count: Int, prefix: String) async throws -> [Sample] {
            var out = [Sample]()
            for i in 0..<count {
                let stolenBefore = stolenSeconds()
                var r = Record(recordType: "Note", id: Record.ID(name: "\(prefix)-\(i)", zone: zone))
                r["text"] = .string("change \(i)")
                lastID = r.id
                let start = ContinuousClock.now
                try await a.save(r)
                let saved = ContinuousClock.now
                let deadline = start + .seconds(30)
                var arrived: ContinuousClock.Instant? = nil
                while arrived == nil && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(1))
                    arrived = await arrivals.instant(r.id.name)
                }
                guard let arrived else { throw BenchError("record \(r.id.name) did not reach B within 30 s") }
                try await Task.sleep(for: .milliseconds(10))
                out.append(
                    Sample(
                        total: Harness.seconds(arrived - start) * 1000, save: Harness.seconds(saved - start) * 1000,
                        stolen: stolenSeconds() > stolenBefore))
                try await Task.sleep(for: .milliseconds(10))
            }
            return out
        }
        // Idle means idle: the source file, A's import and the last round's receiver written back.
        Glibc.sync()
        let idle = try await latencies(100, prefix: "idle-\(round)")

        resetPeakRSS()
        let t1 = ContinuousClock.now
        let fetch = Task { try await b.fetchAsset(asset) }
        let stolenAtStart = stolenSeconds()
        let usageAtStart = ProcessUsage.now()
        var during = [Sample]()
        var i = 0
        while during.count < 100 {
            // Only samples taken while the transfer is still running count.
            let lat = try await latencies(1, prefix: "busy-\(round)-\(i)")
            i += 1
            if await b.sync.assetTransfers()[asset] != nil { during += lat } else { break }
        }
        // A fetch that never ends is reported, not waited for forever.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(600))
            fetch.cancel()
        }
        let outcome = await fetch.result
        watchdog.cancel()
        if case .failure(let error) = outcome {
            throw BenchError(
                "B's fetch of \(asset) did not finish within 600 s (\(error)); \(await b.sync.assetTransfers()[asset] ?? 0) chunks were still missing"
            )
        }
        let seconds = Harness.seconds(ContinuousClock.now - t1)
        let stolen = stolenSeconds() - stolenAtStart
        let usage = ProcessUsage.now() - usageAtStart
        let rss = peakRSSMegabytes()
        guard (try? b.assets.isComplete(asset)) == true else {
            throw BenchError("B does not hold the asset after the fetch")
        }
        let chunks = await b.sync.statistics.assetChunksReceived
        guard let lastID else { throw BenchError("round \(round) saved no record") }
        printNote(
            "round \(round): \(fixed(Double(size) / seconds / 1e6, 1)) MB/s, \(during.count) samples during the transfer"
        )
        return RoundResult(
            idle: idle, during: during, seconds: seconds, rss: rss, chunks: chunks,
            stolenPercent: stolen / seconds / Double(ProcessInfo.processInfo.activeProcessorCount) * 100,
            cpuPerGiB: usage.cpuSeconds * Double(1 << 30) / Double(size),
            switchesPerChunk: Double(usage.switches) / Double(max(chunks, 1)), lastID: lastID)
    }

    /// The process's CPU time (user and system, every thread: both nodes) and context switches
    /// (voluntary and not), from `getrusage`. Per gibibyte moved they say what a transfer costs
    /// the machine, which varies far less from run to run than its speed on a shared host.
    struct ProcessUsage {
        var cpuSeconds: Double
        var switches: Int

        static func now() -> ProcessUsage {
            var u = rusage()
            guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u) == 0 else {
                return ProcessUsage(cpuSeconds: 0, switches: 0)
            }
            func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
            return ProcessUsage(
                cpuSeconds: seconds(u.ru_utime) + seconds(u.ru_stime), switches: u.ru_nvcsw + u.ru_nivcsw)
        }

        static func - (a: ProcessUsage, b: ProcessUsage) -> ProcessUsage {
            ProcessUsage(cpuSeconds: a.cpuSeconds - b.cpuSeconds, switches: a.switches - b.switches)
        }
    }

    /// One latency sample of ``transferCases()``.
    struct Sample {
        /// Milliseconds from A's save to B's notification.
        var total: Double
        /// Milliseconds of that in A's save.
        var save: Double
        /// Whether the hypervisor stole CPU time while it ran.
        var stolen: Bool
    }
}
