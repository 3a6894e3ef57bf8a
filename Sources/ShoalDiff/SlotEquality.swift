// SlotEquality: comparing field slots in place — a bitwise fast path, then by value, without copies.

import ShoalWire

/// Equality of field slots read through pointers, for the diff and merge walks.
///
/// Two slots whose stored bytes are identical are equal (same inline bits, same storage
/// pointers), so the common case — a slot carried over unchanged — costs a few vector compares
/// and no reference counting. Otherwise values compare case by case, binding payloads from the
/// borrowed slots.
enum SlotEquality {
    /// Whether the two slots' stored bytes are identical (then they are equal; the converse may
    /// fail, so callers fall back to ``sameContent(_:_:)``).
    ///
    /// Compares 16 bytes at a time, OR-ing the differences, over the ``SlotLayout/bytes`` ranges:
    /// the bytes of the stored properties, not the padding between them, which copies of a slot
    /// (a decoded record, a copied array) do not carry over.
    @inline(__always)
    static func identical(
        _ a: UnsafePointer<Record.Field>, _ b: UnsafePointer<Record.Field>,
        _ layout: SlotLayout
    ) -> Bool {
        let x = UnsafeRawPointer(a), y = UnsafeRawPointer(b)
        var acc = SIMD16<UInt8>()
        if layout.isTypical {
            // The same ranges as constants, so the compares unroll into straight-line code.
            differences(x, y, 0..<66, into: &acc)
            differences(x, y, 72..<97, into: &acc)
        } else {
            differences(x, y, layout.first, into: &acc)
            if layout.second.count > 0 { differences(x, y, layout.second, into: &acc) }
        }
        let w = unsafeBitCast(acc, to: SIMD2<UInt64>.self)
        return w[0] | w[1] == 0
    }

    /// How many slots from the start of `a` and `b` (at most `count`) are bitwise identical, as
    /// ``identical(_:_:_:)`` decides: the length of the run of unchanged slots a walk can skip.
    ///
    /// Its own small function, so the loop keeps its pointers in registers: on the typical
    /// layout a slot costs seven 16-byte loads per side, and two slots share one branch.
    @inline(never)
    static func identicalRun(
        _ a: UnsafePointer<Record.Field>, _ b: UnsafePointer<Record.Field>, count: Int,
        _ layout: SlotLayout
    ) -> Int {
        guard layout.isTypical, MemoryLayout<Record.Field>.stride >= 104 else {
            var k = 0
            while k < count && identical(a + k, b + k, layout) { k &+= 1 }
            return k
        }
        let stride = MemoryLayout<Record.Field>.stride
        var x = UnsafeRawPointer(a), y = UnsafeRawPointer(b)
        var k = 0
        while k &+ 2 <= count {
            let d0 = typicalDifferences(x, y)
            let d1 = typicalDifferences(x + stride, y + stride)
            if !isZero(d0 | d1) { return isZero(d0) ? k &+ 1 : k }
            x += stride &* 2
            y += stride &* 2
            k &+= 2
        }
        if k < count && isZero(typicalDifferences(x, y)) { k &+= 1 }
        return k
    }

    /// The bytewise differences of two slots over the typical layout's 91 bytes, ORed together:
    /// bytes 0–65 (name, value with its tag, whether there is a value) and 72–96 (the stamp), in
    /// overlapping 16-byte loads.
    @inline(__always)
    static func typicalDifferences(_ x: UnsafeRawPointer, _ y: UnsafeRawPointer) -> SIMD16<UInt8> {
        @inline(__always) func d(_ o: Int) -> SIMD16<UInt8> {
            x.loadUnaligned(fromByteOffset: o, as: SIMD16<UInt8>.self)
                ^ y.loadUnaligned(fromByteOffset: o, as: SIMD16<UInt8>.self)
        }
        let v = (d(0) | d(16)) | (d(32) | d(48))
        return v | (d(50) | d(72)) | d(81)
    }

    /// Whether every byte of `v` is zero.
    @inline(__always)
    static func isZero(_ v: SIMD16<UInt8>) -> Bool {
        let w = unsafeBitCast(v, to: SIMD2<UInt64>.self)
        return w[0] | w[1] == 0
    }

