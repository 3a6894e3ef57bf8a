// ReplicationDiskFullTests: applying a peer's batches and migrating the schema on a disk that
// fills up at a seeded write, and after space returns.

import CShoalPowerCut
import ShoalWire
@testable import ShoalStore
import Testing
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension PowerLossTests {
    /// Waits (bounded) until a released store has closed every file it opened through the VFS.
    static func closedThroughTheVFS() async -> Bool { await PowerCut.filesClosed() }

    /// Seeded: the disk fills at a seeded write while a node applies a peer's batches with their
    /// knowledge. A refused apply fails with `quotaExceeded` and leaves the replica and its
    /// knowledge as they were (the batch is not half applied); once space returns the same store
    /// applies it, the replica converges with the peer, and reopened it is intact.
    @Test(arguments: 1...20)
    func aFullDiskRefusesAnApplyWholeAndTheBatchAppliesLater(seed: UInt64) async throws {
        var run = PowerCut(seed: seed)
        var rng = SeededRandom(state: seed &* 0x94D0_49BB_1331_11EB &+ 3)
        let peerDir = ScratchDirectory("shoal-diskfull-peer"), dir = ScratchDirectory("shoal-diskfull-apply")
        let (batches, _, incarnation, peerDigest) = try await run.peerBatches(peerDir)
        do {
            let s = try Store.open(
                directory: dir.path, configuration: run.configuration(vfs: false, checkpointPages: 256))
            try await s.createZone(run.remoteZone, incarnation: incarnation)
        }
        #expect(shoal_powercut_register() == 0)
        shoal_powercut_reset(seed, 0)
        var c = run.configuration(vfs: true, checkpointPages: [2, 16, 256][rng.below(3)])
        do {
            let s = try Store.open(directory: dir.path, configuration: c)
            // The sync-state table exists before the disk fills (the first read creates it).
            _ = try await s.syncValue(PowerCut.knowledgeKey)
            shoal_powercut_fill_disk_at(shoal_powercut_events() + UInt64(1 + rng.below(40)))
            try await applyWhileTheDiskFills(s, seed: seed, batches: batches, run: run, peerDigest: peerDigest)
        }
        #expect(await Self.closedThroughTheVFS(), "seed \(seed)")
        shoal_powercut_reset(0, 0)
        #expect(PowerCut.integrityProblem(dir.path + "/store.sqlite") == nil, "seed \(seed)")
        c.vfsName = nil
        let reopened = try Store.open(directory: dir.path, configuration: c)
        #expect(try await reopened.digest(of: run.remoteZone) == peerDigest, "seed \(seed)")
        #expect(PowerCut.decode(try await reopened.syncValue(PowerCut.knowledgeKey)) == batches.count, "seed \(seed)")
    }

    /// Applies `batches` in order, retrying a refused one, while the disk is full for the first
    /// eight attempts; checks each refusal left nothing of the batch.
    private func applyWhileTheDiskFills(
        _ s: Store, seed: UInt64, batches: [[Record]], run: PowerCut, peerDigest: ZoneDigest
    ) async throws {
        var next = 0, refused = 0, attempt = 0
        while next < batches.count && attempt < batches.count + 12 {
            if attempt == 8 { shoal_powercut_fill_disk_at(0) }  // space returns
            attempt += 1
            let before = try await s.digest(of: run.remoteZone)
            let knowledgeBefore = PowerCut.decode(try await s.syncValue(PowerCut.knowledgeKey))
            var failure: ShoalError? = nil
            do {
                try await s.apply(
                    remoteChanges: batches[next], syncState: [PowerCut.knowledgeKey: PowerCut.encode(next + 1)])
                next += 1
            } catch {
                failure = error
            }
            guard let failure else { continue }
            #expect(failure.code == .quotaExceeded, "seed \(seed): a full disk gave \(failure)")
            refused += 1
            #expect(attempt <= 8, "seed \(seed): refused after space returned: \(failure)")
            #expect(failure.message.contains("full"), "seed \(seed): \(failure)")
            let after = try await s.digest(of: run.remoteZone)
            #expect(after == before, "seed \(seed): a refused apply changed the replica")
            let knowledgeAfter = PowerCut.decode(try await s.syncValue(PowerCut.knowledgeKey))
            #expect(knowledgeAfter == knowledgeBefore, "seed \(seed): a refused apply moved the knowledge")
        }
        #expect(next == batches.count, "seed \(seed): every batch applies once space returns")
        #expect(refused > 0, "seed \(seed): the disk never refused an apply")
        let converged = try await s.digest(of: run.remoteZone)
        #expect(converged == peerDigest, "seed \(seed)")
    }

    /// Seeded: a store at schema 6 opens through a disk that fills at a seeded write during the
    /// migration. The open fails with `quotaExceeded` and the store stays at schema 6 with its
    /// records; once space returns the open migrates it to 9 and every record is there.
    @Test(arguments: 1...12)
    func aFullDiskRefusesAMigrationWholeAndItCompletesLater(seed: UInt64) async throws {
        let run = PowerCut(seed: seed)
        let dir = ScratchDirectory("shoal-diskfull-migration")
        var saved: [String: VersionVector] = [:]
        do {
            let s = try Store.open(
                directory: dir.path, configuration: run.configuration(vfs: false, checkpointPages: 256))
            try await s.createZone(run.localZone)
            for i in 0..<(20 + Int(seed % 7) * 10) {
                saved["m\(i)"] = try await s.save(
                    PowerCut.record("m\(i)", zone: run.localZone, i * 37), policy: .allKeys
                ).versionVector
            }
        }
        #expect(
            PowerCut.execute(
                dir.path + "/store.sqlite",
                "DROP TABLE writer_entries; DROP TABLE writer_logs; DROP TABLE writer_checkpoints; ALTER TABLE zones DROP COLUMN log_seq; "
                    + "ALTER TABLE zones DROP COLUMN log_hlc; ALTER TABLE zones DROP COLUMN log_chain; "
                    + "DROP TABLE asset_refs; ALTER TABLE records DROP COLUMN base; UPDATE meta SET value = 6 WHERE key = 'schema'"
            ) == nil)
        #expect(shoal_powercut_register() == 0)
        shoal_powercut_reset(seed, 0)
        // Within the first few writes of the open: its migration grows the database and the log.
        shoal_powercut_fill_disk_at(1 + seed % 4)
        var c = run.configuration(vfs: true, checkpointPages: 256)
        var failure: ShoalError? = nil
        do {
            _ = try Store.open(directory: dir.path, configuration: c)
        } catch {
            failure = error
        }
        #expect(
            failure?.code == .quotaExceeded,
            "seed \(seed): the migration on a full disk gave \(failure.map { "\($0)" } ?? "no error")")
        #expect(failure?.message.contains("full") == true, "seed \(seed)")
        #expect(await Self.closedThroughTheVFS(), "seed \(seed)")
        #expect(
            PowerCut.scalar(dir.path + "/store.sqlite", "SELECT value FROM meta WHERE key = 'schema'") == "6",
            "seed \(seed): a refused migration left the schema moved")
        shoal_powercut_fill_disk_at(0)  // space returns
        do {
            let store = try Store.open(directory: dir.path, configuration: c)
            #expect(
                PowerCut.scalar(dir.path + "/store.sqlite", "SELECT value FROM meta WHERE key = 'schema'") == "11",
                "seed \(seed)")
            for (name, v) in saved.sorted(by: { $0.key < $1.key }) {
                let stored = try await store.record(for: Record.ID(name: name, zone: run.localZone))
                #expect(stored.versionVector == v, "seed \(seed): \(name)")
            }
        }
        #expect(await Self.closedThroughTheVFS(), "seed \(seed)")
        shoal_powercut_reset(0, 0)
        c.vfsName = nil
        #expect(PowerCut.integrityProblem(dir.path + "/store.sqlite") == nil, "seed \(seed)")
    }
}
