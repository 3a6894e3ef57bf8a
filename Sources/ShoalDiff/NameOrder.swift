// NameOrder: UTF-8 byte order and equality of names and string values, read in place.

import ShoalWire

/// Compares strings by their UTF-8 bytes (Shoal's order of field names, and its equality of
/// string values), reading each string's bytes where they are — no copy, no reference counting
/// for native strings. Foreign strings take ``ShoalWire/UTF8Order``'s path.
enum NameOrder {
    /// −1, 0 or 1 as `a`'s UTF-8 bytes sort before, equal or after `b`'s.
    @inline(__always)
    static func compare(_ a: String, _ b: String) -> Int {
        if sameBits(a, b) { return 0 }
        let c = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb in
                UTF8Order.compare(UnsafeRawBufferPointer(pa), UnsafeRawBufferPointer(pb))
            }
        }
        if let c, let c { return c }
        return UTF8Order.compare(a, b)
    }

    /// Whether `a` and `b` have the same UTF-8 bytes.
    @inline(__always)
    static func equal(_ a: String, _ b: String) -> Bool {
        if sameBits(a, b) { return true }
        return a.utf8.count == b.utf8.count && compare(a, b) == 0
    }

    /// Whether the two strings' representations are bitwise identical (then they are equal).
    @inline(__always)
    static func sameBits(_ a: String, _ b: String) -> Bool {
        guard MemoryLayout<String>.size == 16 else { return false }
        return withUnsafeBytes(of: a) { x in
            withUnsafeBytes(of: b) { y in
                x.loadUnaligned(as: SIMD2<UInt64>.self) == y.loadUnaligned(as: SIMD2<UInt64>.self)
            }
        }
    }
}
