// WriterCheckpoint: a writer's device signs the head of its log for a zone — one signature proves every entry up to it.

/// The head of a writer's log for a zone incarnation, signed by the writer's device
/// (Spec/authenticated-writes.md §3): "my node is ``writer``, and the first ``sequence``
/// entries of my log hash to ``chain``".
///
/// A receiver that holds the chain value at some earlier sequence, and is sent the entries
/// after it, hashes them on and compares with ``chain``: one signature check proves the lot,
/// whoever relayed them.
///
/// Layout: zone ID, incarnation (16 bytes), writer (node ID), sequence (varint ≥ 1), chain (32
/// bytes), signature (64 bytes: ECDSA P-256 with SHA-256, `r‖s`, over ``signedBytes``).
public struct WriterCheckpoint: Hashable, Sendable, CustomStringConvertible {
    /// The length of a chain value, in bytes.
    public static let chainBytes = 32
    /// The length of a signature, in bytes.
    public static let signatureBytes = 64
    /// The bytes that start what is signed, so a checkpoint's signature means nothing elsewhere.
    public static let signatureContext: [UInt8] = Array("shoal writer checkpoint v1\0".utf8)

    /// The zone of the log.
    public var zone: RecordZone.ID
    /// The zone's incarnation: a log belongs to one life of a zone.
    public var incarnation: NodeID
    /// The writer: the node ID whose writes the log holds.
    public var writer: NodeID
    /// How many entries the checkpoint covers (the last one's sequence).
    public var sequence: UInt64
    /// The chain value after entry ``sequence`` (``chainBytes`` bytes).
    public var chain: [UInt8]
    /// The writer's device's signature of ``signedBytes`` (empty until signed).
    public var signature: [UInt8]

    /// Creates a checkpoint.
    public init(
        zone: RecordZone.ID, incarnation: NodeID, writer: NodeID, sequence: UInt64, chain: [UInt8],
        signature: [UInt8] = []
    ) {
        self.zone = zone
        self.incarnation = incarnation
        self.writer = writer
        self.sequence = sequence
        self.chain = chain
        self.signature = signature
    }

    public var description: String { "checkpoint of \(writer) in \(zone) at #\(sequence)" }

    /// What the writer's device signs: ``signatureContext``, then every field before the
    /// signature as encoded.
    public var signedBytes: [UInt8] {
        Self.signatureContext + WireWriter.encode(size: unsignedSize) { w in encodeUnsigned(into: &w) }
    }

    /// The canonical bytes. Sign it first: a checkpoint without its 64-byte signature encodes,
    /// but no decoder accepts it.
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: encodedSize) { w in encode(into: &w) }
    }

    /// Decodes a checkpoint (without checking its signature: that needs the writer device's key).
    /// - Throws: `WireError` for truncated or malformed input: a zero sequence, a chain or a
    ///   signature of the wrong length.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the writer checkpoint") { (r) throws(WireError) in
            try Self.decode(from: &r)
        }
    }

    var unsignedSize: Int {
        WireSize.zoneID(zone) &+ 16 &+ 16 &+ WireSize.varint(sequence) &+ Self.chainBytes
    }

    var encodedSize: Int { unsignedSize &+ signature.count }

    func encodeUnsigned(into w: inout WireWriter) {
        w.writeZoneID(zone)
        w.writeNodeID(incarnation)
        w.writeNodeID(writer)
        w.writeVarint(sequence)
        chain.withUnsafeBytes { w.writeRaw($0) }
    }

    func encode(into w: inout WireWriter) {
        encodeUnsigned(into: &w)
        signature.withUnsafeBytes { w.writeRaw($0) }
    }

    static func decode(from r: inout WireReader) throws(WireError) -> WriterCheckpoint {
        let zone = try r.readZoneID()
        let incarnation = try r.readNodeID("checkpoint incarnation")
        let writer = try r.readNodeID("checkpoint writer")
        let at = r.offset
        let sequence = try r.readVarint("checkpoint sequence")
        guard sequence >= 1 else {
            throw WireError(.invalidValue, at: at, "checkpoint sequence is 0; a checkpoint covers at least one entry")
        }
        let chain = try r.readBytes(chainBytes, "checkpoint chain")
        let signature = try r.readBytes(signatureBytes, "checkpoint signature")
        return WriterCheckpoint(
            zone: zone, incarnation: incarnation, writer: writer, sequence: sequence, chain: chain, signature: signature
        )
    }
}
