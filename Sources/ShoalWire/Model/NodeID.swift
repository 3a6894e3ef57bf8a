// NodeID: the 128-bit identity of a node (one data directory), random at creation, never reused.

/// The identity of a Shoal node: 128 random bits chosen when its data directory is created.
///
/// A node whose data directory is recreated gets a new ID, so counters never restart under an
/// old identity. IDs order as their 16 big-endian bytes do; version vectors sort by that order.
/// The text form is 32 lowercase hexadecimal digits.
public struct NodeID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The first 8 bytes, big-endian.
    public let high: UInt64
    /// The last 8 bytes, big-endian.
    public let low: UInt64

    /// Creates an ID from its two halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A fresh random ID from the system's secure generator.
    public static func random() -> NodeID {
        var g = SystemRandomNumberGenerator()
        return random(using: &g)
    }

    /// A random ID from `generator` (deterministic generators make deterministic simulations).
    public static func random(using generator: inout some RandomNumberGenerator) -> NodeID {
        NodeID(high: generator.next(), low: generator.next())
    }

    /// Parses 32 hexadecimal digits; returns nil for anything else.
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 32 else { return nil }
        var hi: UInt64 = 0
        var lo: UInt64 = 0
        for (i, c) in utf8.enumerated() {
            guard let d = Hex.value(of: c) else { return nil }
            if i < 16 { hi = hi << 4 | UInt64(d) } else { lo = lo << 4 | UInt64(d) }
        }
        self.init(high: hi, low: lo)
    }

    /// 32 lowercase hexadecimal digits.
    public var hex: String { Hex.string(high) + Hex.string(low) }

    /// The first 8 hex digits, for logs and tables.
    public var short: String { String(hex.prefix(8)) }

    public var description: String { hex }

    public static func < (a: NodeID, b: NodeID) -> Bool {
        (a.high, a.low) < (b.high, b.low)
    }

    /// Size of the encoded form.
    @usableFromInline package static let encodedSize = 16
}

extension WireWriter {
    @inlinable package mutating func writeNodeID(_ id: NodeID) {
        let p = reserve(16)
        p.storeBytes(of: id.high.bigEndian, toByteOffset: 0, as: UInt64.self)
        p.storeBytes(of: id.low.bigEndian, toByteOffset: 8, as: UInt64.self)
    }
}

extension WireReader {
    @inlinable package mutating func readNodeID(_ what: @autoclosure () -> String) throws(WireError) -> NodeID {
        let raw = try readRaw(16, what())
        guard let p = raw.baseAddress else { throw error(.truncated, "expected \(what())") }
        return NodeID(
            high: UInt64(bigEndian: p.loadUnaligned(as: UInt64.self)),
            low: UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }
}

/// Hexadecimal helpers shared by the text forms of IDs, hashes and tokens.
@usableFromInline package enum Hex {
    @inlinable package static func value(of c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }

    /// 16 lowercase hex digits of a 64-bit word.
    @usableFromInline package static func string(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    /// Lowercase hex of a byte sequence.
    @usableFromInline package static func string(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses hex digits (whitespace ignored); nil if any other character or an odd count.
    @usableFromInline package static func bytes(_ text: some StringProtocol) -> [UInt8]? {
        var out = [UInt8]()
        var pending: UInt8? = nil
        for c in text.utf8 {
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { continue }
            guard let d = value(of: c) else { return nil }
            if let hi = pending {
                out.append(hi << 4 | d)
                pending = nil
            } else {
                pending = d
            }
        }
        return pending == nil ? out : nil
    }
}
