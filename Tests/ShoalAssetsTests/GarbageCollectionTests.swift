// GarbageCollectionTests: what collection removes and keeps, pins, leftovers, and a seeded
// stress test of collection running against concurrent imports.

import Testing
@testable import ShoalAssets
import ShoalSamples
import ShoalWire
import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

@Suite struct GarbageCollectionTests {
    @Test func removesWhatIsNotKeptAndKeepsSharedChunks() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let common = randomBytes(60_000, seed: 80)
        let a = try await store.importBytes(common + randomBytes(40_000, seed: 81))
        let b = try await store.importBytes(common + randomBytes(40_000, seed: 82))
        let c = try await store.importBytes(randomBytes(40_000, seed: 83))
        let report = try await store.collectGarbage(keeping: [a.hash, c.hash])
        #expect(report.manifestsRemoved == 1 && report.manifestsKept == 2)
        #expect(report.chunksRemoved > 0 && report.bytesRemoved > 0)
        #expect(try store.isComplete(a) && store.isComplete(c))
        #expect(try store.isComplete(b) == false)
        // Nothing else to remove the second time.
        let again = try await store.collectGarbage(keeping: [a.hash, c.hash])
        #expect(again.manifestsRemoved == 0 && again.chunksRemoved == 0)
        #expect(again.chunksKept == report.chunksKept)
        let all = try await store.collectGarbage(keeping: [])
        #expect(all.chunksKept == 0 && all.manifestsKept == 0)
        #expect(store.chunks.segments.hashes().isEmpty)
        #expect(all.segmentsCompacted > 0 && all.segmentBytesFreed > 0)
        #expect(
            try FileSystem.contents(of: store.chunks.segments.folder).isEmpty,
            "every segment was dead, so every file is gone")
    }

    /// The keep set of a collection is computed while saves go on: an asset imported and
    /// unpinned after the collection began (its record committed after its zone was read) is
    /// kept; one unpinned before it began is not.
    @Test func whatIsPinnedDuringACollectionIsKeptByIt() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let before = await store.makePin()
        let old = try await store.importBytes(randomBytes(50_000, seed: 95), pin: before)
        await store.unpin(before)
        await store.beginCollection()
        // Meanwhile: a save imports its file under a pin, commits, and releases the pin.
        let pin = await store.makePin()
        let bytes = randomBytes(70_000, seed: 96)
        let saved = try await store.importBytes(bytes, pin: pin)
        await store.unpin(pin)
        let report = try await store.collectGarbage(keeping: [])
        #expect(try await store.readAll(saved) == bytes, "the asset saved during the collection was removed")
        #expect(try store.isComplete(old) == false && report.manifestsRemoved == 1)
        // The next collection, begun after the save, no longer keeps it.
        try await store.collectGarbage(keeping: [])
        #expect(try store.isComplete(saved) == false)
    }

    @Test func pinnedImportsSurviveUntilUnpinned() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let pin = await store.makePin()
        let bytes = randomBytes(70_000, seed: 90)
        let asset = try await store.importBytes(bytes, pin: pin)
        try await store.collectGarbage(keeping: [])
        #expect(try await store.readAll(asset) == bytes)
        await store.unpin(pin)
        await store.unpin(pin)  // twice is harmless
        try await store.collectGarbage(keeping: [])
        #expect(try store.isComplete(asset) == false)
    }

    @Test func leftoverTemporaryFilesAreRemovedOnceOld() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let old = store.temporary + "/crashed.tmp", fresh = store.temporary + "/writing.tmp"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: old))
        try Data([4]).write(to: URL(fileURLWithPath: fresh))
        var times = [timespec(tv_sec: time(nil) - 7200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7200, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, old, &times, 0) == 0)
        let report = try await store.collectGarbage(keeping: [])
        #expect(report.temporaryFilesRemoved == 1)
        #expect(!FileManager.default.fileExists(atPath: old) && FileManager.default.fileExists(atPath: fresh))
    }

    @Test func damagedKeptManifestIsRemovedAndReported() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let asset = try await store.importBytes(randomBytes(20_000, seed: 91))
        try Data([0x53, 0x48]).write(to: URL(fileURLWithPath: store.manifests.path(of: asset.hash)))
        let report = try await store.collectGarbage(keeping: [asset.hash])
        #expect(report.damagedManifestsRemoved == 1 && report.chunksRemoved > 0)
        #expect(try store.isComplete(asset) == false)
    }

    /// Several tasks import assets built from a shared pool of blocks (so chunks dedupe across
    /// assets, including ones just collected) while another task collects garbage in a loop with
    /// a random keep set. Invariants: an import in progress never loses a chunk (every import
    /// returns a complete asset while its pin is held), and every asset in the keep set stays
    /// complete and reads back. `SHOAL_ASSETS_GC_SEED` replays a run; `SHOAL_ASSETS_GC_ROUNDS` lengthens it.
    @Test func collectionNeverRemovesWhatAnImportOrTheKeepSetNeeds() async throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_ASSETS_GC_SEED", default: UInt64.random(in: 0 ... .max))
        let rounds = Int(ProcessInfo.processInfo.environment["SHOAL_ASSETS_GC_ROUNDS"] ?? "") ?? 40
        let dir = TempDirectory()
        // Small segments, so collections compact (rewrite and remove segments) while imports append.
        let store = try AssetStore.temporary(dir, small: true) { $0.segmentBytes = 48 << 10 }
        let pool = (0..<24).map { randomBytes(6000, seed: seed &+ UInt64($0)) }
        let kept = KeptAssets()
        let failures = FailureLog()
        let compacted = Counter()

        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var rng = SplitMix64(seed: seed &+ 1000 &+ UInt64(worker))
                    for round in 0..<rounds {
                        var bytes: [UInt8] = []
                        for _ in 0..<Int.random(in: 2...12, using: &rng) {
                            bytes += pool[Int.random(in: 0..<pool.count, using: &rng)]
                        }
                        let pin = await store.makePin()
                        do {
                            let asset = try await store.importBytes(bytes, pin: pin)
                            if try !store.isComplete(asset) {
                                failures.add(
                                    "seed \(seed) worker \(worker) round \(round): import returned an incomplete asset")
                            }
                            if try await store.readAll(asset) != bytes {
                                failures.add("seed \(seed): pinned asset reads back wrong")
                            }
                            if Bool.random(using: &rng) { kept.insert(asset, bytes) }
                        } catch {
                            failures.add("seed \(seed) worker \(worker) round \(round): \(error)")
                        }
                        await store.unpin(pin)
                    }
                }
            }
            group.addTask {
                var rng = SplitMix64(seed: seed &+ 7)
                for _ in 0..<(rounds * 2) {
                    var keep = kept.snapshot()
                    // Forget some kept assets for good.
                    for (hash, _) in keep where Int.random(in: 0..<10, using: &rng) == 0 {
                        kept.remove(hash); keep[hash] = nil
                    }
                    do {
                        let report = try await store.collectGarbage(keeping: Set(keep.keys))
                        compacted.add(report.segmentsCompacted)
                        for (_, entry) in keep {
                            if try !store.isComplete(entry.asset) {
                                failures.add("seed \(seed): kept asset \(entry.asset) lost a chunk")
                            }
                        }
                        // Compaction moved records: one kept asset's bytes must still read back.
                        if let entry = keep.values.randomElement(using: &rng),
                            try await store.readAll(entry.asset) != entry.bytes
                        {
                            failures.add("seed \(seed): kept asset \(entry.asset) reads back wrong after a collection")
                        }
                    } catch {
                        failures.add("seed \(seed): collection failed: \(error)")
                    }
                    await Task.yield()
                }
            }
        }
        let found = failures.all
        #expect(compacted.value > 0, "seed \(seed): no collection compacted a segment")
        #expect(
            found.count == 0,
            "\(found.count) failures, first \(found.prefix(3)) (replay with SHOAL_ASSETS_GC_SEED=\(seed))")
        // The segments as compaction left them, scanned by a fresh open.
        let reopened = try AssetStore.open(directory: store.directory, configuration: store.configuration)
        for (_, entry) in kept.snapshot() {
            #expect(try await store.readAll(entry.asset) == entry.bytes, "seed \(seed)")
            #expect(try await reopened.readAll(entry.asset) == entry.bytes, "seed \(seed), reopened")
        }
        #expect(await store.pinnedCounts == (0, 0))
    }
}

/// The assets the stress test's keep set holds, with their content.
final class KeptAssets: @unchecked Sendable {
    private var entries: [ContentHash: (asset: Asset, bytes: [UInt8])] = [:]
    private let lock = NSLock()
    func insert(_ asset: Asset, _ bytes: [UInt8]) { lock.lock(); entries[asset.hash] = (asset, bytes); lock.unlock() }
    func remove(_ hash: ContentHash) { lock.lock(); entries[hash] = nil; lock.unlock() }
    func snapshot() -> [ContentHash: (asset: Asset, bytes: [UInt8])] {
        lock.lock(); defer { lock.unlock() }; return entries
    }
}

/// Failures reported from concurrent tasks.
final class FailureLog: @unchecked Sendable {
    private var items: [String] = []
    private let lock = NSLock()
    func add(_ s: String) { lock.lock(); items.append(s); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
}

/// A count shared by concurrent tasks.
final class Counter: Sendable {
    private let count = Mutex(0)
    func add(_ n: Int) { count.withLock { $0 += n } }
    var value: Int { count.withLock { $0 } }
}
