// Record+Apply: applying a record delta to the version it was computed from, with typed errors.

public import ShoalWire

/// `record` with `delta` applied: `apply(diff(old, new), to: old) == new`.
///
/// Checks that the delta fits before trusting it: the base tag must be the record's
/// ``ShoalWire/Record/versionFingerprint``, operations strictly increasing by field name, every
/// splice and patch inside the value it edits (in increasing order, non-empty, not touching),
/// splices only on lists and with elements of the list's kind, patches only on strings and bytes,
/// and a patched string still valid UTF-8. Never traps on any delta.
///
/// - Throws: ``DiffError`` with code `.baseMismatch`, `.unsortedOperations`, `.missingField`,
///   `.notPatchable`, `.kindMismatch`, `.outOfRange` or `.invalidUTF8`.
public func apply(_ delta: RecordDelta, to record: consuming Record) throws(DiffError) -> Record {
    var r = record
    try r.apply(delta)
    return r
}

extension Record {
    /// Applies `delta` to this record in place, all or nothing; see ``apply(_:to:)``.
    ///
    /// Every operation is checked (and every splice or patch computed) before the record is
    /// touched, so on error the record is unchanged. A record whose storage is not shared is
    /// edited without copying its other fields.
    ///
    /// - Throws: ``DiffError`` when the delta does not fit; the record is then unchanged.
    public mutating func apply(_ delta: RecordDelta) throws(DiffError) {
        // Through the vector: the `versionFingerprint` getter on `self` here copies the record.
        let found = versionVector.fingerprint
        guard delta.baseTag == found else { throw DiffError.baseMismatch(expected: delta.baseTag, found: found) }
        if delta.operations.count == 1 {
            // The common case, in one pass: the only operation is checked before it writes.
            try delta.operations.withUnsafeBufferPointer { ops throws(DiffError) in
                if let op = ops.baseAddress { try applyOnly(op) }
            }
        } else if !delta.operations.isEmpty {
            try applyAll(delta.operations)
        }
        if let system = delta.system {
            recordType = system.recordType
            parent = system.parent
            creation = system.creation
            versionVector = system.versionVector
            heads = system.heads
            extensions = system.extensions
        }
    }

    /// The position of the slot named `name`, or where it would be inserted; names are compared
    /// in place (bits first, then UTF-8 bytes), without copying them.
    func slotIndex(of name: String) -> (index: Int, found: Bool) {
        fields.withUnsafeBufferPointer { p in
            guard let base = p.baseAddress else { return (0, false) }
            var lo = 0, hi = p.count
            while lo < hi {
                let mid = (lo &+ hi) >> 1
                let c = NameOrder.compare(base[mid].name, name)
                if c == 0 { return (mid, true) }
                if c < 0 { lo = mid &+ 1 } else { hi = mid }
            }
            return (lo, false)
        }
    }

    /// Applies a delta's single operation: checks, computes, then writes.
    private mutating func applyOnly(_ op: UnsafePointer<RecordDelta.Operation>) throws(DiffError) {
        switch op.pointee {
        case .set(let f):
            let s = slotIndex(of: f.name)
            if s.found { replaceSlot(at: s.index, with: f) } else { fields.insert(f, at: s.index) }
        case .drop(let name):
            let s = slotIndex(of: name)
            guard s.found else { throw Self.missingSlot(name) }
            fields.remove(at: s.index)
        case .splice(let name, let stamp, let edits):
            let s = slotIndex(of: name)
            let value = try editedList(at: s, name: name, edits)
            replaceSlot(at: s.index, with: Field(name: name, value: value, stamp: stamp))
        case .patch(let name, let stamp, let edits):
            let s = slotIndex(of: name)
            guard s.found, let value = fields[s.index].value else { throw Self.missing(name, "patch") }
            let patched = try BytePatcher.apply(edits, to: value, field: name)
            replaceSlot(at: s.index, with: Field(name: name, value: patched, stamp: stamp))
        }
    }

    /// The list at slot `s` with `edits` applied.
    private func editedList(at s: (index: Int, found: Bool), name: String,
                            _ edits: [RecordDelta.ListSplice]) throws(DiffError) -> FieldValue {
        guard s.found, let value = fields[s.index].value else { throw Self.missing(name, "splice") }
        guard case .list(let list) = value else {
            throw DiffError(.notPatchable, field: name, "a splice edits lists, but the field holds a \(value.kind); the delta was computed from another value — refetch the record")
        }
        return .list(try ListSplicer.apply(edits, to: list, field: name))
    }

    /// Applies several operations in two passes, so a failing one leaves the record unchanged.
    private mutating func applyAll(_ operations: [RecordDelta.Operation]) throws(DiffError) {
        // Pass 1: check every operation and compute edited values; nothing is changed yet.
        var edited: [FieldValue] = []
        var previous: String? = nil
        for op in operations {
            let name = op.fieldName
            if let p = previous, NameOrder.compare(p, name) >= 0 { throw DiffError.unsorted(name, after: p) }
            previous = name
            switch op {
            case .set:
                break
            case .drop:
                guard slotIndex(of: name).found else { throw Self.missingSlot(name) }
            case .splice(_, _, let edits):
                edited.append(try editedList(at: slotIndex(of: name), name: name, edits))
            case .patch(_, _, let edits):
                let s = slotIndex(of: name)
                guard s.found, let value = fields[s.index].value else { throw Self.missing(name, "patch") }
                edited.append(try BytePatcher.apply(edits, to: value, field: name))
            }
        }
        // Pass 2: cannot fail.
        var next = 0
        for op in operations {
            let s = slotIndex(of: op.fieldName)
            switch op {
            case .set(let f):
                if s.found { replaceSlot(at: s.index, with: f) } else { fields.insert(f, at: s.index) }
            case .drop:
                if s.found { fields.remove(at: s.index) }
            case .splice(let name, let stamp, _), .patch(let name, let stamp, _):
                if s.found && next < edited.count {
                    replaceSlot(at: s.index, with: Field(name: name, value: edited[next], stamp: stamp))
                }
                next &+= 1
            }
        }
    }

    private static func missingSlot(_ name: String) -> DiffError {
        DiffError(.missingField, field: name, "a drop removes the slot of \(name) but the record has none; the delta was computed from another version — refetch the record")
    }

    private static func missing(_ name: String, _ what: String) -> DiffError {
        DiffError(.missingField, field: name, "a \(what) edits the value of \(name) but the record has no value there; the delta was computed from another version — refetch the record")
    }
}
