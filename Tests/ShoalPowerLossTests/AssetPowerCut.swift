// AssetPowerCut: one seeded run of an asset store up to a power cut below it, and the checks after.

@testable import ShoalAssets
import ShoalWire

/// What a run's checks found; the soak adds them up.
struct AssetPowerCutFindings {
    var cuts = 0
    /// The power went off inside a store call (the call failed), not between calls.
    var cutsInsideACall = 0
    var unopenable = 0
    /// Assets whose import returned and whose record was saved (still referenced), and that are
    /// gone or read back wrong.
    var lostAcknowledged = 0
    /// Chunks the store reports present whose bytes are not the chunk.
    var chunksBad = 0
    /// Assets the store reports complete whose content does not read back right.
    var corruptPresent = 0
    /// Runs whose store could not import, collect or read after reopening.
    var unusableAfterReopen = 0
    var imports = 0
    var collections = 0
    var segmentsCompacted = 0
    var sectorsDropped: UInt64 = 0
    var sectorsKept: UInt64 = 0
    var namesUndone: UInt64 = 0
    /// One line per failure, naming the seed.
    var failures: [String] = []

    var failed: Int { unopenable + lostAcknowledged + chunksBad + corruptPresent + unusableAfterReopen }

    mutating func add(_ o: AssetPowerCutFindings) {
        cuts += o.cuts; cutsInsideACall += o.cutsInsideACall; unopenable += o.unopenable
        lostAcknowledged += o.lostAcknowledged; chunksBad += o.chunksBad; corruptPresent += o.corruptPresent
        unusableAfterReopen += o.unusableAfterReopen; imports += o.imports; collections += o.collections
        segmentsCompacted += o.segmentsCompacted
        sectorsDropped += o.sectorsDropped; sectorsKept += o.sectorsKept; namesUndone += o.namesUndone
        failures += o.failures
    }

    func summary(seeds: Int) -> String {
        "power-loss: assets seeds=\(seeds) cuts=\(cuts) cuts_inside_a_call=\(cutsInsideACall) lost_acknowledged=\(lostAcknowledged) "
            + "unopenable=\(unopenable) asset_chunks_bad=\(chunksBad) corrupt_present=\(corruptPresent) "
            + "unusable_after_reopen=\(unusableAfterReopen) imports=\(imports) collections=\(collections) "
            + "segments_compacted=\(segmentsCompacted) sectors_dropped=\(sectorsDropped) sectors_kept=\(sectorsKept) "
            + "names_undone=\(namesUndone)"
    }
}

/// One seeded run: an asset store on a ``PageCacheFileSystem`` imports assets that share
/// chunks, references some (a record saved that names the asset), drops references, collects
/// garbage (which compacts segments) and restarts, until the power goes off at a seeded call;
/// then it reopens on the disk the cut left and checks Spec/assets.md §3.5: the store opens, every
/// chunk it reports is intact, every referenced asset whose import returned reads back, and
/// every asset it reports complete reads back right.
///
/// Imports stage their chunks in one lane here (``AssetStore/Configuration/importsInOneLane``),
/// so one task makes every call below the store and a seed replays exactly.
struct AssetPowerCut {
    let seed: UInt64
    var rng: SeededRandom
    /// Syncs of segment files do nothing (the test that shows a removed sync is caught).
    var ignoreSegmentSyncs = false
    static let directory = "/node/assets"

    init(seed: UInt64) {
        self.seed = seed
        rng = SeededRandom(state: seed &* 0xA24B_AED4_963E_E407 &+ 7)
    }

    func configuration(_ fs: PageCacheFileSystem, segmentBytes: Int64, zstd: Bool) -> AssetStore.Configuration {
        var c = AssetStore.Configuration()
        // Small chunks and segments, so a few kilobytes make many chunks and several segments.
        // The sizes are valid by construction.
        c.chunking = (try? ChunkingParameters(minimum: 1024, average: 4096, maximum: 16384)) ?? .standard
        c.readBufferBytes = 64 << 10
        c.segmentBytes = segmentBytes
        c.compression = zstd ? .zstd(level: 1) : .none
        c.fileSystem = fs
        // One lane: the seed's calls reach the file system in one order, so a seed replays exactly.
        c.importsInOneLane = true
        return c
    }

    /// Content made of blocks from a small pool, so assets share chunks.
    mutating func content(_ pool: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<(1 + rng.below(6)) { bytes += pool[rng.below(pool.count)] }
        if rng.chance(50) {
            for _ in 0..<(rng.below(3000)) { bytes.append(UInt8(truncatingIfNeeded: rng.next())) }
        }
        return bytes
    }

    /// Runs the seed: one cut, then the checks.
    mutating func run() async -> AssetPowerCutFindings {
        var f = AssetPowerCutFindings()
        do {
            try await runThrowing(&f)
        } catch {
            f.failures.append("seed \(seed): the run itself failed: \(error)")
            f.unusableAfterReopen += 1
        }
        return f
    }

