// AssetStoreProvider: ShoalAssets' store as the asset lane's provider (ShoalSync.AssetProvider).

import ShoalAssets
import ShoalLanes
import ShoalSync
import ShoalWire
import Synchronization
import Dispatch

/// Serves complete assets from an `AssetStore` and stores what the lane fetches: a manifest from a
/// peer starts an `IncomingAsset` (with a pin on its chunks), which checks and writes each chunk
/// as it arrives and, once every chunk is in, checks the whole content against the asset's hash
/// and makes the asset durable (`Spec/assets.md` §5.1).
final class AssetStoreProvider: AssetProvider {
    let store: AssetStore
    /// Assets being received, with the pin that keeps their chunks from the garbage collector.
    let partial = LockedDictionary<Asset, (IncomingAsset, AssetPin)>()

    /// Manifests of complete assets served recently (checking completeness stats every chunk
    /// file, so it is done once per asset, not per request); at most 64, then cleared.
    let served = LockedDictionary<Asset, AssetManifest>()

    /// Where the lane's hashing and file I/O run: the process's asset threads, so they never
    /// occupy the cooperative pool that applies records.
    let io = LaneExecutor()

    init(store: AssetStore) { self.store = store }

    /// The manifest of a complete asset, from the cache when it was checked before.
    func complete(_ asset: Asset) -> AssetManifest? {
        if let m = served[asset] { return m }
        guard (try? store.isComplete(asset)) == true, let m = try? store.manifest(of: asset) else { return nil }
        served.insert(m, forKey: asset, limit: 64)
        return m
    }

    /// The manifest of a complete asset, checked on the lane's threads the first time (a check
    /// looks for every chunk: thousands of lookups for a large asset).
    func completeOffLane(_ asset: Asset) async -> AssetManifest? {
        if let m = served[asset] { return m }
        return await withTaskExecutorPreference(io) { () async -> AssetManifest? in complete(asset) }
    }

    func manifest(of asset: Asset) async -> [UInt8]? {
        await completeOffLane(asset)?.encoded()
    }

    func chunk(_ index: Int, of asset: Asset) async -> [UInt8]? {
        guard index >= 0, index < .max else { return nil }
        return await chunks(index..<(index + 1), of: asset).first
    }

    func chunks(_ indexes: Range<Int>, of asset: Asset) async -> [[UInt8]] {
        await readRun(indexes, of: asset) { _, bytes in Array(bytes) }
    }

    func chunkPayloads(_ indexes: Range<Int>, of asset: Asset) async -> [[UInt8]] {
        // Each chunk goes from the buffer it was read into straight into its answer's payload.
        await readRun(indexes, of: asset) { i, bytes in
            AssetChunkMessage.chunkPayload(asset: asset, index: UInt64(i), bytes: bytes)
        }
    }

    /// `form` of each chunk of `asset` at `indexes` (its index and its bytes where they were read),
    /// in order, up to the first this node cannot serve; indexes past the last chunk are not served
    /// (the answer ends with "unavailable").
    private func readRun(
        _ indexes: Range<Int>, of asset: Asset,
        _ form: @escaping @Sendable (Int, UnsafeRawBufferPointer) -> [UInt8]
    ) async -> [[UInt8]] {
        guard let m = await completeOffLane(asset), indexes.lowerBound >= 0 else { return [] }
        let indexes = indexes.clamped(to: 0..<m.chunks.count)
        let store = self.store, served = self.served
        // One hop to the lane's threads for the whole run.
        return await withTaskExecutorPreference(io) { () async -> [[UInt8]] in
            var out = [[UInt8]]()
            out.reserveCapacity(indexes.count)
            var scratch = [UInt8]()
            for i in indexes {
                // Not hashed here: the peer checks every chunk against the manifest.
                let formed = try? store.withChunkBytes(m.chunks[i], of: asset, verify: false, scratch: &scratch) {
                    form(i, $0)
                }
                guard let formed else {
                    // Missing or damaged: check the asset again next time.
                    _ = served.removeValue(forKey: asset)
                    break
                }
                out.append(formed)
            }
            return out
        }
    }

