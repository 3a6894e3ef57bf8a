// DurabilityTests: which writes commit with an fsync (FULL) and which leave it to the next one (NORMAL).

import Testing
import Foundation
import ShoalWire
@testable import ShoalStore
import CShoalThread

@Suite struct DurabilityTests {
    /// Local writes commit FULL; replication's writes commit with `replicationSynchronous`, and the
    /// next local write goes back to FULL (which also syncs everything committed before it).
    @Test func replicationWritesCommitWithTheirOwnSetting() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(d1) { $0.synchronous = .full }
        let b = try await Store.temporary(d2) { $0.synchronous = .full }
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        #expect(try await b.sqliteSynchronous() == 2)
        let v = try await a.save(note("n", "T"))
        #expect(try await b.apply(remoteChanges: [v], syncState: [.knowledge(zone: notes): [1]]).inserted == 1)
        #expect(try await b.sqliteSynchronous() == 1)
        _ = try await b.save(note("m", "local"))
        #expect(try await b.sqliteSynchronous() == 2)
        try await b.setSyncValue(.position(peer: a.nodeID, zone: notes), [2])
        #expect(try await b.sqliteSynchronous() == 1)
        try await b.acknowledge(peer: a.nodeID, zone: notes, vector: v.versionVector)
        #expect(try await b.sqliteSynchronous() == 1)
        try await b.modify(deleting: [v.id], policy: .allKeys)
        #expect(try await b.sqliteSynchronous() == 2)
        // Everything committed, whatever its setting, is there after reopening.
        let reopened = try await Store.temporary(d2) { $0.synchronous = .full }
        #expect(try await reopened.syncValue(.position(peer: a.nodeID, zone: notes)) == [2])
        #expect(try await reopened.syncValue(.knowledge(zone: notes)) == [1])
        #expect(try await reopened.record(for: note("m", "").id)["title"] == .string("local"))
    }

    /// Device bindings are the node's own record of the devices it met: they commit `FULL`, so a
    /// power cut cannot undo one and free the node ID for another device (Spec/security.md §5).
    @Test func deviceBindingsCommitFull() async throws {
        let d = TempDirectory()
        let s = try await Store.temporary(d) { $0.synchronous = .full }
        try await s.setSyncValue(.knowledge(zone: notes), [1])
        #expect(try await s.sqliteSynchronous() == 1)
        let device = try #require(DeviceID(bytes: [UInt8](repeating: 7, count: 32)))
        try await s.bind(NodeID(high: 1, low: 2), to: device)
        #expect(try await s.sqliteSynchronous() == 2)
        #expect(try await s.boundNode(of: device) == NodeID(high: 1, low: 2))
    }

    /// A commit that syncs is counted as under way while it runs, so that bulk asset writes in
    /// the process give way to it (Spec/assets.md §3.3); the count falls again when it is done,
    /// also when it rolls back. (Other tests' commits may run meanwhile, so only this test's own
    /// share of the count is asserted.)
    @Test func syncedCommitsAreCountedWhileTheyRun() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir) { $0.synchronous = .full }
        _ = try await store.createZone(notes)
        let inside = try await store.writeTransaction { shoal_record_commits() }
        #expect(inside >= 1, "a FULL commit is counted while it runs")
        // A rolled-back commit is no longer counted: a waiter that holds its own commit open
        // sees the count at its own 1 plus whatever other tests have under way, never ours.
        await #expect(throws: ShoalError.self) {
            try await store.writeTransaction { () throws(ShoalError) -> Void in
                #expect(shoal_record_commits() >= 1)
                throw ShoalError.invalidArguments("rolled back on purpose")
            }
        }
        // The store's NORMAL commits (replication) are not counted: checked inside one, where
        // this test's own share must be zero — so the count is whatever others hold, and a
        // begin left unbalanced above would show as a count that never falls to zero.
        var fell = false
        for _ in 0..<2000 where !fell {
            if shoal_record_commits() == 0 { fell = true } else { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(fell, "the count falls back to zero once this test's commits are done")
    }

    /// `replicationSynchronous = .full` makes replication commit FULL too; a store opened NORMAL
    /// commits everything NORMAL.
    @Test func settingsCompose() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory(), d3 = TempDirectory()
        let a = try await Store.temporary(d1) { $0.synchronous = .full }
        let strict = try await Store.temporary(d2) {
            $0.synchronous = .full; $0.replicationSynchronous = .full
        }
        let loose = try await Store.temporary(d3) {
            $0.synchronous = .normal; $0.replicationSynchronous = .full
        }
        let inc = try await a.createZone(notes).incarnation
        let v = try await a.save(note("n", "T"))
        for s in [strict, loose] {
            try await s.createZone(notes, incarnation: inc)
            try await s.apply(remoteChanges: [v])
        }
        #expect(try await strict.sqliteSynchronous() == 2)
        #expect(try await loose.sqliteSynchronous() == 1)
    }

    /// Checkpoints run beside the writer and keep the log short: after many small commits the
    /// WAL file stays near the threshold, the background checkpointer did the work (it counts
    /// only checkpoints that copied frames: through a connection that has not yet read the
    /// database, a checkpoint is a successful no-op, which is how they silently did nothing
    /// before), and every commit is there after reopening.
    @Test func backgroundCheckpointsKeepTheLogShort() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir) {
            $0.synchronous = .full; $0.checkpointPages = 64
        }
        try await store.createZone(notes)
        for i in 0..<400 { _ = try await store.save(note("n\(i)", "title \(i)")) }
        // Give a queued checkpoint time to finish, then one more commit restarts the log.
        var waited = 0
        while await store.backgroundCheckpoints == 0 && waited < 200 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        #expect(await store.backgroundCheckpoints > 0)
        let walSize =
            (try? FileManager.default.attributesOfItem(atPath: dir.path + "/store.sqlite-wal")[.size] as? Int) ?? 0
        // 400 commits of several pages each would be thousands of pages without checkpoints;
        // the hard limit is 8 × 64 pages of 4 KiB.
        #expect(walSize <= 8 * 64 * 4096 + 64 * 4096, "WAL is \(walSize) bytes")
        let reopened = try await Store.temporary(dir)
        #expect(try await reopened.digest(of: notes).recordCount == 400)
    }
}