    private mutating func runThrowing(_ f: inout AssetPowerCutFindings) async throws {
        var pool: [[UInt8]] = []
        for _ in 0..<6 {
            pool.append((0..<(2000 + rng.below(12_000))).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
        let segmentBytes: Int64 = [16 << 10, 64 << 10, 256 << 10][rng.below(3)]
        let zstd = rng.chance(25)
        let opCount = 8 + rng.below(24)
        // Creating the store takes about 270 calls (256 manifest shards); an import about 30.
        // One seed in ten cuts while the store is being created, the rest during the run.
        let cutWhileCreating = rng.chance(10)
        let cutAt = UInt64(1 + rng.below(cutWhileCreating ? 300 : opCount * 30))
        let fs = PageCacheFileSystem(cutSeed: rng.next())
        if ignoreSegmentSyncs { fs.ignoreSyncs(ofFilesEndingWith: ".seg") }
        if cutWhileCreating { fs.cut(atCall: cutAt) }

        var contents: [ContentHash: [UInt8]] = [:]  // every asset whose import returned
        var referenced: [Asset] = []  // imports returned and records saved
        var store: AssetStore? = nil
        do {
            store = try AssetStore.open(
                directory: Self.directory, configuration: configuration(fs, segmentBytes: segmentBytes, zstd: zstd))
            if !cutWhileCreating { fs.cut(atCall: cutAt) }
            for _ in 0..<opCount {
                guard let s = store else { break }
                let roll = rng.below(100)
                if roll < 50 {
                    let bytes = content(pool)
                    let pin = await s.makePin()
                    let asset = try await s.importBytes(bytes, pin: pin)
                    contents[asset.hash] = bytes
                    f.imports += 1
                    // The record naming it is saved (durable by the record store's contract),
                    // and the pin released.
                    if rng.chance(70) && !referenced.contains(asset) { referenced.append(asset) }
                    await s.unpin(pin)
                } else if roll < 62 {
                    if !referenced.isEmpty { referenced.remove(at: rng.below(referenced.count)) }
                } else if roll < 82 {
                    let report = try await s.collectGarbage(keeping: Set(referenced.map(\.hash)))
                    f.collections += 1
                    f.segmentsCompacted += report.segmentsCompacted
                } else if roll < 94 {
                    guard !referenced.isEmpty else { continue }
                    let asset = referenced[rng.below(referenced.count)]
                    _ = try await Self.read(s, asset)
                } else {
                    store = nil
                    store = try AssetStore.open(
                        directory: Self.directory,
                        configuration: configuration(fs, segmentBytes: segmentBytes, zstd: zstd))
                }
            }
        } catch {
            // The power went off inside the call: it did not return, so nothing is acknowledged.
            if !fs.isCut {
                f.failures.append("seed \(seed): a call failed before the cut: \(error)")
                f.unusableAfterReopen += 1
            }
            f.cutsInsideACall += 1
        }
        fs.cutNow()
        store = nil
        _ = store
        f.cuts += 1
        let report = fs.report
        f.sectorsDropped += report.sectorsDropped; f.sectorsKept += report.sectorsKept;
        f.namesUndone += report.namesUndone
        guard let disk = fs.afterTheCut() else {
            f.failures.append("seed \(seed): no disk after the cut")
            f.unusableAfterReopen += 1
            return
        }
        try await check(
            &f, disk: disk, contents: contents, referenced: referenced, segmentBytes: segmentBytes, zstd: zstd)
    }

    /// The asset's content, read and verified.
    static func read(_ s: AssetStore, _ asset: Asset) async throws -> [UInt8] {
        var out: [UInt8] = []
        for try await buffer in try s.contents(of: asset) { out += buffer }
        return out
    }

    private func check(
        _ f: inout AssetPowerCutFindings, disk: PageCacheFileSystem, contents: [ContentHash: [UInt8]],
        referenced: [Asset], segmentBytes: Int64, zstd: Bool
    ) async throws {
        func fail(_ what: String) { f.failures.append("seed \(seed): \(what)") }
        let s: AssetStore
        do {
            s = try AssetStore.open(
                directory: Self.directory, configuration: configuration(disk, segmentBytes: segmentBytes, zstd: zstd))
        } catch {
            f.unopenable += 1
            fail("the asset store does not open: \(error)")
            return
        }
        // Every chunk the store reports present is intact.
        var scratch: [UInt8] = []
        let decompressor = ZstdDecompressor()
        for hash in s.chunks.segments.hashes().sorted(by: { $0.hex < $1.hex }) where s.chunks.contains(hash) {
            do {
                _ = try s.chunks.read(hash, length: nil, of: nil, scratch: &scratch, decompressor: decompressor)
            } catch {
                f.chunksBad += 1
                fail("chunk \(hash) is reported present and does not read back: \(error)")
            }
        }
        // Every referenced asset whose import returned reads back.
        for asset in referenced {
            let got = try? await Self.read(s, asset)
            if got != contents[asset.hash] {
                f.lostAcknowledged += 1
                fail(
                    "asset \(asset.hash) (\(asset.size) bytes) was imported and referenced, and \(got == nil ? "is gone" : "reads back wrong")"
                )
            }
        }
        // Every asset the store reports complete reads back right.
        for hash in try s.manifests.allHashes().sorted(by: { $0.hex < $1.hex }) {
            guard let bytes = contents[hash] else { continue }  // an import the cut interrupted
            let asset = Asset(hash: hash, size: Int64(bytes.count))
            guard (try? s.isComplete(asset)) == true else { continue }
            if (try? await Self.read(s, asset)) != bytes {
                f.corruptPresent += 1
                fail("asset \(hash) is reported complete and does not read back")
            }
        }
        // Healing and usable: a collection keeps what is referenced, a new import reads back.
        do {
            try await s.collectGarbage(keeping: Set(referenced.map(\.hash)))
            for asset in referenced where contents[asset.hash] != nil {
                if (try? await Self.read(s, asset)) != contents[asset.hash] {
                    f.lostAcknowledged += 1
                    fail("asset \(asset.hash) is gone after a collection that kept it")
                }
            }
            let fresh: [UInt8] = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
            let asset = try await s.importBytes(fresh)
            if try await Self.read(s, asset) != fresh {
                f.unusableAfterReopen += 1
                fail("an import after reopening reads back wrong")
            }
        } catch {
            f.unusableAfterReopen += 1
            fail("the reopened store failed: \(error)")
        }
    }
}
