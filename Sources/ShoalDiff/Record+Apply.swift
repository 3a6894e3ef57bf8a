// Record+Apply: applying a record delta to the version it was computed from, with typed errors.

public import ShoalWire

/// `record` with `delta` applied: `apply(diff(old, new), to: old) == new`.
///
/// Checks that the delta fits before trusting it: the base tag must be the record's
/// ``ShoalWire/Record/versionFingerprint``, operations increasing by field name (one per field, or a
/// set per concurrent slot, the later stamp first), every
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

    /// The position of the first slot named `name`, or where it would be inserted; names are
    /// compared in place (bits first, then UTF-8 bytes), without copying them.
    func slotIndex(of name: String) -> (index: Int, found: Bool) {
        fields.withUnsafeBufferPointer { p in
            guard let base = p.baseAddress else { return (0, false) }
            var lo = 0, hi = p.count
            while lo < hi {
                let mid = (lo &+ hi) >> 1
                if NameOrder.compare(base[mid].name, name) < 0 { lo = mid &+ 1 } else { hi = mid }
            }
            return (lo, lo < p.count && NameOrder.equal(base[lo].name, name))
        }
    }

    /// The slots of the field at `s`: the run of its concurrent slots (empty when not found).
    func slotRun(at s: (index: Int, found: Bool)) -> Range<Int> {
        s.found ? s.index..<slotRunEnd(from: s.index) : s.index..<s.index
    }

    /// Puts `slots` (one name's, the later stamp first) where the run `run` of that name is.
    private mutating func replaceRun(_ run: Range<Int>, with slots: some Collection<Field>) {
        if run.count == 1 && slots.count == 1, let f = slots.first {
            replaceSlot(at: run.lowerBound, with: f)
        } else {
            fields.replaceSubrange(run, with: slots)
        }
    }

    /// Applies a delta's single operation: checks, computes, then writes.
    private mutating func applyOnly(_ op: UnsafePointer<RecordDelta.Operation>) throws(DiffError) {
        switch op.pointee {
        case .set(let f):
            replaceRun(slotRun(at: slotIndex(of: f.name)), with: CollectionOfOne(f))
        case .drop(let name):
            let run = slotRun(at: slotIndex(of: name))
            guard !run.isEmpty else { throw Self.missingSlot(name) }
            fields.removeSubrange(run)
        case .splice(let name, let stamp, let edits):
            let s = try single(name, "splice")
            let value = try editedList(at: s, name: name, edits)
            replaceSlot(at: s, with: Field(name: name, value: value, stamp: stamp))
        case .patch(let name, let stamp, let edits):
            let s = try single(name, "patch")
            guard let value = fields[s].value else { throw Self.missing(name, "patch") }
            let patched = try BytePatcher.apply(edits, to: value, field: name)
            replaceSlot(at: s, with: Field(name: name, value: patched, stamp: stamp))
        }
    }

    /// The index of the one slot of `name` that a splice or patch edits.
    private func single(_ name: String, _ what: String) throws(DiffError) -> Int {
        let run = slotRun(at: slotIndex(of: name))
        guard !run.isEmpty else { throw Self.missing(name, what) }
        guard run.count == 1 else {
            throw DiffError(
                .notPatchable, field: name,
                "a \(what) edits one value, but \(name) holds \(run.count) concurrent slots; the delta was computed from another version — refetch the record"
            )
        }
        return run.lowerBound
    }

    /// The list at slot `index` with `edits` applied.
    private func editedList(at index: Int, name: String, _ edits: [RecordDelta.ListSplice]) throws(DiffError)
        -> FieldValue
    {
        guard let value = fields[index].value else { throw Self.missing(name, "splice") }
        guard case .list(let list) = value else {
            throw DiffError(
                .notPatchable, field: name,
                "a splice edits lists, but the field holds a \(value.kind); the delta was computed from another value — refetch the record"
            )
        }
        return .list(try ListSplicer.apply(edits, to: list, field: name))
    }

    /// Applies several operations in two passes, so a failing one leaves the record unchanged.
    private mutating func applyAll(_ operations: [RecordDelta.Operation]) throws(DiffError) {
        // Pass 1: check every operation and compute edited values; nothing is changed yet.
        var edited: [FieldValue] = []
        var previous: RecordDelta.Operation? = nil
        for op in operations {
            let name = op.fieldName
            if let p = previous {
                let c = NameOrder.compare(p.fieldName, name)
                if c > 0 || c == 0 && !Self.concurrentSets(p, op) { throw DiffError.unsorted(name, after: p.fieldName) }
            }
            previous = op
            switch op {
            case .set:
                break
            case .drop:
                guard slotIndex(of: name).found else { throw Self.missingSlot(name) }
            case .splice(_, _, let edits):
                edited.append(try editedList(at: try single(name, "splice"), name: name, edits))
            case .patch(_, _, let edits):
                let s = try single(name, "patch")
                guard let value = fields[s].value else { throw Self.missing(name, "patch") }
                edited.append(try BytePatcher.apply(edits, to: value, field: name))
            }
        }
        // Pass 2: cannot fail.
        var next = 0
        var k = 0
        while k < operations.count {
            let op = operations[k]
            let run = slotRun(at: slotIndex(of: op.fieldName))
            switch op {
            case .set:
                // A set, or the sets of one field's concurrent slots, replace its run.
                var end = k &+ 1
                while end < operations.count, case .set = operations[end],
                    NameOrder.equal(operations[end].fieldName, op.fieldName)
                {
                    end &+= 1
                }
                replaceRun(run, with: operations[k..<end].compactMap { if case .set(let f) = $0 { f } else { nil } })
                k = end
                continue
            case .drop:
                fields.removeSubrange(run)
            case .splice(let name, let stamp, _), .patch(let name, let stamp, _):
                if run.count == 1 && next < edited.count {
                    replaceSlot(at: run.lowerBound, with: Field(name: name, value: edited[next], stamp: stamp))
                }
                next &+= 1
            }
            k &+= 1
        }
    }

    /// Whether `b` may follow `a` on the same field: both set concurrent slots, stamped, `b`'s
    /// stamp the earlier.
    private static func concurrentSets(_ a: RecordDelta.Operation, _ b: RecordDelta.Operation) -> Bool {
        guard case .set(let x) = a, case .set(let y) = b, let sx = x.stamp, let sy = y.stamp else { return false }
        return sy < sx
    }

    private static func missingSlot(_ name: String) -> DiffError {
        DiffError(
            .missingField, field: name,
            "a drop removes the slot of \(name) but the record has none; the delta was computed from another version — refetch the record"
        )
    }

    private static func missing(_ name: String, _ what: String) -> DiffError {
        DiffError(
            .missingField, field: name,
            "a \(what) edits the value of \(name) but the record has no value there; the delta was computed from another version — refetch the record"
        )
    }
}
