// MemoryAssets: an in-memory AssetProvider for tests of the asset lane, with faults on demand.

import ShoalAssets
import Synchronization
import ShoalSync
package import ShoalWire

/// An in-memory asset store for tests of the asset lane (ShoalSync's simulation, ShoalNet over
/// TCP). Manifest: per chunk, its length (u32 LE) and SHA-256 (32 bytes). ``setCorrupt(_:)``
/// makes it serve a damaged chunk at that index.
package final class MemoryAssets: AssetProvider {
    /// An empty store.
    package init() {}

    struct Partial { var lengths: [Int]; var hashes: [[UInt8]]; var chunks: [Int: [UInt8]] }
    let state = Mutex<(complete: [Asset: [[UInt8]]], partial: [Asset: Partial], corrupt: Int?, lostAtFinish: Int?)>(
        ([:], [:], nil, nil))

    /// Holds `bytes` as an asset cut into `chunkSize` pieces; returns its reference.
    @discardableResult
    package func add(_ bytes: [UInt8], chunkSize: Int) -> Asset {
        let asset = Self.asset(of: bytes)
        let chunks = stride(from: 0, to: bytes.count, by: chunkSize).map {
            Array(bytes[$0..<min(bytes.count, $0 + chunkSize)])
        }
        state.withLock { $0.complete[asset] = chunks }
        return asset
    }

    package static func asset(of bytes: [UInt8]) -> Asset {
        Asset(hash: .sha256(bytes), size: Int64(bytes.count))
    }

    package func bytes(of asset: Asset) -> [UInt8]? { state.withLock { $0.complete[asset]?.flatMap { $0 } } }
    package func setCorrupt(_ index: Int?) { state.withLock { $0.corrupt = index } }
    /// The next finish finds chunk `index` gone (as if its file were torn by a crash): it keeps the
    /// manifest and fails, so the lane must fetch that chunk again.
    package func loseAtFinish(_ index: Int?) { state.withLock { $0.lostAtFinish = index } }

    /// While set, the next ``manifest(of:)`` answers as of its call but only once ``releaseManifestCheck()``
    /// is called — a check that a busy asset lane delays.
    let manifestGate = Mutex<(armed: Bool, held: CheckedContinuation<Void, Never>?)>((false, nil))

    package func holdNextManifestCheck() { manifestGate.withLock { $0.armed = true } }
    package var aManifestCheckIsHeld: Bool { manifestGate.withLock { $0.held != nil } }
    package func releaseManifestCheck() {
        manifestGate.withLock { g in
            g.held?.resume(); g.held = nil
        }
    }

    package func manifest(of asset: Asset) async -> [UInt8]? {
        let answer = state.withLock { s in
            s.complete[asset].map { chunks in
                chunks.flatMap { c in
                    withUnsafeBytes(of: UInt32(c.count).littleEndian, Array.init) + ContentHash.sha256(c).bytes
                }
            }
        }
        if manifestGate.withLock({ g in
            defer { g.armed = false }; return g.armed
        }) {
            await withCheckedContinuation { c in manifestGate.withLock { $0.held = c } }
        }
        return answer
    }

    package func chunk(_ index: Int, of asset: Asset) async -> [UInt8]? {
        state.withLock { s in
            guard let chunks = s.complete[asset], index < chunks.count else { return nil }
            var c = chunks[index]
            if s.corrupt == index, !c.isEmpty { c[0] ^= 0xFF }
            return c
        }
    }

    package func receiveManifest(_ bytes: [UInt8], for asset: Asset) async -> Int? {
        guard bytes.count % 36 == 0 else { return nil }
        var lengths = [Int](), hashes = [[UInt8]]()
        for at in stride(from: 0, to: bytes.count, by: 36) {
            lengths.append(
                Int(
                    UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3])
                        << 24))
            hashes.append(Array(bytes[(at + 4)..<(at + 36)]))
        }
        guard lengths.reduce(0, +) == Int(asset.size) else { return nil }
        return state.withLock { s in
            if s.partial[asset] == nil { s.partial[asset] = Partial(lengths: lengths, hashes: hashes, chunks: [:]) }
            return lengths.count
        }
    }

    package func receiveChunk(_ bytes: [UInt8], index: Int, of asset: Asset) async -> Bool {
        state.withLock { s in
            guard let p = s.partial[asset], index < p.hashes.count, ContentHash.sha256(bytes).bytes == p.hashes[index]
            else { return false }
            s.partial[asset]?.chunks[index] = bytes
            return true
        }
    }

    /// While set, the next ``missingChunks(of:)`` answers only once ``releaseMissingChunksCheck()``
    /// is called (as of then): the node takes other calls while a fetch chooses its peer.
    let missingGate = Mutex<
        (armed: Bool, held: CheckedContinuation<Void, Never>?, watchers: [CheckedContinuation<Void, Never>])
    >((false, nil, []))

    package func holdNextMissingChunksCheck() { missingGate.withLock { $0.armed = true } }
    /// Returns once a ``missingChunks(of:)`` call is held.
    package func missingChunksCheckHeld() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = missingGate.withLock { g in
                if g.held != nil { return true }
                g.watchers.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
    package func releaseMissingChunksCheck() {
        missingGate.withLock { g in
            g.held?.resume(); g.held = nil
        }
    }

    package func missingChunks(of asset: Asset) async -> [Int]? {
        if missingGate.withLock({ g in
            defer { g.armed = false }; return g.armed
        }) {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let watchers = missingGate.withLock { g in
                    g.held = c
                    defer { g.watchers = [] }
                    return g.watchers
                }
                for w in watchers { w.resume() }
            }
        }
        return state.withLock { s in s.partial[asset].map { p in p.lengths.indices.filter { p.chunks[$0] == nil } } }
    }

    package func abandon(_ asset: Asset) async {
        state.withLock { _ = $0.partial.removeValue(forKey: asset) }
    }

    package func finish(_ asset: Asset) async -> Bool {
        state.withLock { s in
            if let lost = s.lostAtFinish, s.partial[asset]?.chunks.removeValue(forKey: lost) != nil {
                s.lostAtFinish = nil
                return false
            }
            guard let p = s.partial.removeValue(forKey: asset) else { return false }
            let chunks = p.lengths.indices.compactMap { p.chunks[$0] }
            guard chunks.count == p.lengths.count, Self.asset(of: chunks.flatMap { $0 }) == asset else { return false }
            s.complete[asset] = chunks
            return true
        }
    }
}
