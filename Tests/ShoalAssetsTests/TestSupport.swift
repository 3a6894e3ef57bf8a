// TestSupport: temporary directories, seeded content, stores with small chunks, error expectations.

import Testing
import ShoalAssets
import ShoalSamples
import ShoalWire
import Foundation

/// A fresh directory under the system temporary directory, removed on deinit.
final class TempDirectory: Sendable {
    let path: String
    init(_ name: String = "shoal-assets") {
        path = FileManager.default.temporaryDirectory.path + "/\(name)-\(UInt64.random(in: 0...UInt64.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `bytes` to a file in this directory and returns its path.
    func file(_ name: String, _ bytes: [UInt8]) throws -> String {
        let p = path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: p))
        return p
    }
}

/// `count` pseudo-random bytes from `seed` (SplitMix64 words, little-endian).
func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var rng = SplitMix64(seed: seed)
    var out = [UInt8](repeating: 0, count: count)
    out.withUnsafeMutableBytes { raw in
        var i = 0
        while i < count {
            var w = rng.next().littleEndian
            let n = min(8, count - i)
            withUnsafeBytes(of: &w) { raw.baseAddress!.advanced(by: i).copyMemory(from: $0.baseAddress!, byteCount: n) }
            i += n
        }
    }
    return out
}

/// Small chunks (1 KiB / 4 KiB / 16 KiB) so tests exercise many chunks with little data.
let smallChunks = try! ChunkingParameters(minimum: 1 << 10, average: 4 << 10, maximum: 16 << 10)

extension AssetStore {
    /// Inserts chunks `indexes` of `chunks` (a manifest's list) as a peer would send them: cut
    /// from the asset's `bytes`.
    func insertChunks(_ indexes: some Sequence<Int>, of chunks: [AssetManifest.Chunk], from bytes: [UInt8]) async throws
    {
        for i in indexes {
            let offset = chunks.prefix(i).reduce(0) { $0 + $1.length }
            try await insertChunk(Array(bytes[offset..<offset + chunks[i].length]), hash: chunks[i].hash)
        }
    }

    /// A store in `dir` without fsync (tests do not survive power loss), optionally with small chunks.
    static func temporary(
        _ dir: TempDirectory, small: Bool = false, _ configure: (inout Configuration) -> Void = { _ in }
    ) throws -> AssetStore {
        var c = Configuration()
        c.fsync = false
        if small {
            c.chunking = smallChunks
            c.readBufferBytes = 64 << 10
        }
        configure(&c)
        return try AssetStore.open(directory: dir.path + "/assets", configuration: c)
    }

    /// Reads the whole asset through ``contents(of:)``.
    func readAll(_ asset: Asset) async throws -> [UInt8] {
        var out: [UInt8] = []
        for try await buffer in try contents(of: asset) { out += buffer }
        return out
    }
}

/// The asset reference of `bytes`.
func assetOf(_ bytes: [UInt8]) -> Asset { Asset(hash: .sha256(bytes), size: Int64(bytes.count)) }

/// Runs `body`, expecting an ``AssetError`` with `code`; returns it.
@discardableResult
func expectAssetError(
    _ code: AssetError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async -> AssetError? {
    do {
        try await body()
    } catch let e as AssetError {
        if e.code != code { Issue.record("expected \(code), got \(e)", sourceLocation: sourceLocation) }
        return e
    } catch {
        Issue.record("expected AssetError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
    Issue.record("expected \(code), but nothing was thrown", sourceLocation: sourceLocation)
    return nil
}

/// Reads a file's bytes.
func readFile(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

/// The repository root (for Spec/ files).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// Overwrites one byte of a file in place (the same inode, which an open store may hold):
/// with `to`, or with the byte XOR 0x40.
func damage(_ path: String, at offset: Int64, to value: UInt8? = nil) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    try handle.seek(toOffset: UInt64(offset))
    let old = try handle.read(upToCount: 1)?.first ?? 0
    try handle.seek(toOffset: UInt64(offset))
    try handle.write(contentsOf: [value ?? old ^ 0x40])
}
