// BytePatcher: byte-range edits between two large string or bytes values, and applying them.

package import ShoalWire

/// Computes and applies ``ShoalWire/RecordDelta/BytePatch`` edits.
///
/// Computing keeps the common prefix and suffix (compared eight bytes at a time) and replaces
/// the middle: one patch, found in one linear scan, which is what an edit in the middle of a long
/// note or document needs.
package enum BytePatcher {
    /// The one patch turning `old` into `new`, or nil when they are equal.
    package static func patch(from old: UnsafeRawBufferPointer, to new: UnsafeRawBufferPointer) -> RecordDelta
        .BytePatch?
    {
        let n = old.count, m = new.count
        guard let pa = old.baseAddress, let pb = new.baseAddress else {
            if n == 0 && m == 0 { return nil }
            return RecordDelta.BytePatch(offset: 0, deleteCount: n, insert: Array(new))
        }
        let shorter = min(n, m)
        var lo = 0
        while lo &+ 8 <= shorter
            && pa.loadUnaligned(fromByteOffset: lo, as: UInt64.self)
                == pb.loadUnaligned(fromByteOffset: lo, as: UInt64.self)
        {
            lo &+= 8
        }
        while lo < shorter && pa.load(fromByteOffset: lo, as: UInt8.self) == pb.load(fromByteOffset: lo, as: UInt8.self)
        { lo &+= 1 }
        if lo == n && lo == m { return nil }
        var endA = n, endB = m
        while endA &- lo >= 8 && endB &- lo >= 8
            && pa.loadUnaligned(fromByteOffset: endA &- 8, as: UInt64.self)
                == pb.loadUnaligned(fromByteOffset: endB &- 8, as: UInt64.self)
        {
            endA &-= 8
            endB &-= 8
        }
        while endA > lo && endB > lo
            && pa.load(fromByteOffset: endA &- 1, as: UInt8.self) == pb.load(fromByteOffset: endB &- 1, as: UInt8.self)
        {
            endA &-= 1
            endB &-= 1
        }
        return RecordDelta.BytePatch(
            offset: lo, deleteCount: endA &- lo,
            insert: Array(UnsafeRawBufferPointer(rebasing: new[lo..<endB])))
    }

    /// The patch turning string `old` into `new` (UTF-8 byte offsets), or nil when equal.
    package static func patch(from old: String, to new: String) -> RecordDelta.BytePatch? {
        var a = old, b = new
        return a.withUTF8 { pa in
            b.withUTF8 { pb in patch(from: UnsafeRawBufferPointer(pa), to: UnsafeRawBufferPointer(pb)) }
        }
    }

    /// The patch turning bytes `old` into `new`, or nil when equal.
    package static func patch(from old: [UInt8], to new: [UInt8]) -> RecordDelta.BytePatch? {
        old.withUnsafeBytes { pa in new.withUnsafeBytes { pb in patch(from: pa, to: pb) } }
    }

    /// Encoded size of a patch operation's body (target kind, count, edits).
    package static func encodedSize(_ p: RecordDelta.BytePatch) -> Int {
        2 &+ WireSize.varint(UInt64(p.offset)) &+ WireSize.varint(UInt64(p.deleteCount))
            &+ WireSize.lengthPrefixed(p.insert.count)
    }

    // MARK: Applying

    /// `value` (a string or bytes) with `edits` applied at byte offsets.
    /// - Throws: ``DiffError`` `.notPatchable` for other kinds, `.outOfRange` for bad edits,
    ///   `.invalidUTF8` when a string would not be valid UTF-8 afterwards.
    package static func apply(_ edits: [RecordDelta.BytePatch], to value: FieldValue, field: String) throws(DiffError)
        -> FieldValue
    {
        switch value {
        case .bytes(let b):
            let result = b.withUnsafeBytes { raw in
                Result { () throws(DiffError) in try apply(edits, to: raw, field: field) }
            }
            return .bytes(try result.get())
        case .string(var s):
            let result = s.withUTF8 { raw in
                Result { () throws(DiffError) in try apply(edits, to: UnsafeRawBufferPointer(raw), field: field) }
            }
            let bytes = try result.get()
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw DiffError(
                    .invalidUTF8, field: field, offset: firstInvalidUTF8(bytes),
                    "the patched string is not valid UTF-8; the patch was computed from another value — refetch the record"
                )
            }
            return .string(text)
        default:
            throw DiffError(
                .notPatchable, field: field,
                "a byte patch edits strings and bytes, but the field holds a \(value.isList ? "list of \(value.kind)" : value.kind.description); the delta was computed from another value — refetch the record"
            )
        }
    }

    static func apply(_ edits: [RecordDelta.BytePatch], to base: UnsafeRawBufferPointer, field: String)
        throws(DiffError) -> [UInt8]
    {
        try EditRange.check(
            edits.lazy.map { ($0.offset, $0.deleteCount, $0.insert.count) }, count: edits.count,
            baseCount: base.count, field: field, unit: "byte")
        var out = [UInt8]()
        var grown = base.count
        for e in edits { grown = grown &- e.deleteCount &+ e.insert.count }
        out.reserveCapacity(grown)
        var at = 0
        for e in edits {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: base[at..<e.offset]))
            out.append(contentsOf: e.insert)
            at = e.offset &+ e.deleteCount
        }
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: base[at...]))
        return out
    }

    /// Byte offset of the first ill-formed UTF-8 sequence (for error messages).
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var offset = 0
        var it = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&it) {
            case .scalarValue(let s): offset &+= UTF8.width(s)
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }
}
