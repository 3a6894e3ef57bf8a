// AssetMessages: the asset lane — asking a peer for an asset's manifest or chunks, and its answers
// (Spec/replication.md §3.7).

/// The payload of an ``FrameType/assetRequest`` frame: which part of an asset the sender wants.
///
/// Layout: the asset (hash, 32 bytes; size, varint), what (1 byte: 1 the manifest, 2 chunks),
/// then for chunks the first index (varint) and the count (varint, 1…``maxChunks``).
public struct AssetRequestMessage: Hashable, Sendable {
    /// The most chunks one request may ask for: the requester's window is this or smaller, so
    /// no request makes a peer read and queue more than this many chunks at once.
    public static let maxChunks: UInt64 = 64

    /// What is asked for.
    public enum Part: Hashable, Sendable {
        /// The list of the asset's chunks (hashes and lengths).
        case manifest
        /// Chunks `first ..< first + count`, in the manifest's order.
        case chunks(first: UInt64, count: UInt64)
    }

    /// The asset.
    public var asset: Asset
    /// What of it.
    public var part: Part

    /// Creates a request.
    public init(asset: Asset, part: Part) {
        self.asset = asset
        self.part = part
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        var size = 32 &+ WireSize.varint(UInt64(bitPattern: asset.size)) &+ 1
        if case let .chunks(first, count) = part { size &+= WireSize.varint(first) &+ WireSize.varint(count) }
        return WireWriter.encode(size: size) { w in
            w.writeContentHash(asset.hash)
            w.writeVarint(UInt64(bitPattern: asset.size))
            switch part {
            case .manifest:
                w.writeByte(1)
            case let .chunks(first, count):
                w.writeByte(2)
                w.writeVarint(first)
                w.writeVarint(count)
            }
        }
    }

    /// Decodes a request payload.
    /// - Throws: ``WireError`` for malformed or non-canonical input, or a chunk count of 0 or above
    ///   ``maxChunks`` (`invalid_value`).
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the asset request") {
            (r) throws(WireError) -> AssetRequestMessage in
            let asset = try Asset.decodePayload(from: &r)
            let at = r.offset
            switch try r.readByte("asset part") {
            case 1:
                return AssetRequestMessage(asset: asset, part: .manifest)
            case 2:
                let first = try r.readVarint("first chunk")
                let cAt = r.offset
                let count = try r.readVarint("chunk count")
                guard count >= 1, count <= Self.maxChunks else {
                    throw WireError(
                        .invalidValue, at: cAt, "a request asks for 1–\(Self.maxChunks) chunks, not \(count)")
                }
                guard first <= UInt64.max &- count else {
                    throw WireError(.invalidValue, at: cAt, "chunks \(first) + \(count) run past 2^64")
                }
                return AssetRequestMessage(asset: asset, part: .chunks(first: first, count: count))
            case let p:
                throw WireError(.unknownRequiredTag, at: at, "asset part \(p) is not 1 (manifest) or 2 (chunks)")
            }
        }
    }
}

/// The payload of an ``FrameType/assetChunk`` frame: a part of an asset, or word that the sender
/// cannot serve it.
///
/// Layout: the asset (hash, size), what (1 byte: 1 the manifest, 2 a chunk, 3 not available
/// here), then for a chunk its index (varint), then for a manifest or chunk the bytes
/// (length-prefixed). The receiver verifies everything: a chunk against the manifest's hash of
/// it, the manifest against the asset's hash once every chunk is in.
public struct AssetChunkMessage: Hashable, Sendable {
    /// What the frame carries.
    public enum Part: Hashable, Sendable {
        /// The encoded manifest (ShoalAssets `AssetManifest`).
        case manifest([UInt8])
        /// Chunk `index` of the manifest.
        case chunk(index: UInt64, bytes: [UInt8])
        /// The sender does not hold the asset completely; ask another peer.
        case unavailable
    }

    /// The asset.
    public var asset: Asset
    /// The part, or unavailability.
    public var part: Part

    /// Creates an answer.
    public init(asset: Asset, part: Part) {
        self.asset = asset
        self.part = part
    }

    /// The canonical payload bytes.
    public func encoded() -> [UInt8] {
        if case let .chunk(index, b) = part {
            return b.withUnsafeBytes { Self.chunkPayload(asset: asset, index: index, bytes: $0) }
        }
        var size = 32 &+ WireSize.varint(UInt64(bitPattern: asset.size)) &+ 1
        if case .manifest(let b) = part { size &+= WireSize.lengthPrefixed(b.count) }
        return WireWriter.encode(size: size) { w in
            w.writeContentHash(asset.hash)
            w.writeVarint(UInt64(bitPattern: asset.size))
            switch part {
            case .manifest(let b):
                w.writeByte(1)
                w.writeBytes(b)
            case .chunk:
                break
            case .unavailable:
                w.writeByte(3)
            }
        }
    }

    /// The payload of an answer carrying chunk `index` of `asset` — the bytes
    /// `AssetChunkMessage(asset: asset, part: .chunk(index: index, bytes: Array(bytes))).encoded()`
    /// gives — written from borrowed bytes, so a server copies each chunk it sends once, from
    /// where it read it into the payload.
    public static func chunkPayload(asset: Asset, index: UInt64, bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let size =
            32 &+ WireSize.varint(UInt64(bitPattern: asset.size)) &+ 1 &+ WireSize.varint(index)
            &+ WireSize.lengthPrefixed(bytes.count)
        return WireWriter.encode(size: size) { w in
            w.writeContentHash(asset.hash)
            w.writeVarint(UInt64(bitPattern: asset.size))
            w.writeByte(2)
            w.writeVarint(index)
            w.writeLengthPrefixed(bytes)
        }
    }

    /// Decodes an answer payload.
    /// - Throws: ``WireError`` for malformed or non-canonical input, or bytes over
    ///   `maxFramePayloadBytes`.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the asset chunk") {
            (r) throws(WireError) -> AssetChunkMessage in
            let asset = try Asset.decodePayload(from: &r)
            let at = r.offset
            switch try r.readByte("asset part") {
            case 1:
                let n = try r.readLength(
                    max: r.limits.maxFramePayloadBytes, "manifest length", limitName: "maxFramePayloadBytes")
                return AssetChunkMessage(asset: asset, part: .manifest(try r.readBytes(n, "manifest")))
            case 2:
                let index = try r.readVarint("chunk index")
                let n = try r.readLength(
                    max: r.limits.maxFramePayloadBytes, "chunk length", limitName: "maxFramePayloadBytes")
                return AssetChunkMessage(asset: asset, part: .chunk(index: index, bytes: try r.readBytes(n, "chunk")))
            case 3:
                return AssetChunkMessage(asset: asset, part: .unavailable)
            case let p:
                throw WireError(
                    .unknownRequiredTag, at: at, "asset part \(p) is not 1 (manifest), 2 (chunk) or 3 (unavailable)")
            }
        }
    }
}
