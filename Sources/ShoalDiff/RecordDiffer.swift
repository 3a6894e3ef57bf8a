// RecordDiffer: the one-pass walk over two sorted slot arrays that computes a record delta.

import ShoalWire

/// The merge pass behind ``ShoalWire/RecordDelta/init(from:to:options:)``.
///
/// Costs, for two versions of a 32-field record (`shoal-bench diff`): the base fingerprint (three
/// independent multiplies per vector entry and a finaliser), then
/// - for two versions of one ``ShoalWire/FieldEdits`` lineage (one made from the other, or both
///   from a third, by setting fields: what an app editing a fetched record has), one compare per
///   slot either side replaced, found from their masks;
/// - otherwise one bitwise compare per slot carried over unchanged (runs of them in
///   ``SlotEquality/identicalRun(_:_:count:_:)``);
/// and for each changed slot one operation in an array allocated once.
enum RecordDiffer {
    /// Sets `delta` (empty on entry) to the delta from `old` to `new`.
    @inline(never)
    static func fill(_ delta: inout RecordDelta, from old: Record, to new: Record, options: DiffOptions) {
        // An empty delta costs one fingerprint and a few comparisons, and allocates nothing.
        delta.baseTag = old.versionVector.fingerprint
        var stamped = false
        old.fields.withUnsafeBufferPointer { pa in
            new.fields.withUnsafeBufferPointer { pb in
                if pa.baseAddress == pb.baseAddress && pa.count == pb.count { return }
                if old.edits.isShared(with: new.edits) && pa.count == pb.count {
                    // One lineage: only the slots either side replaced in place can differ.
                    (delta.operations, stamped) = diffSlots(
                        pa, pb, old.edits.candidates(with: new.edits),
                        zone: new.id.zone, options: options)
                } else {
                    delta.operations = diffFields(pa, pb, zone: new.id.zone, options: options)
                    stamped = !delta.operations.isEmpty && hasStamp(delta.operations)
                }
            }
        }
        if stamped || !sameSystemFields(old, new) {
            delta.system = systemFields(of: new)
        }
    }

    /// `record`'s system fields, copying only them (not the whole record first).
    @inline(__always)
    static func systemFields(of record: Record) -> RecordDelta.SystemFields {
        RecordDelta.SystemFields(
            recordType: record.recordType, parent: record.parent, creation: record.creation,
            versionVector: record.versionVector, heads: record.heads, extensions: record.extensions)
    }

