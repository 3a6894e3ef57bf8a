// AssetsBenchmark: importing a large file into the asset store next to a plain copy of it, the
// bytes an edit re-sends, and the two hot loops (SHA-256, FastCDC) on their own.

import Foundation
import ShoalAssets
import ShoalSamples
import ShoalWire

/// `shoal-bench assets`: a file of `SHOAL_BENCH_ASSET_MIB` MiB (default 256) of random bytes
/// (incompressible, like media). Lines: `assets case=<name> …` with `MBps` (10^6 bytes/s) and,
/// where a case runs alone, `peak_rss_mb` (VmHWM, reset before the case).
/// `SHOAL_BENCH_CHUNK_AVG_KIB` runs the store with other chunk sizes (min avg/4, max avg×4), for
/// the measurements behind `Spec/assets.md` §2.3.
enum AssetsBenchmark: BenchmarkSuite {
    static let name = "assets"
    static let summary =
        "ShoalAssets: import vs cp, edit-resend, sha256, chunking; transfer over TCP vs cp, latency during it"

    static var mebibytes: Int { Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_ASSET_MIB"] ?? "") ?? 256 }
    static var chunking: ChunkingParameters {
        guard let kib = Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_CHUNK_AVG_KIB"] ?? ""),
            let p = try? ChunkingParameters(minimum: kib << 8, average: kib << 10, maximum: kib << 12)
        else { return .standard }
        return p
    }

    static func run() throws { try runBlocking { try await runAsync() } }

    static func runAsync() async throws {
        // SHOAL_BENCH_TRANSFER_ONLY=1: the transfer and its latency cases alone (Scripts/latency-pairs.sh).
        if ProcessInfo.processInfo.environment["SHOAL_BENCH_TRANSFER_ONLY"] == "1" { try await transferCases(); return }
        let size = mebibytes << 20
        let label = "\(mebibytes)mib"
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-bench-assets-\(UInt32.random(in: 0 ... .max))"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = dir + "/source.bin", edited = dir + "/edited.bin"
        try writeRandomFile(source, bytes: size, seed: 1, replacing: nil)
        try writeRandomFile(
            edited, bytes: size, seed: 1, replacing: (offset: size / 2 - (1 << 19), count: 1 << 20, seed: 2))
        printNote("file: \(size) bytes of random data in \(dir); chunking \(chunking)")

        // import vs cp, round robin, a fresh store (or target) each run; the best of three.
        // Imports with fsync (the default) and without (CPU and page-cache cost only).
        var importBest = Double.infinity, cpBest = Double.infinity, cpSyncBest = Double.infinity,
            importNoSyncBest = Double.infinity
        var importRSS = 0.0, chunks = 0, asset: Asset?
        for run in 0..<(Harness.quick ? 1 : 3) {
            for (fsync, best) in [(true, 0), (false, 1)] {
                let storeDir = dir + "/store-\(run)-\(fsync)"
                var config = AssetStore.Configuration()
                config.fsync = fsync
                config.chunking = chunking
                let store = try AssetStore.open(directory: storeDir, configuration: config)
                resetPeakRSS()
                let t = ContinuousClock.now
                let imported = try await store.importFile(at: source)
                let seconds = Harness.seconds(ContinuousClock.now - t)
                if best == 0 {
                    if seconds < importBest { importBest = seconds; importRSS = peakRSSMegabytes() }
                } else {
                    importNoSyncBest = min(importNoSyncBest, seconds)
                }
                chunks = try store.manifest(of: imported).chunks.count
                guard imported.size == Int64(size), asset == nil || asset == imported else {
                    throw BenchError("import gave \(imported), expected one asset of \(size) bytes")
                }
                asset = imported
                // Stores are removed at the end: deleting thousands of files just before the next
                // run's creations slows ext4's inode allocation (recently_deleted) for a while.
            }
            cpBest = min(cpBest, try copy(source, to: dir + "/copy.bin", fsync: false))
            cpSyncBest = min(cpSyncBest, try copy(source, to: dir + "/copy.bin", fsync: true))
            try FileManager.default.removeItem(atPath: dir + "/copy.bin")
        }
        let importRate = Harness.megabytesPerSecond(size, importBest), cpRate = Harness.megabytesPerSecond(size, cpBest)
        print(
            "assets case=import-\(label) MBps=\(fixed(importRate, 1)) nosync_MBps=\(fixed(Harness.megabytesPerSecond(size, importNoSyncBest), 1)) chunks=\(chunks) peak_rss_mb=\(fixed(importRSS, 1)) vs_cp=\(fixed(cpRate / importRate, 2))"
        )
        print(
            "assets case=cp-\(label) MBps=\(fixed(cpRate, 1)) fsync_MBps=\(fixed(Harness.megabytesPerSecond(size, cpSyncBest), 1))"
        )

        // edit-resend: B holds the file, A the edited copy; what B lacks of A's manifest.
        var config = AssetStore.Configuration()
        config.fsync = false
        config.chunking = chunking
        let b = try AssetStore.open(directory: dir + "/peer-b", configuration: config)
        let a = try AssetStore.open(directory: dir + "/peer-a", configuration: config)
        _ = try await b.importFile(at: source)
        let editedAsset = try await a.importFile(at: edited)
        let manifest = try a.manifest(of: editedAsset)
        let missing = b.missingChunks(of: manifest)
        let resent = missing.reduce(0) { $0 + $1.length }
        print(
            "assets case=edit-resend resent_bytes=\(resent) file_bytes=\(size) resent_chunks=\(missing.count) edit_bytes=\(1 << 20)"
        )
        try await a.collectGarbage(keeping: [])

        // export: the file back out of B (every chunk read and verified).
        resetPeakRSS()
        let t = ContinuousClock.now
        try await b.write(asset!, to: dir + "/export.bin")
        let exportSeconds = Harness.seconds(ContinuousClock.now - t)
        print(
            "assets case=export-\(label) MBps=\(fixed(Harness.megabytesPerSecond(size, exportSeconds), 1)) peak_rss_mb=\(fixed(peakRSSMegabytes(), 1))"
        )
        try FileManager.default.removeItem(atPath: dir + "/export.bin")

        // In functions of their own, so that their 64 MiB buffers are freed before the transfer
        // measures its peak memory.
        try await compressionCases(size: size, chunking: chunking, dir: dir)
        try hotLoopCases(size: size, chunking: chunking)

        // The cost of one hop onto the store's actor (an import takes one per buffer of chunks).
        let hops = 100_000
        let th = ContinuousClock.now
        for _ in 0..<hops { _ = await a.makePin() }
        print(
            "assets case=actor-hop ns_per_hop=\(fixed(Harness.seconds(ContinuousClock.now - th) / Double(hops) * 1e9, 0)) import_hops=\(size / (768 << 10))"
        )

        // Between two nodes over loopback TCP (SHOAL_BENCH_TRANSFER_MIB=0 skips it).
        if (Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_TRANSFER_MIB"] ?? "") ?? 1) > 0 {
            try await transferCases()
        }
    }

    /// The `compression` cases: 64 MiB of random bytes and of text imported with and without zstd.
    static func compressionCases(size: Int, chunking: ChunkingParameters, dir: String) async throws {
        // Compression: import 64 MiB of random bytes and of text (notes sentences) with chunk
        // compression off and with zstd level 3, fsync off (CPU cost only); bytes stored on disk.
        let random = randomBytes(min(size, 64 << 20), seed: 4)
        var rng = SplitMix64(seed: 5)
        var text: [UInt8] = []
        text.reserveCapacity(random.count)
        while text.count < random.count { text += Array((NotesCorpus.sentence(words: 12, using: &rng) + " ").utf8) }
        text.removeLast(text.count - random.count)
        for (dataName, data) in [("random", random), ("text", text)] {
            for (compressionName, compression) in [("none", ChunkCompression.none), ("zstd3", .zstd(level: 3))] {
                var c = AssetStore.Configuration()
                c.fsync = false
                c.compression = compression
                c.chunking = chunking
                let storeDir = dir + "/compression"
                let store = try AssetStore.open(directory: storeDir, configuration: c)
                let t = ContinuousClock.now
                _ = try await store.importBytes(data)
                let seconds = Harness.seconds(ContinuousClock.now - t)
                let stored = directoryBytes(storeDir + "/chunks")
                print(
                    "assets case=compression data=\(dataName) compression=\(compressionName) MBps=\(fixed(Harness.megabytesPerSecond(data.count, seconds), 1)) stored_bytes=\(stored) ratio=\(fixed(Double(stored) / Double(data.count), 3))"
                )
                try FileManager.default.removeItem(atPath: storeDir)
            }
        }
    }

    /// The `sha256` and `chunking` cases: the two hot loops over 64 MiB in memory.
    static func hotLoopCases(size: Int, chunking: ChunkingParameters) throws {
        // The hot loops on 64 MiB in memory.
        let sample = randomBytes(min(size, 64 << 20), seed: 3)
        let params = chunking
        let rates = try Harness.bestSecondsPerIteration([
            TimedCase(label: "sha256") { sample.withUnsafeBytes { Int(ContentHash.sha256($0).words.0 & 1) } },
            TimedCase(label: "chunking") {
                sample.withUnsafeBytes { raw in
                    var offset = 0, count = 0
                    while offset < raw.count {
                        offset += params.cutPoint(in: UnsafeRawBufferPointer(rebasing: raw[offset...]))
                        count += 1
                    }
                    return count
                }
            }
        ])
        print(
            "assets case=sha256 MBps=\(fixed(Harness.megabytesPerSecond(sample.count, rates[0]), 1)) bytes=\(sample.count)"
        )
        print(
            "assets case=chunking MBps=\(fixed(Harness.megabytesPerSecond(sample.count, rates[1]), 1)) bytes=\(sample.count)"
        )
    }

    /// Writes `bytes` random bytes (SplitMix64 words from `seed`) 1 MiB at a time, optionally with
    /// a range taken from another seed.
    static func writeRandomFile(
        _ path: String, bytes: Int, seed: UInt64, replacing: (offset: Int, count: Int, seed: UInt64)?
    ) throws {
        guard
            let out = FileHandle(forWritingAtPath: path)
                ?? (FileManager.default.createFile(atPath: path, contents: nil)
                    ? FileHandle(forWritingAtPath: path) : nil)
        else {
            throw BenchError("cannot create \(path)")
        }
        defer { try? out.close() }
        var rng = SplitMix64(seed: seed), other = SplitMix64(seed: replacing?.seed ?? 0)
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var offset = 0
        while offset < bytes {
            block.withUnsafeMutableBytes { raw in
                for i in stride(from: 0, to: raw.count, by: 8) {
                    let inEdit = replacing.map { offset + i >= $0.offset && offset + i < $0.offset + $0.count } ?? false
                    let word = rng.next()
                    raw.storeBytes(of: (inEdit ? other.next() : word).littleEndian, toByteOffset: i, as: UInt64.self)
                }
            }
            try out.write(contentsOf: block.prefix(bytes - offset))
            offset += block.count
        }
        // On disk before any case runs: a gigabyte of dirty pages would otherwise be written back
        // during (and charged to) whichever case next flushes the file system.
        try out.synchronize()
    }

    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            for i in stride(from: 0, to: count & ~7, by: 8) {
                raw.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self)
            }
            for i in (count & ~7)..<count { raw[i] = UInt8(truncatingIfNeeded: rng.next()) }
            initialized = count
        }
    }

    /// Copies with plain read/write through a 1 MiB buffer, as cp does; seconds.
    static func copy(_ from: String, to: String, fsync sync: Bool) throws -> Double {
        let t = ContinuousClock.now
        let input = open(from, O_RDONLY), output = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard input >= 0, output >= 0 else { throw BenchError("cannot open \(from) or \(to)") }
        defer { close(input); close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            guard buffer.withUnsafeBytes({ write(output, $0.baseAddress, n) }) == n else {
                throw BenchError("short write to \(to)")
            }
        }
        if sync { fsync(output) }
        return Harness.seconds(ContinuousClock.now - t)
    }

    /// The sizes of all files under `path`.
    static func directoryBytes(_ path: String) -> Int {
        var total = 0
        let e = FileManager.default.enumerator(atPath: path)
        while let name = e?.nextObject() as? String {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + name),
                attributes[.type] as? FileAttributeType == .typeRegular
            else { continue }
            total += (attributes[.size] as? Int) ?? 0
        }
        return total
    }

    /// Resets the peak resident set size (Linux: `5` into /proc/self/clear_refs), after handing
    /// the allocator's free memory back to the system (`malloc_trim`), so that a case's peak
    /// counts what it holds rather than what earlier cases left in the allocator's free lists.
    static func resetPeakRSS() {
        // Glibc's Swift module does not export malloc_trim (malloc.h); look it up.
        typealias Trim = @convention(c) (Int) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            _ = unsafeBitCast(symbol, to: Trim.self)(0)
        }
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// VmHWM from /proc/self/status in MB (10^6 bytes); 0 where there is none.
    static func peakRSSMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kib * 1024 / 1e6
    }

    /// Time the hypervisor ran something else while this machine's virtual CPUs wanted to run
    /// (`steal` in /proc/stat, all CPUs), in seconds; 0 where there is no such line. A virtual
    /// machine over its host's CPU budget is frozen whole for a while, and every latency sample
    /// that overlaps the freeze carries it (Benchmarks/README.md, `assets`; Spec/assets.md §9.1).
    static func stolenSeconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return 0 }
        let fields = line.split(separator: " ").dropFirst()
        guard fields.count >= 8, let ticks = Double(fields[fields.startIndex + 7]) else { return 0 }
        return ticks / Double(max(sysconf(Int32(_SC_CLK_TCK)), 1))
    }
}
