// AssetProvider: what replication needs from the place a node keeps asset bytes, and the error a
// fetch ends with when no peer can serve an asset.

public import ShoalWire
public import ShoalStore

/// Where a node keeps asset bytes, as the asset lane needs them (Spec/replication.md §3.7).
///
/// ShoalAssets' `AssetStore` is the real one; tests use an in-memory one. Every method is
/// called from the ``SyncNode`` actor, one at a time per asset.
public protocol AssetProvider: Sendable {
    /// The encoded manifest of `asset`, when this node holds every chunk of it.
    func manifest(of asset: Asset) async -> [UInt8]?
    /// Chunk `index` (in manifest order) of `asset`, when this node holds every chunk of it.
    func chunk(_ index: Int, of asset: Asset) async -> [UInt8]?
    /// The chunks of `asset` at `indexes`, in order, up to the first this node cannot serve (all
    /// of them when it holds the asset). One call answers a peer's request for a run of chunks;
    /// the default asks ``chunk(_:of:)`` for each.
    func chunks(_ indexes: Range<Int>, of asset: Asset) async -> [[UInt8]]
    /// The `asset-chunk` payloads answering a request for the chunks of `asset` at `indexes`: for
    /// each chunk, in order and up to the first this node cannot serve, the bytes of
    /// `AssetChunkMessage(asset: asset, part: .chunk(index:bytes:)).encoded()`. The default
    /// encodes what ``chunks(_:of:)`` returns; a provider that writes each chunk into its payload
    /// as it reads it (``AssetChunkMessage/chunkPayload(asset:index:bytes:)``) saves a copy of
    /// every chunk it serves.
    func chunkPayloads(_ indexes: Range<Int>, of asset: Asset) async -> [[UInt8]]
    /// Keeps a manifest a peer sent for `asset` and returns its chunk count, or nil when it is
    /// malformed or cannot describe `asset` (its lengths do not add up to the size).
    func receiveManifest(_ bytes: [UInt8], for asset: Asset) async -> Int?
    /// Stores chunk `index` of `asset` from a peer after checking it against the manifest's hash;
    /// false (nothing stored) when it does not match.
    func receiveChunk(_ bytes: [UInt8], index: Int, of asset: Asset) async -> Bool
    /// Stores chunks of `asset` that arrived together, in order, as ``receiveChunk(_:index:of:)``
    /// would one by one, stopping at the first that does not match; returns how many were stored
    /// (all of them, or the index of the first that failed). The default calls
    /// ``receiveChunk(_:index:of:)`` for each.
    func receiveChunks(_ chunks: [(bytes: [UInt8], index: Int)], of asset: Asset) async -> Int
    /// The chunk indexes of `asset` not stored yet, or nil when no manifest is kept for it.
    func missingChunks(of asset: Asset) async -> [Int]?
    /// With every chunk in: checks the whole content against the asset's hash and makes the asset
    /// available. False when it does not match (the partial manifest and chunks are dropped), or
    /// when chunks turned out missing or damaged on disk (the manifest is kept and
    /// ``missingChunks(of:)`` lists them, for the lane to fetch again).
    func finish(_ asset: Asset) async -> Bool
    /// The fetch of `asset` was given up: drop what was kept for it (the manifest; chunks stored
    /// stay until garbage collection).
    func abandon(_ asset: Asset) async
}

extension AssetProvider {
    /// Asks ``chunk(_:of:)`` for each index in turn.
    public func chunks(_ indexes: Range<Int>, of asset: Asset) async -> [[UInt8]] {
        var out = [[UInt8]]()
        for i in indexes {
            guard let bytes = await chunk(i, of: asset) else { break }
            out.append(bytes)
        }
        return out
    }

    /// Encodes each chunk ``chunks(_:of:)`` returns as an `asset-chunk` payload.
    public func chunkPayloads(_ indexes: Range<Int>, of asset: Asset) async -> [[UInt8]] {
        await chunks(indexes, of: asset).enumerated().map { k, bytes in
            AssetChunkMessage(asset: asset, part: .chunk(index: UInt64(indexes.lowerBound &+ k), bytes: bytes))
                .encoded()
        }
    }

    /// Calls ``receiveChunk(_:index:of:)`` for each chunk in turn.
    public func receiveChunks(_ chunks: [(bytes: [UInt8], index: Int)], of asset: Asset) async -> Int {
        for (n, c) in chunks.enumerated() {
            guard await receiveChunk(c.bytes, index: c.index, of: asset) else { return n }
        }
        return chunks.count
    }
}

/// How a node fetches the assets of records it receives, per zone.
public enum AssetFetchPolicy: Sendable, Hashable {
    /// Fetch assets as soon as their records arrive.
    case eager
    /// Fetch an asset when the application asks for it.
    case lazy
}

/// A fetch of an asset that could not complete.
public struct AssetFetchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `assetNotAvailable` (no connected peer holds it, or every one that claimed to sent bytes that
    /// did not verify) or `assetUnsupported` (this node has no asset store).
    public let code: ShoalError.Code
    /// The asset.
    public let asset: Asset
    /// What happened and what to do.
    public let message: String

    public var description: String { "\(code): \(message)" }
}
