// AssetStore: a node's content-addressed asset storage — chunk segments, manifests, pins — in one directory.

import ShoalWire

/// A node's asset storage: assets cut into content-defined chunks, each stored once by its
/// SHA-256, and a manifest per asset listing its chunks.
///
/// Layout of ``directory`` (`Spec/assets.md` §3): `chunks/segments/` (chunks appended to segment
/// files of up to ``Configuration/segmentBytes``), `manifests/ab/abcdef…` (one file per asset,
/// named by the asset's hash) and `tmp/` (manifests being written). A chunk is stored only once
/// its record is durable, a manifest is written in `tmp/`, fsynced and renamed into place, and
/// only after all its chunks are stored, so a crash never leaves a manifest pointing to a
/// partial or missing chunk.
///
/// The actor guards only the pin set, which garbage collection consults; reading, hashing and
/// writing run in the caller's task (the methods that do I/O are `nonisolated`), so imports and
/// exports proceed in parallel and take the actor once per buffer of chunks, not per byte.
///
/// ```swift
/// let assets = try AssetStore.open(directory: dataDirectory + "/assets")
/// let photo = try await assets.importFile(at: "/tmp/photo.jpg")   // Asset(hash:size:)
/// try await assets.write(photo, to: "/tmp/copy.jpg")
/// for try await buffer in try assets.contents(of: photo) { consume(buffer) }
/// ```
public actor AssetStore {
    /// Settings of an asset store.
    public struct Configuration: Sendable {
        /// The largest asset the store accepts, in bytes. Default 1 GiB.
        public var maxAssetBytes: Int64 = 1 << 30
        /// How chunk records keep their bytes. Default ``ChunkCompression/none`` (`Spec/assets.md`
        /// §3 gives the measurements: most large assets are already compressed media).
        public var compression: ChunkCompression = .none
        /// Whether chunk and manifest files and their folders are fsynced before an import or
        /// insert returns (survives power loss). Default true; with false a returned import
        /// survives the process being killed, not the machine losing power.
        public var fsync: Bool = true
        /// Bytes an import reads ahead and chunks in one go: its whole memory for content.
        /// At least twice the maximum chunk size (512 KiB); default 1 MiB.
        public var readBufferBytes: Int = 1 << 20
        /// The chunking parameters. Default ``ChunkingParameters/standard``, which every node
        /// must use to exchange assets (peers' manifests are checked against these); others are for
        /// measurements and tests.
        public var chunking: ChunkingParameters = .standard
        /// Chunks received from peers are laid out in memory and written and made durable
        /// together once this many bytes are pending (or 30 s passed) and the previous batch is
        /// done: one aligned write and one `fdatasync` of their segment per batch, on another
        /// thread while chunks keep arriving (`Spec/assets.md` §5.1). Batches are held in memory
        /// up to 16 MiB (or this, up to 64 MiB) while one is in flight. How
        /// fast a transfer runs hardly depends on it; smaller batches leave less unflushed data
        /// for a record commit's fsync to wait behind. At least 1; default 256 KiB (measured
        /// against 2 MiB: record-change p50 during a 1 GiB transfer 2.3–2.5 ms against 4.2).
        public var receiveBatchBytes: Int = 256 << 10
        /// A segment file (`Spec/assets.md` §3) stops taking chunks once it is this long, and
        /// garbage collection rewrites a segment once at least half of it is dead, so this is also
        /// the step in which disk space comes back. At least 1; default 256 MiB.
        public var segmentBytes: Int64 = 256 << 20
        /// The file system below the store's own files: the real one, or in tests one that
        /// simulates a power cut or a full disk (`Spec/assets.md` §3.5).
        package var fileSystem: any AssetFileSystem = POSIXFileSystem()
        /// Whether an import stages its new chunks one after another on the calling thread
        /// instead of in two lanes (the default). A test that replays a seed call by call below
        /// the store turns it on: two lanes append to segments in whichever order they run.
        package var importsInOneLane = false

        /// The default configuration.
        public init() {}
    }

    /// The directory the store lives in.
    public nonisolated let directory: String
    /// The store's settings.
    public nonisolated let configuration: Configuration
    nonisolated let chunks: ChunkStore
    nonisolated let manifests: ObjectDirectory
    nonisolated let temporary: String

    /// Chunks and assets that garbage collection must keep, with how many pins hold each.
    var pinnedChunks: [ContentHash: Int] = [:]
    var pinnedAssets: [ContentHash: Int] = [:]
    var pins: [UInt64: PinContents] = [:]
    var nextPin: UInt64 = 1
    /// While a collection is under way (``beginCollection()``): every chunk and asset pinned at
    /// any moment since it began, which it keeps even if the pin is gone by the time it removes.
    var pinnedSinceCollectionBegan: Set<ContentHash>? = nil

    struct PinContents {
        var chunks: [ContentHash] = []
        var assets: [ContentHash] = []
    }

    /// Opens the store in `directory`, creating it and its folders when missing.
    ///
    /// - Throws: ``AssetError`` `io` when the folders cannot be created, `invalidArguments` when
    ///   the configuration is inconsistent (a read buffer under twice the maximum chunk size, a
    ///   receive batch under 1 byte).
    public static func open(directory: String, configuration: Configuration = Configuration()) throws(AssetError)
        -> AssetStore
    {
        try AssetStore(directory: directory, configuration: configuration)
    }

    init(directory: String, configuration: Configuration) throws(AssetError) {
        guard configuration.readBufferBytes >= 2 * configuration.chunking.maximumBytes else {
            throw AssetError(
                .invalidArguments,
                "readBufferBytes is \(configuration.readBufferBytes), under twice the maximum chunk size (\(2 * configuration.chunking.maximumBytes)); raise it"
            )
        }
        guard configuration.receiveBatchBytes >= 1 else {
            throw AssetError(
                .invalidArguments,
                "receiveBatchBytes is \(configuration.receiveBatchBytes); it must be at least 1 (default 256 KiB)")
        }
        guard configuration.segmentBytes >= 1 else {
            throw AssetError(
                .invalidArguments,
                "segmentBytes is \(configuration.segmentBytes); it must be at least 1 (default 256 MiB)")
        }
        let dir = FileSystem.absolute(directory)
        self.directory = dir
        self.configuration = configuration
        temporary = dir + "/tmp"
        let chunkRoot = dir + "/chunks"
        // A store written before segments has the 256 shard folders of one file per chunk.
        let fs = configuration.fileSystem
        let legacy =
            FileSystem.exists(chunkRoot + "/00", in: fs)
            ? try ObjectDirectory(
                root: chunkRoot, temporary: temporary, sync: configuration.fsync, createShards: false, fs: fs) : nil
        let segments = try SegmentStore(
            folder: chunkRoot + "/segments", sync: configuration.fsync,
            maximumChunkBytes: configuration.chunking.maximumBytes, segmentBytes: configuration.segmentBytes, fs: fs)
        chunks = ChunkStore(
            segments: segments, legacy: legacy, maximumBytes: configuration.chunking.maximumBytes,
            compression: configuration.compression)
        manifests = try ObjectDirectory(
            root: dir + "/manifests", temporary: temporary, sync: configuration.fsync, fs: fs)
    }
}

