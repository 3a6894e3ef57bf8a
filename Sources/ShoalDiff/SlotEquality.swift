// SlotEquality: comparing field slots in place — a bitwise fast path, then by value, without copies.

import ShoalWire

/// Equality of field slots read through pointers, for the diff loop.
///
/// Two slots whose bytes are identical are equal (same inline bits, same storage pointers), so
/// the common case — a slot carried over unchanged — costs one short `memcmp` and no reference
/// counting. Otherwise values compare case by case, binding payloads from the borrowed slots.
enum SlotEquality {
    /// Whether the two slots' bytes are identical (then they are equal; the converse may fail).
    @inline(__always)
    static func identical(_ a: UnsafePointer<Record.Field>, _ b: UnsafePointer<Record.Field>) -> Bool {
        let size = MemoryLayout<Record.Field>.size
        let x = UnsafeRawPointer(a), y = UnsafeRawPointer(b)
        guard size >= 16 else { return UTF8Order.memcmpBytes(x, y, size) == 0 }
        // 16 bytes at a time, OR-ing the differences, with an overlapping last chunk: no branch
        // per chunk, so the compiler unrolls it into a handful of vector compares.
        var acc = SIMD2<UInt64>()
        var offset = 0
        while offset &+ 16 <= size {
            acc |= x.loadUnaligned(fromByteOffset: offset, as: SIMD2<UInt64>.self)
                ^ y.loadUnaligned(fromByteOffset: offset, as: SIMD2<UInt64>.self)
            offset &+= 16
        }
        if offset < size {
            acc |= x.loadUnaligned(fromByteOffset: size &- 16, as: SIMD2<UInt64>.self)
                ^ y.loadUnaligned(fromByteOffset: size &- 16, as: SIMD2<UInt64>.self)
        }
        return acc[0] | acc[1] == 0
    }

    /// Whether a slot's name is its first 16 bytes (checked once; true for today's layout).
    static let nameLeads: Bool =
        MemoryLayout<Record.Field>.offset(of: \Record.Field.name) == 0 && MemoryLayout<String>.size == 16

    /// Whether two slots' names have identical bits (then they are the same name; the converse
    /// may fail, so callers fall back to comparing bytes).
    @inline(__always)
    static func sameNameBits(_ a: UnsafePointer<Record.Field>, _ b: UnsafePointer<Record.Field>) -> Bool {
        guard nameLeads else { return false }
        let x = UnsafeRawPointer(a), y = UnsafeRawPointer(b)
        return x.loadUnaligned(as: SIMD2<UInt64>.self) == y.loadUnaligned(as: SIMD2<UInt64>.self)
    }

    /// Whether two slots of one name hold the same value and stamp.
    @inline(__always)
    static func sameContent(_ a: UnsafePointer<Record.Field>, _ b: UnsafePointer<Record.Field>) -> Bool {
        guard a.pointee.stamp == b.pointee.stamp else { return false }
        switch a.pointee.value {
        case nil: return b.pointee.value == nil
        case .some(let x):
            guard let y = b.pointee.value else { return false }
            return same(x, y)
        }
    }

    /// Field value equality (canonical, as `==`) without forming a tuple of both values.
    @inline(__always)
    static func same(_ a: FieldValue, _ b: FieldValue) -> Bool {
        switch a {
        case .string(let x): if case .string(let y) = b { return x == y }
        case .int64(let x): if case .int64(let y) = b { return x == y }
        case .double(let x): if case .double(let y) = b { return CanonicalDouble.same(x, y) }
        case .bool(let x): if case .bool(let y) = b { return x == y }
        case .bytes(let x): if case .bytes(let y) = b { return x == y }
        case .date(let x): if case .date(let y) = b { return x == y }
        default: return a == b
        }
        return false
    }
}
