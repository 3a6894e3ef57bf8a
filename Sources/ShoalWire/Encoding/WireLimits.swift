// WireLimits: the bounds every decoder enforces, CloudKit's by default, configurable per use.

/// The limits a decoder enforces so that any input is handled in bounded time and memory.
///
/// The defaults follow CloudKit where it has a limit (255-byte names, 1 MiB records). Raise a
/// limit only when both ends agree: a record over the receiver's limit is rejected with
/// ``WireError/Code/limitExceeded`` naming the setting to change.
public struct WireLimits: Hashable, Sendable {
    /// Longest record name, zone name, owner name or record type, in UTF-8 bytes. Default 255.
    public var maxNameBytes: Int = 255
    /// Longest field name, in UTF-8 bytes. Default 255.
    public var maxFieldNameBytes: Int = 255
    /// Largest encoded record, in bytes. Default 1 MiB (CloudKit's limit).
    public var maxRecordBytes: Int = 1 << 20
    /// Most fields (including removed-field markers) in one record. Default 1,024.
    public var maxFieldCount: Int = 1024
    /// Most elements in one list value. Default 65,536.
    public var maxListCount: Int = 1 << 16
    /// Most entries in one version vector. Default 4,096.
    public var maxVectorEntries: Int = 4096
    /// Most operations in one record delta. Default 4,096.
    public var maxDeltaOperations: Int = 4096
    /// Largest frame payload, before and after decompression. Default 4 MiB.
    public var maxFramePayloadBytes: Int = 4 << 20
    /// Most items (records, tombstones, IDs, …) in one protocol message. Default 65,536.
    public var maxMessageItems: Int = 1 << 16
    /// Largest opaque blob (change token, unknown extension, asset chunk), in bytes. Default 4 MiB.
    public var maxBlobBytes: Int = 4 << 20

    /// The default limits.
    public static let `default` = WireLimits()

    /// Creates the default limits; adjust the properties you need.
    public init() {}
}