    /// ORs the bytewise differences of `range` (at least 16 bytes from the slot's start) into `acc`.
    @inline(__always)
    static func differences(
        _ x: UnsafeRawPointer, _ y: UnsafeRawPointer, _ range: Range<Int>,
        into acc: inout SIMD16<UInt8>
    ) {
        var offset = range.lowerBound
        let end = range.upperBound
        while offset &+ 16 <= end {
            acc |=
                x.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self)
                ^ y.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self)
            offset &+= 16
        }
        if offset < end {
            acc |=
                x.loadUnaligned(fromByteOffset: end &- 16, as: SIMD16<UInt8>.self)
                ^ y.loadUnaligned(fromByteOffset: end &- 16, as: SIMD16<UInt8>.self)
        }
    }

    /// Whether two slots' names have identical bits (then they are the same name; the converse
    /// may fail, so callers fall back to comparing bytes).
    @inline(__always)
    static func sameNameBits(
        _ a: UnsafePointer<Record.Field>, _ b: UnsafePointer<Record.Field>,
        _ layout: SlotLayout
    ) -> Bool {
        guard layout.nameLeads else { return false }
        let x = UnsafeRawPointer(a), y = UnsafeRawPointer(b)
        return x.loadUnaligned(as: SIMD2<UInt64>.self) == y.loadUnaligned(as: SIMD2<UInt64>.self)
    }

    /// Orders two slots by name: bitwise-equal names first, then UTF-8 byte order.
    @inline(__always)
    static func order(_ a: UnsafePointer<Record.Field>, _ b: UnsafePointer<Record.Field>, _ layout: SlotLayout) -> Int {
        sameNameBits(a, b, layout) ? 0 : NameOrder.compare(a.pointee.name, b.pointee.name)
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
        case .string(let x): if case .string(let y) = b { return NameOrder.equal(x, y) }
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

/// Where a field slot keeps its bytes: the ranges ``SlotEquality/identical(_:_:_:)`` compares.
///
/// Computed once from `MemoryLayout` (the name, value and stamp properties' offsets and sizes,
/// merged into at most two ranges), so the padding between them is skipped. If the slot has
/// any other stored property, or a range is too short for a 16-byte compare, the layout falls
/// back to one range over the slot's whole size.
struct SlotLayout {
    /// The first range of bytes to compare, from the slot's start.
    let first: Range<Int>
    /// The second range (empty when one range covers everything).
    let second: Range<Int>
    /// Whether a slot's name is its first 16 bytes (then ``SlotEquality/sameNameBits(_:_:_:)`` applies).
    let nameLeads: Bool
    /// Whether the ranges are the ones 64-bit platforms have today — name, value and whether
    /// there is one in bytes 0–65, the stamp in 72–96 — which ``SlotEquality/identical(_:_:_:)``
    /// compares as constants.
    let isTypical: Bool

    /// The layout of ``ShoalWire/Record/Field``, computed on first use.
    static let field = SlotLayout()

    init() {
        nameLeads = MemoryLayout<Record.Field>.offset(of: \Record.Field.name) == 0 && MemoryLayout<String>.size == 16
        (first, second) = Self.ranges()
        isTypical = first == 0..<66 && second == 72..<97
    }

    /// The merged byte ranges of the stored properties (name, value, whether there is a value,
    /// stamp); the whole slot if anything is unusual.
    static func ranges() -> (Range<Int>, Range<Int>) {
        let size = MemoryLayout<Record.Field>.size
        let whole = (0..<size, 0..<0)
        let probe = Record.Field(name: "a", value: nil, stamp: nil)
        guard size >= 16, Mirror(reflecting: probe).children.count == 4,
            let n = MemoryLayout<Record.Field>.offset(of: \Record.Field.name),
            let v = MemoryLayout<Record.Field>.offset(of: \Record.Field.valueStorage),
            let h = MemoryLayout<Record.Field>.offset(of: \Record.Field.hasValue),
            let s = MemoryLayout<Record.Field>.offset(of: \Record.Field.stamp)
        else { return whole }
        // The four properties' byte ranges, in address order, merged where they touch.
        var ranges = [
            n..<(n + MemoryLayout<String>.size), v..<(v + MemoryLayout<FieldValue>.size),
            h..<(h + MemoryLayout<Bool>.size), s..<(s + MemoryLayout<Dot?>.size)
        ]
        .sorted { $0.lowerBound < $1.lowerBound }
        var merged = [ranges.removeFirst()]
        for r in ranges {
            if let last = merged.last, r.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, r.upperBound)
            } else {
                merged.append(r)
            }
        }
        // Each range is compared with 16-byte loads ending at its end, so it must end at 16 or
        // later; more than two ranges is not worth specialising for.
        guard merged.count <= 2, merged.allSatisfy({ $0.upperBound >= 16 && $0.upperBound <= size }) else {
            return whole
        }
        return (merged[0], merged.count == 2 ? merged[1] : 0..<0)
    }
}
