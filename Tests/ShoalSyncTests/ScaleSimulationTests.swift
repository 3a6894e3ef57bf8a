// ScaleSimulationTests: many nodes in a sparse random topology — each linked to 3–5 others —
// with partitions, resets and crashes, must converge once healed, however far apart writers are.

import Foundation
import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

extension Simulation {
    /// A connected random graph: a ring, then random extra links until every node has 3 to 5.
    func sparseTopology(minDegree: Int = 3, maxDegree: Int = 5) -> Set<[Int]> {
        let n = nodes.count
        var edges = Set<[Int]>()
        var degree = [Int](repeating: 0, count: n)
        func add(_ a: Int, _ b: Int) {
            guard a != b, degree[a] < maxDegree, degree[b] < maxDegree, edges.insert(pairKey(a, b)).inserted else {
                return
            }
            degree[a] += 1
            degree[b] += 1
        }
        for i in 0..<n { add(i, (i + 1) % n) }
        var attempts = 0
        while degree.contains(where: { $0 < minDegree }), attempts < 100 * n {
            let a = degree.firstIndex { $0 < minDegree } ?? int(n)
            add(a, int(n))
            attempts += 1
        }
        return edges
    }

    /// A workload on a sparse topology: writes on random nodes, deliveries, resets, crashes and
    /// partitions of single links; then every link heals and the network runs until quiet.
    /// Returns the log, the deliveries the healing took and its rounds (runRoundsUntilQuiet).
    func runSparse(steps: Int) async throws -> (WorkloadLog, healingDeliveries: Int, healingRounds: Int) {
        var log = WorkloadLog()
        let edges = sparseTopology()
        topology = edges
        let edgeList = edges.sorted { $0.lexicographicallyPrecedes($1) }
        try await createSharedZone(RecordZone.ID(name: "notes"), on: 0)
        try await createSharedZone(RecordZone.ID(name: "lab"), on: nodes.count / 2)
        for e in edgeList { try await connect(e[0], e[1]) }
        for _ in 0..<steps {
            let r = int(100)
            if r < 30 {
                let n = int(nodes.count)
                if nodes[n].up { await write(on: n, log: &log) }
            } else if r < 80 {
                let p = pending
                if !p.isEmpty {
                    let (i, toB) = p[int(p.count)]
                    try await deliver(link: i, toB: toB)
                }
            } else if r < 85 {
                let e = edgeList[int(edgeList.count)]
                try await connect(e[0], e[1])
            } else if r < 88, !links.isEmpty {
                await reset(int(links.count))
            } else if r < 90 {
                try await crash(int(nodes.count))
            } else if r < 94 {
                let e = edgeList[int(edgeList.count)]
                partitions.insert(e)
                if let i = links.firstIndex(where: { pairKey($0.a, $0.b) == e }) { await reset(i) }
            } else if r < 97, let p = partitions.sorted(by: { $0.lexicographicallyPrecedes($1) }).first {
                partitions.remove(p)
            } else {
                clock.advance(UInt64(int(2000)))
            }
        }
        partitions.removeAll()
        let before = framesDelivered
        for e in edgeList { try await connect(e[0], e[1]) }
        let rounds = try await runRoundsUntilQuiet()
        if rounds == nil { Issue.record("the network did not go quiet") }
        return (log, framesDelivered - before, rounds ?? -1)
    }
}

@Suite struct ScaleSimulationTests {
    /// `swift test` runs 2 seeds of 16 nodes; the soak, 100 nodes:
    /// `SHOAL_SIM_SCALE_NODES=100 SHOAL_SIM_SCALE_SEEDS=3 swift test --filter ScaleSimulationTests`.
    static let nodeCount = Int(ProcessInfo.processInfo.environment["SHOAL_SIM_SCALE_NODES"] ?? "") ?? 16
    static let seedCount = Int(ProcessInfo.processInfo.environment["SHOAL_SIM_SCALE_SEEDS"] ?? "") ?? 2
    static let firstSeed = UInt64(ProcessInfo.processInfo.environment["SHOAL_SIM_FIRST_SEED"] ?? "") ?? 7001

    @Test func sparseMeshesConverge() async throws {
        for seed in Self.firstSeed..<(Self.firstSeed + UInt64(Self.seedCount)) {
            // Every node has a device key; zones are owned and shared, and their signed shares
            // reach nodes several hops from the owner through other members.
            let sim = try await Simulation(seed: seed, nodes: Self.nodeCount, identities: true)
            let (log, healing, rounds) = try await sim.runSparse(steps: Self.nodeCount * 20)
            let problems = try await sim.check(log)
            var received = 0
            for node in sim.nodes { received += await node.sync.statistics.recordsReceived }
            let degrees = (0..<Self.nodeCount).map { n in sim.topology?.filter { $0.contains(n) }.count ?? 0 }
            print(
                "simulation-scale seed=\(seed) nodes=\(Self.nodeCount) links=\(sim.topology?.count ?? 0) degree=\(degrees.min() ?? 0)-\(degrees.max() ?? 0) saves=\(log.saves.count) deletes=\(log.deletes.count) crashes=\(sim.crashes) frames=\(sim.framesDelivered) healing_frames=\(healing) healing_rounds=\(rounds) bytes=\(sim.bytesDelivered) versions_received=\(received) error_closes=\(sim.log.count) identities=on"
            )
            #expect(
                problems.isEmpty,
                "seed \(seed) (\(Self.nodeCount) nodes; rerun with SHOAL_SIM_FIRST_SEED=\(seed) SHOAL_SIM_SCALE_SEEDS=1): \(problems.prefix(5).joined(separator: "; "))"
            )
            // Nodes write only once a zone's share has reached them, several hops from its owner:
            // at 100 nodes a run writes about one record per node or two, not one per node.
            #expect(
                log.saves.count >= Self.nodeCount / 4,
                "the workload must write: \(log.saves.count) saves on \(Self.nodeCount) nodes")
            #expect(degrees.allSatisfy { (3...5).contains($0) } || Self.nodeCount < 6, "degrees \(degrees)")
        }
    }
}
