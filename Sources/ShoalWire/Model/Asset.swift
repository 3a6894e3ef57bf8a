// Asset and ContentHash: a content-addressed blob held beside a record (SHA-256 and size).

/// The SHA-256 digest of an asset's content.
public struct ContentHash: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The digest's 32 bytes as four big-endian words.
    public let words: (UInt64, UInt64, UInt64, UInt64)

    /// Creates a hash from exactly 32 bytes; nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        var w: [UInt64] = [0, 0, 0, 0]
        for (i, b) in bytes.enumerated() { w[i / 8] = w[i / 8] << 8 | UInt64(b) }
        words = (w[0], w[1], w[2], w[3])
    }

    /// Creates a hash from 64 hexadecimal digits; nil otherwise.
    public init?(hex: String) {
        guard let b = Hex.bytes(hex) else { return nil }
        self.init(bytes: b)
    }

    @usableFromInline package init(words: (UInt64, UInt64, UInt64, UInt64)) { self.words = words }

    /// The 32 digest bytes.
    public var bytes: [UInt8] { withBytes { Array($0) } }

    /// `body`'s result for the 32 digest bytes, read in place.
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let big = (words.0.bigEndian, words.1.bigEndian, words.2.bigEndian, words.3.bigEndian)
        return try withUnsafeBytes(of: big, body)
    }

    /// 64 lowercase hexadecimal digits.
    public var hex: String { Hex.string(words.0) + Hex.string(words.1) + Hex.string(words.2) + Hex.string(words.3) }

    public var description: String { hex }

    public static func == (a: ContentHash, b: ContentHash) -> Bool { a.words == b.words }
    public static func < (a: ContentHash, b: ContentHash) -> Bool { a.words < b.words }
    public func hash(into h: inout Hasher) {
        h.combine(words.0); h.combine(words.1); h.combine(words.2); h.combine(words.3)
    }
}

/// A reference to a content-addressed blob: the SHA-256 of its bytes and its size.
///
/// The bytes live beside the record in the node's asset store and travel in chunks; the record
/// holds only this reference.
public struct Asset: Hashable, Sendable, CustomStringConvertible {
    /// SHA-256 of the content.
    public var hash: ContentHash
    /// Size of the content in bytes.
    public var size: Int64

    /// Creates an asset reference.
    public init(hash: ContentHash, size: Int64) {
        self.hash = hash
        self.size = size
    }

    public var description: String { "asset \(hash.hex.prefix(16))… (\(size) B)" }
}

extension WireWriter {
    @inlinable package mutating func writeContentHash(_ h: ContentHash) {
        let p = reserve(32)
        p.storeBytes(of: h.words.0.bigEndian, toByteOffset: 0, as: UInt64.self)
        p.storeBytes(of: h.words.1.bigEndian, toByteOffset: 8, as: UInt64.self)
        p.storeBytes(of: h.words.2.bigEndian, toByteOffset: 16, as: UInt64.self)
        p.storeBytes(of: h.words.3.bigEndian, toByteOffset: 24, as: UInt64.self)
    }
}

extension WireReader {
    @inlinable package mutating func readContentHash(_ what: @autoclosure () -> String) throws(WireError) -> ContentHash
    {
        let raw = try readRaw(32, what())
        guard let p = raw.baseAddress else { throw error(.truncated, "expected \(what())") }
        return ContentHash(
            words: (
                UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
            ))
    }
}
