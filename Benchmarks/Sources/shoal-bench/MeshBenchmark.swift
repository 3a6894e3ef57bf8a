// MeshBenchmark: N nodes in one process over loopback TLS, in a full mesh and in a ring — what
// each change costs each node on the wire, against one body per node, and how fast it converges.

import Foundation
import Shoal
import ShoalSamples

/// `shoal-bench mesh`: a stream of changes saved on random nodes of a mesh (Benchmarks/README.md,
/// `mesh`).
///
/// For each topology (`full`: every node dials every later one; `ring`: each dials the next) and
/// each size (`SHOAL_BENCH_MESH_NODES`, default `4,8,16`), the nodes share one zone (node 0 owns
/// it), connect, and then `SHOAL_BENCH_MESH_CHANGES` (default 200) records of about 200 bytes
/// are saved one at a time, each on a random node (seeded), each waited for on every node.
///
/// Lines: `mesh topology=<full|ring> nodes=N upstreams=<on|off> changes=… records_per_change_per_node=…
/// bytes_per_change_per_node=… vs_minimum=… convergence_p50_ms=… convergence_p99_ms=… cpu_s=…`.
/// The minimum is one body per node per change: each of the other N − 1 nodes receives the
/// saved version once. `bytes` are the `changes` payloads received (decompressed), `wire_…` the
/// bytes off the sockets (after TLS, compressed).
enum MeshBenchmark: BenchmarkSuite {
    static let name = "mesh"
    static let summary = "N nodes over loopback in a full mesh and a ring: bytes per change per node, convergence"
    static let zone = RecordZone.ID(name: "mesh")

