// SimulationReplayTests: replays one simulation seed with every node's trace, to explain a failure.
//
// SHOAL_DEBUG_SEED=113 SHOAL_DEBUG_RECORD=r0 swift test --filter SimulationReplayTests

import Foundation
import Testing
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct SimulationReplayTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SHOAL_DEBUG_SEED"] != nil))
    func dump() async throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["SHOAL_DEBUG_SEED"] ?? "") ?? 0
        let sim = try await Simulation(seed: seed, nodes: 3 + Int(seed % 2), identities: seed % 4 >= 2)
        await sim.enableTrace()
        let log = try await sim.run(steps: 120)
        let name = ProcessInfo.processInfo.environment["SHOAL_DEBUG_RECORD"] ?? "r1"
        for n in sim.nodes.indices {
            for z in await sim.nodes[n].store.zones() {
                let s = try await sim.state(of: z.id, on: n)
                if let b = s[name], let r = try? Record(decoding: b) {
                    print(
                        "node \(n) \(z.id): creation=\(String(describing: r.creation)) parent=\(String(describing: r.parent)) type=\(r.recordType) ext=\(r.extensions.count) vv=\(r.versionVector) heads=\(r.heads) deleted=\(r.isDeleted) fields=\(r.fields.map { "\($0.name)=\(String(describing: $0.value)) @\(String(describing: $0.stamp))" })"
                    )
                }
            }
        }
        for n in sim.nodes.indices {
            print(
                "node \(n) id \(sim.nodes[n].store.nodeID.short) knowledge: \(await sim.nodes[n].store.zones().map { $0.id })"
            )
        }
        for l in sim.log { print("CLOSE \(l)") }
        print("saves of \(name): \(log.saves.filter { $0.name == name }.map { "\($0.zone) \($0.dot)" })")
        print("deletes of \(name): \(log.deletes.filter { $0.name == name }.map { "\($0.zone) \($0.vector)" })")
    }
}
