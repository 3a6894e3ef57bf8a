// DeviceID: the 32-byte identity of a device — the SHA-256 of its certificate's public key.

/// The identity of a device: the SHA-256 of its certificate's SubjectPublicKeyInfo DER
/// (Spec/security.md, "Device identity").
///
/// ShoalWire holds the value and its text form; `ShoalTrust` computes it from a certificate.
/// IDs compare and order as their 32 bytes do. ``description`` is the checksummed text form
/// (`DeviceID+Text.swift`, Spec/security.md "Device IDs"), e.g.
/// `P56IOI7-MZJNU2Y-IQGDREY-DM2MGTI-MGL3BXN-PQ6W5BM-TBBZ4TJ-XZWICQ2`.
public struct DeviceID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The number of bytes in a device ID (a SHA-256 digest).
    public static let byteCount = 32

    /// The 32 bytes of the ID.
    public let bytes: [UInt8]

    /// Creates an ID from exactly 32 bytes; nil for any other count.
    public init?(bytes: some Sequence<UInt8>) {
        let b = Array(bytes)
        guard b.count == Self.byteCount else { return nil }
        self.bytes = b
    }

    /// Parses 64 hexadecimal digits; nil for anything else.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 2 * Self.byteCount, let b = Hex.bytes(hex) else { return nil }
        self.init(bytes: b)
    }

    /// 64 lowercase hexadecimal digits, for JSON and logs that want raw bytes.
    public var hex: String { Hex.string(bytes) }

    /// The first group of the text form (7 characters), for tables and logs.
    public var short: String { String(text.prefix(7)) }

    /// The checksummed text form (``text``).
    public var description: String { text }

    public static func < (a: DeviceID, b: DeviceID) -> Bool {
        a.bytes.lexicographicallyPrecedes(b.bytes)
    }
}