    /// Whether two arrays share their storage (then they are equal without looking inside).
    @inline(__always)
    static func sameStorage<T>(_ a: [T], _ b: [T]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in pa.baseAddress == pb.baseAddress } }
    }

    /// Whether every system field (type, parent, creation, vector, heads, extensions) is equal.
    static func sameSystemFields(_ a: Record, _ b: Record) -> Bool {
        guard a.creation == b.creation,
            sameStorage(a.versionVector.entries, b.versionVector.entries) || a.versionVector == b.versionVector,
            sameStorage(a.heads, b.heads) || a.heads == b.heads, NameOrder.equal(a.recordType, b.recordType)
        else { return false }
        if case .none = a.parent, case .none = b.parent, a.extensions.isEmpty, b.extensions.isEmpty { return true }
        return a.parent == b.parent && a.extensions == b.extensions
    }

    static func hasStamp(_ operations: [RecordDelta.Operation]) -> Bool {
        for op in operations {
            switch op {
            case .set(let f): if f.stamp != nil { return true }
            case .drop: break
            case .splice(_, let s, _), .patch(_, let s, _): if s != nil { return true }
            }
        }
        return false
    }

    /// Compares only the slots whose bits are set in `candidates` (two records of one
    /// ``ShoalWire/FieldEdits`` lineage: same names at the same indices, every other slot shared),
    /// giving one operation per slot that differs, and whether any of them carries a stamp (each
    /// operation has its new slot's stamp).
    static func diffSlots(
        _ pa: UnsafeBufferPointer<Record.Field>, _ pb: UnsafeBufferPointer<Record.Field>, _ candidates: UInt64,
        zone: RecordZone.ID, options: DiffOptions
    ) -> ([RecordDelta.Operation], stamped: Bool) {
        guard let a = pa.baseAddress, let b = pb.baseAddress else { return ([], false) }
        // First the slots that differ, then an array of exactly their operations.
        var differing: UInt64 = 0
        var stamped = false
        var bits = candidates
        while bits != 0 {
            let i = bits.trailingZeroBitCount
            bits &= bits &- 1
            guard i < pa.count else { break }
            if !SlotEquality.sameContent(a + i, b + i) {
                differing |= 1 &<< UInt64(i)
                stamped = stamped || b[i].stamp != nil
            }
        }
        if differing == 0 { return ([], false) }
        let first = differing.trailingZeroBitCount
        if differing & (differing &- 1) == 0 {
            // One slot changed, the common case: an array literal is allocated with type
            // metadata cached in this module, where the generic paths look it up at run time.
            return ([operation(from: a + first, to: b + first, zone: zone, options: options)], stamped)
        }
        var ops: [RecordDelta.Operation] = []
        ops.reserveCapacity(differing.nonzeroBitCount)
        bits = differing
        while bits != 0 {
            let i = bits.trailingZeroBitCount
            bits &= bits &- 1
            ops.append(operation(from: a + i, to: b + i, zone: zone, options: options))
        }
        return (ops, stamped)
    }

    /// Walks both sorted slot arrays once, appending one operation per differing name.
    static func diffFields(
        _ pa: UnsafeBufferPointer<Record.Field>, _ pb: UnsafeBufferPointer<Record.Field>,
        zone: RecordZone.ID, options: DiffOptions
    ) -> [RecordDelta.Operation] {
        var ops: [RecordDelta.Operation] = []
        let n = pa.count, m = pb.count
        var i = 0, j = 0
        if let a = pa.baseAddress, let b = pb.baseAddress {
            let layout = SlotLayout.field
            while i < n && j < m {
                // Skip the run of slots carried over unchanged in one tight loop.
                let run = SlotEquality.identicalRun(a + i, b + j, count: min(n &- i, m &- j), layout)
                i &+= run
                j &+= run
                guard i < n && j < m else { break }
                let x = a + i, y = b + j
                let c = SlotEquality.order(x, y, layout)
                if c == 0 {
                    // A field with concurrent slots on either side changes as a whole: a set per
                    // slot of the new run (part of the run may have been skipped as identical).
                    let xs = runStart(a, i), ys = runStart(b, j)
                    let xe = runEnd(a, i, n), ye = runEnd(b, j, m)
                    if xe &- xs == 1 && ye &- ys == 1 {
                        if !SlotEquality.sameContent(x, y) {
                            ops.append(operation(from: x, to: y, zone: zone, options: options))
                        }
                    } else if !sameRun(a + xs, xe &- xs, b + ys, ye &- ys) {
                        for k in ys..<ye { ops.append(.set(b[k])) }
                    }
                    i = xe
                    j = ye
                } else if c < 0 {
                    ops.append(.drop(name: x.pointee.name))
                    i = runEnd(a, i, n)
                } else {
                    ops.append(.set(y.pointee))
                    j &+= 1
                }
            }
        }
        while i < n {
            ops.append(.drop(name: pa[i].name))
            i = pa.baseAddress.map { runEnd($0, i, n) } ?? n
        }
        while j < m {
            ops.append(.set(pb[j]))
            j &+= 1
        }
        return ops
    }

    /// The first slot of the run of concurrent slots holding slot `i`.
    @inline(__always)
    static func runStart(_ p: UnsafePointer<Record.Field>, _ i: Int) -> Int {
        var s = i
        while s > 0 && NameOrder.equal(p[s &- 1].name, p[i].name) { s &-= 1 }
        return s
    }

    /// The end of the run of concurrent slots holding slot `i`, of `n` slots.
    @inline(__always)
    static func runEnd(_ p: UnsafePointer<Record.Field>, _ i: Int, _ n: Int) -> Int {
        var e = i &+ 1
        while e < n && NameOrder.equal(p[e].name, p[i].name) { e &+= 1 }
        return e
    }

    /// Whether two runs of one field's slots hold the same slots.
    static func sameRun(_ x: UnsafePointer<Record.Field>, _ n: Int, _ y: UnsafePointer<Record.Field>, _ m: Int) -> Bool
    {
        guard n == m else { return false }
        for k in 0..<n where !SlotEquality.sameContent(x + k, y + k) { return false }
        return true
    }

    /// The cheapest operation turning slot `a` into slot `b` (same name, different slot).
    ///
    /// Only lists, and strings and bytes of at least ``DiffOptions/bytePatchThreshold`` bytes,
    /// are looked into; every other change is a `.set` of the new slot, decided without copying
    /// either value.
    @inline(__always)
    static func operation(
        from a: UnsafePointer<Record.Field>, to b: UnsafePointer<Record.Field>, zone: RecordZone.ID,
        options: DiffOptions
    ) -> RecordDelta.Operation {
        mayEditInPlace(a, b, options) ? editOperation(from: a, to: b, zone: zone, options: options) : .set(b.pointee)
    }

    /// Whether ``editOperation(from:to:zone:options:)`` could find a splice or a patch: the new
    /// value is a list, or a string or bytes with either side at the patch threshold.
    @inline(__always)
    static func mayEditInPlace(
        _ a: UnsafePointer<Record.Field>, _ b: UnsafePointer<Record.Field>, _ options: DiffOptions
    ) -> Bool {
        let t = options.bytePatchThreshold
        switch b.pointee.value {
        case .list?: return options.listSplices
        case .string(let y)?:
            if y.utf8.count >= t { return true }
            if case .string(let x)? = a.pointee.value { return x.utf8.count >= t }
            return false
        case .bytes(let y)?:
            if y.count >= t { return true }
            if case .bytes(let x)? = a.pointee.value { return x.count >= t }
            return false
        default: return false
        }
    }

    /// The splice or patch turning slot `a` into slot `b` when one is smaller, else a `.set`.
    static func editOperation(
        from a: UnsafePointer<Record.Field>, to b: UnsafePointer<Record.Field>, zone: RecordZone.ID,
        options: DiffOptions
    ) -> RecordDelta.Operation {
        switch b.pointee.value {
        case .list(let y)?:
            guard options.listSplices, case .list(let x)? = a.pointee.value, x.elementKind == y.elementKind,
                let edits = ListSplicer.splices(from: x, to: y), !edits.isEmpty,
                ListSplicer.encodedSize(edits, zone: zone) < FieldValue.list(y).payloadSize(zone: zone)
            else { break }
            return .splice(name: b.pointee.name, stamp: b.pointee.stamp, edits: edits)
        case .string(let y)? where y.utf8.count >= options.bytePatchThreshold:
            guard case .string(let x)? = a.pointee.value, let p = BytePatcher.patch(from: x, to: y),
                BytePatcher.encodedSize(p) < WireSize.lengthPrefixed(y.utf8.count)
            else { break }
            return .patch(name: b.pointee.name, stamp: b.pointee.stamp, edits: [p])
        case .bytes(let y)? where y.count >= options.bytePatchThreshold:
            guard case .bytes(let x)? = a.pointee.value, let p = BytePatcher.patch(from: x, to: y),
                BytePatcher.encodedSize(p) < WireSize.lengthPrefixed(y.count)
            else { break }
            return .patch(name: b.pointee.name, stamp: b.pointee.stamp, edits: [p])
        case .string(let y)? where options.bytePatchThreshold > 0:
            // A shorter new string still gets a patch when the old one reaches the threshold.
            guard case .string(let x)? = a.pointee.value, x.utf8.count >= options.bytePatchThreshold,
                let p = BytePatcher.patch(from: x, to: y),
                BytePatcher.encodedSize(p) < WireSize.lengthPrefixed(y.utf8.count)
            else { break }
            return .patch(name: b.pointee.name, stamp: b.pointee.stamp, edits: [p])
        case .bytes(let y)? where options.bytePatchThreshold > 0:
            guard case .bytes(let x)? = a.pointee.value, x.count >= options.bytePatchThreshold,
                let p = BytePatcher.patch(from: x, to: y),
                BytePatcher.encodedSize(p) < WireSize.lengthPrefixed(y.count)
            else { break }
            return .patch(name: b.pointee.name, stamp: b.pointee.stamp, edits: [p])
        default:
            break
        }
        return .set(b.pointee)
    }
}