    func receiveManifest(_ bytes: [UInt8], for asset: Asset) async -> Int? {
        guard let m = try? AssetManifest(decoding: bytes), m.asset == asset else { return nil }
        if let (incoming, _) = partial[asset] { return incoming.manifest.chunks.count }
        let pin = await store.makePin()
        // Beginning looks for every chunk of the manifest: on the lane's threads.
        let store = self.store
        let begun = await withTaskExecutorPreference(io) { () async -> IncomingAsset? in
            try? await store.beginReceiving(m, pin: pin)
        }
        guard let incoming = begun else {
            // Sizes that break the chunking rules: this peer's manifest cannot be used.
            await store.unpin(pin)
            return nil
        }
        partial[asset] = (incoming, pin)
        return m.chunks.count
    }

    func receiveChunk(_ bytes: [UInt8], index: Int, of asset: Asset) async -> Bool {
        await receiveChunks([(bytes, index)], of: asset) == 1
    }

    func receiveChunks(_ chunks: [(bytes: [UInt8], index: Int)], of asset: Asset) async -> Int {
        guard let (incoming, _) = partial[asset] else { return 0 }
        // Hashing and writing run on the asset lane's own threads, not the threads that apply
        // record batches (a large transfer must not delay record changes): one hop for every
        // chunk that arrived together.
        let (stored, failure) = await withTaskExecutorPreference(io) { () async -> (Int, AssetError?) in
            for (n, c) in chunks.enumerated() {
                do throws(AssetError) {
                    try incoming.receive(c.bytes, index: c.index)
                } catch {
                    return (n, error)
                }
            }
            return (chunks.count, nil)
        }
        // A chunk that is not canonical means the manifest is wrong: drop it, so the next peer
        // is asked for its own.
        if failure?.code == .invalidArguments { await abandon(asset) }
        return stored
    }

    /// How much of `asset` a fetch has received, while one keeps its manifest (nil before the
    /// manifest came and after the asset was committed or abandoned).
    func progress(of asset: Asset) -> AssetProgress? {
        partial[asset]?.0.progress
    }

    func missingChunks(of asset: Asset) async -> [Int]? {
        partial[asset]?.0.missingIndexes
    }

    func finish(_ asset: Asset) async -> Bool {
        guard let (incoming, pin) = partial[asset] else { return false }
        let failure = await withTaskExecutorPreference(io) { () async -> (any Error)? in
            do {
                try await incoming.commit()
                return nil
            } catch {
                return error
            }
        }
        if let e = failure as? AssetError, e.code == .assetNotAvailable {
            // Chunks found missing or damaged on disk: keep the fetch; missingChunks lists them.
            return false
        }
        _ = partial.removeValue(forKey: asset)
        if failure != nil { incoming.discard() }
        await store.unpin(pin)
        return failure == nil
    }

    func abandon(_ asset: Asset) async {
        guard let (incoming, pin) = partial.removeValue(forKey: asset) else { return }
        incoming.discard()
        await store.unpin(pin)
    }
}

/// A dictionary behind a lock, for state a `Sendable` class shares across tasks.
final class LockedDictionary<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let storage = Mutex<[Key: Value]>([:])

    subscript(key: Key) -> Value? {
        get { storage.withLock { $0[key] } }
        set { storage.withLock { $0[key] = newValue } }
    }

    func removeValue(forKey key: Key) -> Value? { storage.withLock { $0.removeValue(forKey: key) } }

    /// Sets `value`, first emptying the dictionary when it holds `limit` entries.
    func insert(_ value: Value, forKey key: Key, limit: Int) {
        storage.withLock { d in
            if d.count >= limit { d.removeAll() }
            d[key] = value
        }
    }
}
