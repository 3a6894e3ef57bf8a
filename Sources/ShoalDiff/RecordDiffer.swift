// RecordDiffer: the one-pass walk over two sorted slot arrays that computes a record delta.

public import ShoalWire

/// The merge pass behind ``ShoalWire/RecordDelta/init(from:to:options:)``.
@usableFromInline package enum RecordDiffer {
    /// See ``ShoalWire/RecordDelta/init(from:to:options:)``; parameters are borrowed, not copied.
    @inlinable package static func delta(from old: Record, to new: Record, options: DiffOptions) -> RecordDelta {
        // An empty delta costs one fingerprint and two cheap comparisons, and allocates nothing.
        let baseTag = old.versionFingerprint
        var operations: [RecordDelta.Operation] = []
        if !sameStorage(old.fields, new.fields) {
            diffFields(old.fields, new.fields, zone: new.id.zone, options: options, into: &operations)
        }
        if sameSystemFields(old, new) && (operations.isEmpty || !hasStamp(operations)) {
            return RecordDelta(baseTag: baseTag, operations: operations)
        }
        return RecordDelta(baseTag: baseTag, system: RecordDelta.SystemFields(of: new), operations: operations)
    }

    /// Whether two arrays share their storage (then they are equal without looking inside).
    @inlinable package static func sameStorage<T>(_ a: [T], _ b: [T]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in pa.baseAddress == pb.baseAddress } }
    }

    /// Whether every system field (type, parent, creation, vector, heads, extensions) is equal.
    @usableFromInline package static func sameSystemFields(_ a: Record, _ b: Record) -> Bool {
        guard a.creation == b.creation, sameStorage(a.heads, b.heads) || a.heads == b.heads,
              a.versionVector == b.versionVector, a.recordType == b.recordType else { return false }
        if case .none = a.parent, case .none = b.parent, a.extensions.isEmpty, b.extensions.isEmpty { return true }
        return a.parent == b.parent && a.extensions == b.extensions
    }

    @usableFromInline static func hasStamp(_ operations: [RecordDelta.Operation]) -> Bool {
        for op in operations {
            switch op {
            case .set(let f): if f.stamp != nil { return true }
            case .drop: break
            case .splice(_, let s, _), .patch(_, let s, _): if s != nil { return true }
            }
        }
        return false
    }

    /// Walks both sorted slot arrays once, appending one operation per differing name.
    @usableFromInline package static func diffFields(_ a: [Record.Field], _ b: [Record.Field], zone: RecordZone.ID,
                                   options: DiffOptions, into ops: inout [RecordDelta.Operation]) {
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                diffFields(pa, pb, zone: zone, options: options, into: &ops)
            }
        }
    }

    static func diffFields(_ pa: UnsafeBufferPointer<Record.Field>, _ pb: UnsafeBufferPointer<Record.Field>,
                           zone: RecordZone.ID, options: DiffOptions, into ops: inout [RecordDelta.Operation]) {
        let n = pa.count, m = pb.count
        var i = 0, j = 0
        if let a = pa.baseAddress, let b = pb.baseAddress {
            while i < n && j < m {
                let x = a + i, y = b + j
                if SlotEquality.identical(x, y) {
                    i &+= 1
                    j &+= 1
                    continue
                }
                let c = SlotEquality.sameNameBits(x, y) ? 0 : UTF8Order.compare(x.pointee.name, y.pointee.name)
                if c == 0 {
                    if !SlotEquality.sameContent(x, y) {
                        ops.append(operation(from: x.pointee, to: y.pointee, zone: zone, options: options))
                    }
                    i &+= 1
                    j &+= 1
                } else if c < 0 {
                    ops.append(.drop(name: x.pointee.name))
                    i &+= 1
                } else {
                    ops.append(.set(y.pointee))
                    j &+= 1
                }
            }
        }
        while i < n {
            ops.append(.drop(name: pa[i].name))
            i &+= 1
        }
        while j < m {
            ops.append(.set(pb[j]))
            j &+= 1
        }
    }

    /// The cheapest operation turning slot `a` into slot `b` (same name, different slot).
    static func operation(from a: Record.Field, to b: Record.Field, zone: RecordZone.ID,
                          options: DiffOptions) -> RecordDelta.Operation {
        guard let old = a.value, let new = b.value, old != new else { return .set(b) }
        switch (old, new) {
        case let (.list(x), .list(y)) where options.listSplices && x.elementKind == y.elementKind:
            if let edits = ListSplicer.splices(from: x, to: y), !edits.isEmpty,
               ListSplicer.encodedSize(edits, zone: zone) < new.payloadSize(zone: zone) {
                return .splice(name: b.name, stamp: b.stamp, edits: edits)
            }
        case let (.string(x), .string(y)):
            if max(x.utf8.count, y.utf8.count) >= options.bytePatchThreshold, let p = BytePatcher.patch(from: x, to: y),
               BytePatcher.encodedSize(p) < new.payloadSize(zone: zone) {
                return .patch(name: b.name, stamp: b.stamp, edits: [p])
            }
        case let (.bytes(x), .bytes(y)):
            if max(x.count, y.count) >= options.bytePatchThreshold, let p = BytePatcher.patch(from: x, to: y),
               BytePatcher.encodedSize(p) < new.payloadSize(zone: zone) {
                return .patch(name: b.name, stamp: b.stamp, edits: [p])
            }
        default:
            break
        }
        return .set(b)
    }
}
