// WireError: the typed error every ShoalWire decoder returns for bytes it will not accept.

/// The error a ShoalWire decoder returns when input is malformed, non-canonical or over a limit.
///
/// Decoders never trap: every byte string either decodes to a value or yields a `WireError` that
/// names what was wrong (``code``), where (``offset``, counted from the start of the input given
/// to the decoder) and a human-readable ``detail`` that says what was expected and how to fix it.
/// ``Code`` is an extensible struct, so new codes never break existing `switch` statements.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of malformation this is. Compare with the static members, e.g. `.truncated`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The stable, snake_case name of the code, as used in `Spec/vectors/invalid`.
        public let name: String

        /// Creates a code with a stable name.
        package init(_ name: String) { self.name = name }

        /// The input ended before the value did.
        public static let truncated = Code("truncated")
        /// A varint used more bytes than its value needs (e.g. `0x80 0x00` for zero).
        public static let overlongVarint = Code("overlong_varint")
        /// A varint does not fit the integer type it encodes (more than 64 bits).
        public static let varintOverflow = Code("varint_overflow")
        /// A string is not valid UTF-8.
        public static let invalidUTF8 = Code("invalid_utf8")
        /// Bytes remain after a complete value.
        public static let trailingBytes = Code("trailing_bytes")
        /// Field names, vector entries or extension tags are not in strictly increasing order.
        public static let unsorted = Code("unsorted")
        /// The same field name, node or tag appears twice.
        public static let duplicate = Code("duplicate")
        /// A tag this decoder does not know and is required to understand.
        public static let unknownRequiredTag = Code("unknown_required_tag")
        /// A value is outside the range or shape the format allows (bad bool byte, reserved bit set, …).
        public static let invalidValue = Code("invalid_value")
        /// A name (record, zone, field, record type) breaks the naming rules.
        public static let invalidName = Code("invalid_name")
        /// A configured limit was exceeded (size, count, length); ``WireError/detail`` names it.
        public static let limitExceeded = Code("limit_exceeded")
        /// A frame does not start with the Shoal magic bytes.
        public static let badMagic = Code("bad_magic")
        /// A frame announces a protocol version this decoder does not speak.
        public static let unsupportedVersion = Code("unsupported_version")
        /// A frame's CRC32C does not match its bytes.
        public static let checksumMismatch = Code("checksum_mismatch")
        /// A compressed payload could not be decompressed, or is not what its header declared.
        public static let decompressionFailed = Code("decompression_failed")
        /// A compressed payload names a dictionary this decoder does not have.
        public static let unknownDictionary = Code("unknown_dictionary")

        public var description: String { name }
    }

    /// What kind of malformation this is.
    public let code: Code
    /// Byte offset into the decoded input where the problem was found.
    public let offset: Int
    /// What was expected and, where it applies, the limit and how to raise it.
    public let detail: String

    /// Creates an error; decoders use the static factories below.
    @usableFromInline package init(_ code: Code, at offset: Int, _ detail: String) {
        self.code = code
        self.offset = offset
        self.detail = detail
    }

    public var description: String { "\(code.name) at byte \(offset): \(detail)" }
}
