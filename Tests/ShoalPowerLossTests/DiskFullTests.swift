// DiskFullTests: the store on a disk that fills up at a seeded point, and after space returns.

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
    /// Seeded: the disk fills at a seeded write while a node saves, saves atomic batches and
    /// applies replicated versions. Every call either returns or fails with `quotaExceeded` and
    /// leaves nothing of itself behind; once space returns the same store writes again, and after
    /// reopening everything that returned is there and the database is intact.
    @Test(arguments: 1...40)
    func aFullDiskRefusesWritesWholeAndTheStoreGoesOn(seed: UInt64) async throws {
        var rng = SeededRandom(state: seed &* 0x9E37_79B9_7F4A_7C15)
        let dir = ScratchDirectory("shoal-diskfull")
        let zone = RecordZone.ID(name: "full")
        do {
            var c = Store.Configuration()
            c.synchronous = .normal
            let s = try Store.open(directory: dir.path, configuration: c)
            try await s.createZone(zone)
        }
        #expect(shoal_powercut_register() == 0)
        shoal_powercut_reset(seed, 0)
        var c = Store.Configuration()
        c.checkpointPages = [2, 16, 256][rng.below(3)]
        c.vfsName = SHOAL_POWERCUT_VFS_NAME
        var store: Store? = try Store.open(directory: dir.path, configuration: c)
        shoal_powercut_fill_disk_at(UInt64(1 + rng.below(300)))
        var held: [String: VersionVector] = [:]
        var refused = 0
        for step in 0..<60 {
            if step == 40 { shoal_powercut_fill_disk_at(0) }  // space returns
            let s = store!
            var names: [String] = []
            for _ in 0..<(1 + rng.below(rng.chance(30) ? 40 : 3)) {
                let name = "n\(rng.below(200))"
                if !names.contains(name) { names.append(name) }
            }
            let records = names.map { name in
                var r = Record(recordType: "Item", id: Record.ID(name: name, zone: zone))
                r["value"] = .int64(Int64(step))
                r["pad"] = .string(String(repeating: "p", count: 300 + step * 37 % 900))
                return r
            }
            do {
                let saved = try await s.modify(saving: records, policy: .allKeys)
                for r in saved.savedRecords { held[r.id.name] = r.versionVector }
            } catch let e as ShoalError where e.code == .quotaExceeded {
                refused += 1
                #expect(step < 40, "seed \(seed): refused after space returned: \(e)")
                // Nothing half-written: every name of the batch is as it was before the call.
                for name in names {
                    let id = Record.ID(name: name, zone: zone)
                    if let v = held[name] {
                        #expect(
                            try await s.record(for: id).versionVector == v,
                            "seed \(seed): \(name) changed by a refused batch")
                    } else {
                        await #expect(throws: ShoalError.self, "seed \(seed): \(name) saved by a refused batch") {
                            try await s.record(for: id)
                        }
                    }
                }
            } catch {
                Issue.record("seed \(seed): a full disk gave \(error), not quotaExceeded")
            }
        }
        store = nil
        _ = store
        var waited = 0
        while shoal_powercut_open_files() > 0 && waited < 2_000 {
            await Task.yield()
            waited += 1
        }
        shoal_powercut_reset(0, 0)
        #expect(PowerCut.integrityProblem(dir.path + "/store.sqlite") == nil, "seed \(seed)")
        c.vfsName = nil
        let reopened = try Store.open(directory: dir.path, configuration: c)
        for (name, v) in held.sorted(by: { $0.key < $1.key }) {
            #expect(
                try await reopened.record(for: Record.ID(name: name, zone: zone)).versionVector == v,
                "seed \(seed): \(name)")
        }
        #expect(try await reopened.allRecordIDs(in: zone).count == held.count, "seed \(seed)")
        // The disk fills within the first 300 writes and stays full for 40 steps of growing
        // records: the store must have been refused (else this seed tested nothing).
        #expect(refused > 0, "seed \(seed): the disk never refused a write")
    }
}
