// PowerCutVFSTests: the power-cut VFS itself, and that every connection of a store goes through it.

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
    /// Opens a store through the VFS with recording started, runs `body`, cuts the power with
    /// every file doing `mode`, closes the abandoned store and reopens through the default VFS.
    /// Also returns whether the log file exists after the cut.
    static func cutAround(
        _ dir: ScratchDirectory, synchronous: Store.Configuration.Synchronous, mode: Int32,
        _ body: (Store) async throws -> Void
    ) async throws -> (store: Store, logExists: Bool) {
        #expect(shoal_powercut_register() == 0)
        var c = Store.Configuration()
        c.synchronous = synchronous
        c.replicationSynchronous = synchronous
        c.vfsName = SHOAL_POWERCUT_VFS_NAME
        shoal_powercut_reset(7, 0)
        var store: Store? = try Store.open(directory: dir.path, configuration: c)
        try await body(store!)
        shoal_powercut_force_mode(mode)
        #expect(shoal_powercut_cut_now() == 1)
        shoal_powercut_force_mode(-1)
        store = nil
        _ = store
        var waited = 0
        while shoal_powercut_open_files() > 0 && waited < 2_000 {
            await Task.yield()
            waited += 1
        }
        #expect(shoal_powercut_open_files() == 0, "the abandoned store closes its files")
        shoal_powercut_reset(0, 0)
        let logExists = FileManager.default.fileExists(atPath: dir.path + "/store.sqlite-wal")
        c.vfsName = nil
        return (try Store.open(directory: dir.path, configuration: c), logExists)
    }

    static let zone = RecordZone.ID(name: "vfs")

    /// Unsynced commits (`synchronous=NORMAL`: the log is not synced at commit) are gone when
    /// the cut drops unsynced writes, kept when it keeps them; synced ones (`FULL`) survive
    /// dropping.
    @Test(arguments: [
        (Store.Configuration.Synchronous.normal, Int32(1), false),
        (.normal, 0, true), (.full, 1, true), (.full, 3, true)
    ])
    func theCutDropsWhatWasNotSynced(synchronous: Store.Configuration.Synchronous, mode: Int32, survives: Bool)
        async throws
    {
        let dir = ScratchDirectory("shoal-powercut-vfs")
        // The zone is created and synced before recording starts, through a store of its own.
        do {
            var c = Store.Configuration()
            c.synchronous = .full
            let s = try Store.open(directory: dir.path, configuration: c)
            try await s.createZone(Self.zone)
        }
        let (reopened, logExists) = try await Self.cutAround(dir, synchronous: synchronous, mode: mode) { s in
            for i in 0..<5 {
                var r = Record(recordType: "Item", id: Record.ID(name: "n\(i)", zone: Self.zone))
                r["value"] = .int64(Int64(i))
                _ = try await s.save(r, policy: .allKeys)
            }
        }
        // SQLite syncs a new log's header at its first commit, even NORMAL, and with it the
        // directory: the log file itself stays.
        #expect(logExists)
        let ids = try await reopened.allRecordIDs(in: Self.zone)
        #expect(ids.count == (survives ? 5 : 0), "\(synchronous) with mode \(mode): \(ids.count) records")
    }

    /// A log created since the directory was last synced (the first store's close removed it;
    /// opening through the VFS created it again) is gone after a cut that undoes unsynced
    /// directory entries, and there after one that keeps them: nothing has synced it yet.
    @Test(arguments: [(Int32(1), false), (0, true)])
    func aLogWhoseDirectoryWasNotSyncedMayVanish(mode: Int32, exists: Bool) async throws {
        let dir = ScratchDirectory("shoal-powercut-vfs")
        do {
            var c = Store.Configuration()
            c.synchronous = .full
            let s = try Store.open(directory: dir.path, configuration: c)
            try await s.createZone(Self.zone)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/store.sqlite-wal"))
        let (reopened, logExists) = try await Self.cutAround(dir, synchronous: .normal, mode: mode) { _ in }
        #expect(logExists == exists)
        #expect(try await reopened.zone(Self.zone).id == Self.zone)
    }

    /// The checkpointer's connection opens through the store's VFS too (the reader's, opened
    /// at its first query, is set up the same way): with the threshold at one page, a background
    /// checkpoint runs, and the files open through the VFS are more than the writer's two.
    @Test func everyConnectionOfTheStoreUsesItsVFS() async throws {
        let dir = ScratchDirectory("shoal-powercut-vfs")
        #expect(shoal_powercut_register() == 0)
        shoal_powercut_reset(7, 0)
        var c = Store.Configuration()
        c.synchronous = .normal
        c.checkpointPages = 1
        c.vfsName = SHOAL_POWERCUT_VFS_NAME
        var store: Store? = try Store.open(directory: dir.path, configuration: c)
        try await store!.createZone(Self.zone)
        var waited = 0
        while await store!.backgroundCheckpoints == 0 && waited < 200 {
            var r = Record(recordType: "Item", id: Record.ID(name: "n\(waited)", zone: Self.zone))
            r["value"] = .int64(Int64(waited))
            _ = try await store!.save(r, policy: .allKeys)
            try await Task.sleep(for: .milliseconds(5))
            waited += 1
        }
        #expect(await store!.backgroundCheckpoints > 0)
        #expect(try await store!.remainingChangesInBackground(in: Self.zone, after: nil) == waited)
        // Writer: database and log; checkpointer: the same two; reader: the same two.
        #expect(shoal_powercut_open_files() == 6)
        store = nil
        _ = store
        waited = 0
        while shoal_powercut_open_files() > 0 && waited < 2_000 {
            await Task.yield()
            waited += 1
        }
        #expect(shoal_powercut_open_files() == 0, "closing the store closes every file it opened")
    }
}