/// A hold on chunks and assets that garbage collection respects until ``AssetStore/unpin(_:)``.
///
/// Imports and inserts given a pin add what they store to it, so a caller can import an asset,
/// save the record that references it, and only then release the pin: a garbage collection in
/// between (whose keep set was computed before the save) cannot remove the new asset.
public struct AssetPin: Hashable, Sendable {
    let id: UInt64
}

extension AssetStore {
    /// A new, empty pin. Release it with ``unpin(_:)``.
    public func makePin() -> AssetPin {
        defer { nextPin += 1 }
        pins[nextPin] = PinContents()
        return AssetPin(id: nextPin)
    }

    /// Releases everything `pin` holds; unknown or released pins are ignored.
    public func unpin(_ pin: AssetPin) {
        guard let held = pins.removeValue(forKey: pin.id) else { return }
        for h in held.chunks { Self.release(h, in: &pinnedChunks) }
        for h in held.assets { Self.release(h, in: &pinnedAssets) }
    }

    /// Adds chunks and an asset to `pin`. Callers hold a chunk *before* checking whether it exists
    /// or writing it: garbage collection, which also runs on this actor, then cannot remove it
    /// between the check and the manifest that references it.
    func hold(chunks hashes: [ContentHash], asset: ContentHash? = nil, in pin: AssetPin) {
        guard pins[pin.id] != nil else { return }
        if pinnedSinceCollectionBegan != nil {
            pinnedSinceCollectionBegan?.formUnion(hashes)
            if let asset { pinnedSinceCollectionBegan?.insert(asset) }
        }
        pins[pin.id]!.chunks.append(contentsOf: hashes)
        for h in hashes { pinnedChunks[h, default: 0] += 1 }
        if let asset {
            pins[pin.id]!.assets.append(asset)
            pinnedAssets[asset, default: 0] += 1
        }
    }

    /// Runs `body` with `pin`, or with a pin of its own that is released afterwards.
    nonisolated func withPin<T>(_ pin: AssetPin?, _ body: (AssetPin) async throws -> T) async throws -> T {
        if let pin { return try await body(pin) }
        let own = await makePin()
        do {
            let result = try await body(own)
            await unpin(own)
            return result
        } catch {
            await unpin(own)
            throw error
        }
    }

    /// The bytes the chunks take in the segment files (records with their headers, as stored,
    /// compressed or not), and the bytes of those files, which also hold removed chunks until a
    /// compaction reclaims them. Chunks of a store written before segments are not counted.
    package nonisolated var storedBytes: (chunks: Int64, segments: Int64) {
        let counts = chunks.segments.byteCounts()
        return (counts.live, counts.appended)
    }

    /// How many chunks and assets are pinned (for tests and diagnostics).
    package var pinnedCounts: (chunks: Int, assets: Int) { (pinnedChunks.count, pinnedAssets.count) }

    private static func release(_ h: ContentHash, in counts: inout [ContentHash: Int]) {
        guard let n = counts[h] else { return }
        if n <= 1 { counts.removeValue(forKey: h) } else { counts[h] = n - 1 }
    }
}
