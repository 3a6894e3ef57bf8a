// AssetStoreTests: round trips of every size class, every import and export path, progress, limits and errors.

import Testing
@testable import ShoalAssets
import ShoalWire
import Foundation

@Suite struct AssetStoreTests {
    /// 0 B, 1 B, exactly one chunk (the minimum, and the maximum of content with no cut point),
    /// and many chunks, with the standard chunking.
    @Test(arguments: [0, 1, 16 << 10, -(256 << 10), 3 << 20 + 12345])
    func roundTrip(size: Int) async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir)
        // A negative size means that many zero bytes: no cut points, so one maximum-size chunk.
        let bytes = size < 0 ? [UInt8](repeating: 0, count: -size) : randomBytes(size, seed: UInt64(size))
        let path = try dir.file("in.bin", bytes)
        let asset = try await store.importFile(at: path)
        #expect(asset == assetOf(bytes))
        let manifest = try store.manifest(of: asset)
        #expect(manifest.chunks.map(\.length).reduce(0, +) == bytes.count)
        switch size {
        case 0: #expect(manifest.chunks.isEmpty)
        case 1, 16 << 10, -(256 << 10): #expect(manifest.chunks.count == 1)
        default: #expect(manifest.chunks.count > 20)
        }
        #expect(try store.isComplete(asset))
        #expect(try await store.readAll(asset) == bytes)
        let out = dir.path + "/out.bin"
        try await store.write(asset, to: out)
        #expect(try readFile(out) == bytes)
        // Bytes and streams of odd-sized buffers give the same asset and manifest.
        #expect(try await store.importBytes(bytes) == asset)
        let pieces = stride(from: 0, to: bytes.count, by: 77_777).map {
            Array(bytes[$0..<min(bytes.count, $0 + 77_777)])
        }
        #expect(
            try await store.importStream(
                AsyncStream { c in
                    pieces.forEach { c.yield($0) }; c.finish()
                }) == asset)
        #expect(try store.manifest(of: asset) == manifest)
    }

    @Test func reopenedStoreReadsWhatWasImported() async throws {
        let dir = TempDirectory()
        let bytes = randomBytes(300_000, seed: 9)
        let asset = try await AssetStore.temporary(dir, small: true).importBytes(bytes)
        let reopened = try AssetStore.temporary(dir, small: true)
        #expect(try await reopened.readAll(asset) == bytes)
    }

    @Test func fsyncedImportRoundTrips() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true) { $0.fsync = true }
        let bytes = randomBytes(200_000, seed: 2)
        let asset = try await store.importFile(at: try dir.file("a", bytes))
        try await store.write(asset, to: dir.path + "/b")
        #expect(try readFile(dir.path + "/b") == bytes)
    }

    @Test func compressionKeepsOnlyWhatPays() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true) { $0.compression = .zstd(level: 3) }
        let text = Array(String(repeating: "the quick brown fox jumps over the lazy dog. ", count: 4000).utf8)
        let noise = randomBytes(100_000, seed: 5)
        for bytes in [text, noise, text + noise] {
            let asset = try await store.importBytes(bytes)
            #expect(try await store.readAll(asset) == bytes)
        }
        let textAsset = assetOf(text), noiseAsset = assetOf(noise)
        func storedBytes(_ a: Asset) throws -> Int {
            try store.manifest(of: a).chunks.reduce(0) {
                $0 + (store.chunks.segments.location(of: $1.hash)?.stored ?? 0)
            }
        }
        #expect(try storedBytes(textAsset) < text.count / 10)
        // Random chunks are stored raw.
        #expect(try storedBytes(noiseAsset) == noise.count)
    }

    @Test func progressIsMonotonicAndEndsAtTheSize() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true)
        let bytes = randomBytes(500_000, seed: 4)
        let reports = ReportLog()
        let asset = try await store.importFile(at: try dir.file("p", bytes), progress: { reports.append($0) })
        var seen = reports.all
        #expect(seen.count > 3)
        #expect(
            zip(seen, seen.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes && $0.chunks <= $1.chunks })
        #expect(
            seen.last
                == AssetProgress(
                    completedBytes: 500_000, totalBytes: 500_000, chunks: try store.manifest(of: asset).chunks.count))
        reports.clear()
        try await store.write(asset, to: dir.path + "/q", progress: { reports.append($0) })
        seen = reports.all
        #expect(seen.last?.completedBytes == 500_000 && seen.last?.fractionCompleted == 1)
        reports.clear()
        _ = try await store.importBytes([], progress: { reports.append($0) })
        #expect(reports.all == [AssetProgress(completedBytes: 0, totalBytes: 0, chunks: 0)])
    }

    @Test func missingFileAndDirectoryAreAssetFileNotFound() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir)
        let e = await expectAssetError(.assetFileNotFound) {
            _ = try await store.importFile(at: dir.path + "/nope.jpg")
        }
        #expect(e?.path == dir.path + "/nope.jpg")
        #expect(e?.message.contains("does not exist") == true)
        await expectAssetError(.assetFileNotFound) { _ = try await store.importFile(at: dir.path) }
        // A FIFO is refused without blocking on its open.
        #expect(mkfifo(dir.path + "/pipe", 0o644) == 0)
        let fifo = await expectAssetError(.assetFileNotFound) { _ = try await store.importFile(at: dir.path + "/pipe") }
        #expect(fifo?.message.contains("not a regular file") == true)
    }

    @Test func assetsOverTheLimitAreRefusedWithTheSetting() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir, small: true) { $0.maxAssetBytes = 100_000 }
        let bytes = randomBytes(100_001, seed: 1)
        let e = await expectAssetError(.limitExceeded) {
            _ = try await store.importFile(at: try dir.file("big", bytes))
        }
        #expect(e?.message.contains("maxAssetBytes") == true && e?.message.contains("100000") == true)
        await expectAssetError(.limitExceeded) { _ = try await store.importBytes(bytes) }
        // A stream is stopped as soon as it passes the limit, without reading the rest.
        let pulled = ReportLog()
        let stream = AsyncStream<[UInt8]> { c in
            for i in 0..<100 { c.yield([UInt8](repeating: UInt8(i), count: 10_000)) }
            c.finish()
        }
        await expectAssetError(.limitExceeded) {
            _ = try await store.importStream(stream, progress: { pulled.append($0) })
        }
        #expect(pulled.all.allSatisfy { $0.completedBytes <= 100_000 })
        #expect(try await store.importBytes(Array(bytes.prefix(100_000))) == assetOf(Array(bytes.prefix(100_000))))
    }

    @Test func unknownAssetIsNotAvailable() async throws {
        let dir = TempDirectory()
        let store = try AssetStore.temporary(dir)
        let ghost = assetOf([1, 2, 3])
        #expect(try store.isComplete(ghost) == false)
        let e = await expectAssetError(.assetNotAvailable) { _ = try store.contents(of: ghost) }
        #expect(e?.hash == ghost.hash && e?.message.contains(ghost.hash.hex) == true)
        await expectAssetError(.assetNotAvailable) { try await store.write(ghost, to: dir.path + "/x") }
        await expectAssetError(.assetNotAvailable) { _ = try store.missingChunks(of: ghost) }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/x"))
        // The right hash with the wrong size is not the stored asset.
        let real = try await store.importBytes([1, 2, 3])
        await expectAssetError(.assetNotAvailable) { _ = try store.manifest(of: Asset(hash: real.hash, size: 4)) }
    }

    @Test func configurationIsChecked() {
        let dir = TempDirectory()
        #expect(throws: AssetError.self) { try AssetStore.temporary(dir) { $0.readBufferBytes = 256 << 10 } }
    }

    @Test func errorDescriptionsNameTheCode() {
        let e = AssetError.io("open", "/x/y", errno: 2)
        #expect(e.description.hasPrefix("AssetError.io: open /x/y failed: "))
        #expect(e.errno == 2 && e.path == "/x/y")
    }
}

/// Collects progress reports from the callback (which may run on another thread).
final class ReportLog: @unchecked Sendable {
    private var reports: [AssetProgress] = []
    private let lock = NSLock()
    func append(_ p: AssetProgress) { lock.lock(); reports.append(p); lock.unlock() }
    func clear() { lock.lock(); reports.removeAll(); lock.unlock() }
    var all: [AssetProgress] { lock.lock(); defer { lock.unlock() }; return reports }
}
