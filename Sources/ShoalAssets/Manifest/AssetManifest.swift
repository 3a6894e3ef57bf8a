// AssetManifest: an asset as the ordered list of its chunks (hash and length), checked against the chunking rules.

public import ShoalWire

/// What an asset is made of: its ``Asset`` reference and the ordered chunks whose concatenation is
/// its content.
///
/// A manifest is what a node asks a peer for before fetching chunks: ``AssetStore/missingChunks(of:)-(AssetManifest)``
/// lists the chunks to fetch, ``AssetStore/insertChunk(_:hash:pin:)`` stores each, and
/// ``AssetStore/insertManifest(_:pin:)`` checks the whole content against ``asset`` before the
/// asset counts as stored. Its binary form is ``encoded()`` (`Spec/assets.md` §4).
public struct AssetManifest: Hashable, Sendable {
    /// One chunk: the SHA-256 of its bytes and how many bytes it has.
    public struct Chunk: Hashable, Sendable, CustomStringConvertible {
        /// SHA-256 of the chunk's bytes (also its name in the chunk store).
        public let hash: ContentHash
        /// The chunk's length in bytes (1 … ``ChunkingParameters/maximumBytes``).
        public let length: Int

        /// Creates a chunk reference.
        public init(hash: ContentHash, length: Int) {
            self.hash = hash
            self.length = length
        }

        /// "chunk 1a2b3c4d5e6f7a8b… (65536 B)".
        public var description: String { "chunk \(hash.hex.prefix(16))… (\(length) B)" }
    }

    /// The asset: SHA-256 of the whole content and its size.
    public let asset: Asset
    /// The chunks in content order; empty for an empty asset.
    public let chunks: [Chunk]

    /// Creates a manifest without checking it; ``AssetStore`` checks every manifest it stores.
    public init(asset: Asset, chunks: [Chunk]) {
        self.asset = asset
        self.chunks = chunks
    }

    /// Checks that the chunk lengths add up to the asset's size and obey `parameters` (every chunk
    /// at most the maximum; every chunk but the last at least the minimum) and that the asset is
    /// within `maxAssetBytes`.
    ///
    /// - Throws: ``AssetError`` `limitExceeded` (too large) or `invalidArguments` (naming the rule broken).
    package func validate(_ parameters: ChunkingParameters, maxAssetBytes: Int64) throws(AssetError) {
        guard asset.size <= maxAssetBytes else { throw .tooLarge(asset.size, limit: maxAssetBytes, path: nil) }
        var total: Int64 = 0
        for (i, c) in chunks.enumerated() {
            guard c.length >= 1 && c.length <= parameters.maximumBytes else {
                throw .invalidManifest(
                    asset.hash, "chunk \(i) has \(c.length) bytes, outside 1…\(parameters.maximumBytes)")
            }
            guard c.length >= parameters.minimumBytes || i == chunks.count - 1 else {
                throw .invalidManifest(
                    asset.hash,
                    "chunk \(i) has \(c.length) bytes, under the minimum of \(parameters.minimumBytes) for a chunk that is not the last"
                )
            }
            total += Int64(c.length)
        }
        guard total == asset.size else {
            throw .invalidManifest(
                asset.hash, "its \(chunks.count) chunks hold \(total) bytes but the asset has \(asset.size)")
        }
    }
}
