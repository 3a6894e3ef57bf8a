// Frame: the unit on the wire and on disk — header, optional dictionary ID, payload, CRC32C.

/// One frame: a type and its payload, as the application sees them (decompressed).
///
/// On the wire a frame is a 9-byte header (magic `SH`, version, type, flags, payload length),
/// a dictionary ID when the payload is compressed with a dictionary, the payload, and the
/// CRC-32C of everything before it (for a compression-3 frame, chained through every earlier
/// compression-3 frame of its connection direction). ``FrameEncoder`` writes frames; ``FrameReader`` reads them
/// from a byte stream in any split. Spec/wire-format.md, "Frames", has the byte layout.
public struct Frame: Hashable, Sendable {
    /// What the payload is.
    public var type: FrameType
    /// The payload, decompressed.
    public var payload: [UInt8]
    /// How the payload travelled (informational; re-encoding may choose differently).
    public var compression: Compression
    /// A hint for encoders, not part of the wire: false sends the payload plain without trying
    /// to compress it (content known not to compress, such as most asset chunks).
    public var mayCompress: Bool

    /// Creates a frame.
    public init(type: FrameType, payload: [UInt8], compression: Compression = .none, mayCompress: Bool = true) {
        self.type = type
        self.payload = payload
        self.compression = compression
        self.mayCompress = mayCompress
    }

    /// How a frame's payload is compressed on the wire: the low two bits of the flags byte.
    public enum Compression: Hashable, Sendable {
        /// Sent as is.
        case none
        /// One standard zstd frame declaring its content size.
        case zstd
        /// One standard zstd frame compressed with the dictionary of this ID.
        case dictionary(id: UInt32)
        /// The next flushed piece of the connection direction's zstd stream (compression 3,
        /// Spec/wire-format.md §14.3); it decodes only after every earlier one.
        case stream

        /// The flags bits.
        var bits: UInt8 {
            switch self {
            case .none: return 0
            case .zstd: return 1
            case .dictionary: return 2
            case .stream: return 3
            }
        }
    }
}

/// The fixed layout of a frame (Spec/wire-format.md §13.1), for tools that read or build frame
/// headers themselves.
public enum FrameLayout {
    /// The magic bytes every frame starts with: `S`, `H`.
    public static let magic: (UInt8, UInt8) = (0x53, 0x48)
    /// The only frame version this Shoal writes and reads.
    public static let version: UInt8 = 1
    /// Bytes of the header: magic (2), version, type, flags, payload length (u32 little-endian).
    public static let headerSize = 9
    /// Bytes of the dictionary ID that follows the header when the payload uses a dictionary.
    public static let dictionaryIDSize = 4
    /// Bytes of the trailing CRC-32C (u32 little-endian).
    public static let trailerSize = 4
    /// Flags bits 0–1: compression; every other bit is reserved and must be zero.
    public static let compressionMask: UInt8 = 0x03
    /// Offset of the type byte in the header.
    public static let typeOffset = 3
    /// Offset of the flags byte in the header.
    public static let flagsOffset = 4
    /// Offset of the payload length (u32 little-endian) in the header.
    public static let lengthOffset = 5
}