    static var sizes: [Int] {
        let text = ProcessInfo.processInfo.environment["SHOAL_BENCH_MESH_NODES"] ?? "4,8,16"
        return text.split(separator: ",").compactMap { Int($0) }.filter { $0 >= 2 }
    }
    static var changes: Int { Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_MESH_CHANGES"] ?? "") ?? 200 }
    /// `SHOAL_BENCH_MESH_UPSTREAMS=0` turns off leaving versions to subscribers' upstreams
    /// (`SyncConfiguration.skipsUpstreams`), for comparison.
    static var skipsUpstreams: Bool { ProcessInfo.processInfo.environment["SHOAL_BENCH_MESH_UPSTREAMS"] != "0" }

    static func run() throws { try runBlocking { try await runAsync() } }

    static func runAsync() async throws {
        for topology in ["full", "ring"] {
            for n in sizes { try await measure(topology: topology, nodes: n) }
        }
    }

    /// The change record `i`: about 200 bytes, as the sync suite's records.
    static func change(_ i: Int, rng: inout SplitMix64) -> Record {
        var r = Record(recordType: "Item", id: Record.ID(name: "change-\(i)", zone: zone))
        r["text"] = .string(NotesCorpus.sentence(words: 8, using: &rng))
        r["title"] = .string("Change number \(i)")
        r["score"] = .double(Double(i % 1000) / 10)
        r["owner"] = .string(["alice", "bob", "carol"][i % 3])
        r["tag"] = .string(["red", "green", "blue", "amber"][i % 4])
        return r
    }

    static func measure(topology: String, nodes n: Int) async throws {
        var nodes = [ShoalNode]()
        var dirs = [String]()
        defer { for d in dirs { try? FileManager.default.removeItem(atPath: d) } }
        for i in 0..<n {
            var sync = SyncConfiguration()
            sync.skipsUpstreams = skipsUpstreams
            // `SHOAL_BENCH_LIVE_DELAY_MS`, as in the sync suite: the live batching delay.
            if let d = ProcessInfo.processInfo.environment["SHOAL_BENCH_LIVE_DELAY_MS"].flatMap({ Int($0) }), d >= 0 {
                sync.liveBatchDelay = .milliseconds(d)
            }
            let (node, dir) = try await HostileBenchmark.temporaryNode("mesh\(i)", sync: sync)
            nodes.append(node)
            dirs.append(dir)
        }
        for i in 0..<n { for j in 0..<n where i != j { try await nodes[i].trustDevice(nodes[j].deviceID) } }
        try await nodes[0].createZone(zone)
        for j in 1..<n { try await nodes[0].shareZone(zone, with: nodes[j].deviceID, role: .readWrite) }
        var ports = [Int]()
        for node in nodes { ports.append(try await node.listen(host: "127.0.0.1", port: 0)) }
        let links: [(Int, Int)] =
            topology == "full"
            ? (0..<n).flatMap { i in (i + 1..<n).map { (i, $0) } }
            : (0..<n).map { ($0, ($0 + 1) % n) }
        for (i, j) in links { await nodes[i].connect(to: "127.0.0.1", port: ports[j]) }
        let setup = ContinuousClock.now
        for node in nodes {
            while (await node.zones()).map(\.id) != [zone] {
                try await Task.sleep(for: .milliseconds(10))
                if ContinuousClock.now - setup > .seconds(60) {
                    throw BenchError("the zone did not reach every node of the \(topology) mesh of \(n) in 60 s")
                }
            }
        }
        // Every node's notification stream stamps each change's arrival.
        let arrivals = Arrivals()
        var watchers = [Task<Void, Never>]()
        for (i, node) in nodes.enumerated() {
            try await node.saveSubscription(Subscription(id: "mesh", kind: .zone(zone)))
            let stream = await node.notifications(of: "mesh")
            watchers.append(
                Task {
                    for await note in stream {
                        let now = ContinuousClock.now
                        for id in note.recordIDs { await arrivals.note("\(i)/\(id.name)", at: now) }
                    }
                })
        }
        defer { for w in watchers { w.cancel() } }
        // Settle: the share and the first batches are exchanged before counting starts.
        try await Task.sleep(for: .milliseconds(300))
        var recordsBefore = 0, bytesBefore = 0, wireBefore = 0
        for node in nodes {
            recordsBefore += await node.sync.statistics.recordsReceived
            bytesBefore += await node.sync.statistics.bytesReceived
            wireBefore += await node.traffic().bytesReceived
        }
        let cpuBefore = AssetsBenchmark.ProcessUsage.now()
        var rng = SplitMix64(seed: UInt64(n) &* 31 &+ (topology == "full" ? 1 : 2))
        var convergence = [Double]()
        var bodyBytes = 0
        let count = changes
        for k in 0..<count {
            let origin = Int(rng.next() % UInt64(n))
            let record = change(k, rng: &rng)
            let start = ContinuousClock.now
            let saved = try await nodes[origin].save(record)
            bodyBytes += saved.encoded().count
            let deadline = start + .seconds(20)
            var last: ContinuousClock.Instant? = nil
            while ContinuousClock.now < deadline {
                var all = true
                var latest = start
                for i in 0..<n where i != origin {
                    guard let t = await arrivals.instant("\(i)/\(record.id.name)") else { all = false; break }
                    latest = max(latest, t)
                }
                if all { last = latest; break }
                try await Task.sleep(for: .milliseconds(1))
            }
            guard let last else {
                throw BenchError("change \(k) did not reach every node of the \(topology) mesh of \(n) within 20 s")
            }
            convergence.append(Harness.seconds(last - start) * 1000)
        }
        // Late duplicates still on their way are part of the cost: let them land.
        try await Task.sleep(for: .milliseconds(500))
        let cpu = AssetsBenchmark.ProcessUsage.now() - cpuBefore
        var records = 0, bytes = 0, wire = 0
        for node in nodes {
            records += await node.sync.statistics.recordsReceived
            bytes += await node.sync.statistics.bytesReceived
            wire += await node.traffic().bytesReceived
        }
        records -= recordsBefore; bytes -= bytesBefore; wire -= wireBefore
        let receivers = Double(count * (n - 1))
        let body = Double(bodyBytes) / Double(count)
        func pct(_ xs: [Double], _ p: Double) -> Double {
            let s = xs.sorted(); return s[min(s.count - 1, Int(Double(s.count) * p))]
        }
        print(
            "mesh topology=\(topology) nodes=\(n) upstreams=\(skipsUpstreams ? "on" : "off") changes=\(count) body_bytes=\(Int(body)) records_per_change_per_node=\(fixed(Double(records) / receivers, 2)) bytes_per_change_per_node=\(Int(Double(bytes) / receivers)) vs_minimum=\(fixed(Double(bytes) / receivers / body, 2)) wire_bytes_per_change_per_node=\(Int(Double(wire) / receivers)) convergence_p50_ms=\(fixed(pct(convergence, 0.5), 2)) convergence_p99_ms=\(fixed(pct(convergence, 0.99), 2)) cpu_s=\(fixed(cpu.cpuSeconds, 2))"
        )
        for node in nodes { await node.shutdown() }
    }
}
