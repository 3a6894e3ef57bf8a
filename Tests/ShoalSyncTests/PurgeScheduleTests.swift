// PurgeScheduleTests: a node's purge rounds run on their schedule, purge what the store's rules allow, and log what they did.

import Testing
import ShoalSamples
import ShoalStore
import ShoalTestSupport
import ShoalWire
@testable import ShoalSync

@Suite struct PurgeScheduleTests {
    /// A node deletes a record a known peer has not acknowledged. A round inside the retention keeps its
    /// tombstone and logs nothing; once the retention has passed, the schedule's next round
    /// purges it and logs the count.
    @Test func aRoundPurgesWhatTheRetentionAllowsAndLogsIt() async throws {
        let sim = try await Simulation(seed: 5101, nodes: 1)
        let zone = RecordZone.ID(name: "notes"), store = sim.nodes[0].store, sync = sim.nodes[0].sync
        try await sync.createZone(zone)
        var r = Record(recordType: "Note", id: Record.ID(name: "n1", zone: zone))
        r["title"] = .string("x")
        _ = try await store.save(r)
        // A known peer that has seen the save, not the deletion.
        try await store.acknowledge(
            peer: NodeID(high: 0x9ee7, low: 1), zone: zone, vector: try await store.zone(zone).versionVector)
        try await store.delete(r.id)
        let log = LogLines()
        let schedule = PurgeSchedule(
            interval: .milliseconds(20), retention: .seconds(10),
            logger: log.logger)

        await schedule.round(on: sync)
        #expect(try await store.tombstoneState(of: zone).tombstones == 1)
        #expect(log.all.isEmpty)

        sim.clock.advance(11_000)
        let running = Task { await schedule.run(on: sync) }
        defer { running.cancel() }
        for _ in 0..<250 where await sync.statistics.tombstonesPurged == 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(await sync.statistics.tombstonesPurged == 1)
        #expect(try await store.tombstoneState(of: zone).tombstones == 0)
        #expect(log.rendered.contains("info purged tombstones count=1"), "\(log.rendered)")
    }
}
