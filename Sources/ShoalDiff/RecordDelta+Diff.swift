// RecordDelta+Diff: computing the delta between two versions of a record in one merge pass.

public import ShoalWire

/// The delta that turns `old` into `new`; `apply(diff(old, new), to: old) == new`.
///
/// See ``ShoalWire/RecordDelta/init(from:to:options:)``.
public func diff(_ old: Record, _ new: Record, options: DiffOptions = .default) -> RecordDelta {
    RecordDelta(from: old, to: new, options: options)
}

extension RecordDelta {
    /// Computes the delta that turns `old` into `new`, two versions of one record.
    ///
    /// - Fields whose slot (value or stamp) differs get one operation each, in name order:
    ///   `.set` for a new or changed value or a removed-field marker, `.drop` for a slot `new`
    ///   no longer has, `.splice` for a list edited element-wise when that encodes smaller than
    ///   the new list, `.patch` for a string or bytes value of at least
    ///   ``DiffOptions/bytePatchThreshold`` bytes edited in a byte range when that is smaller.
    /// - ``system`` is `new`'s system fields when any of them differs — or when an operation
    ///   carries a stamp, since stamps are encoded against the delta's version vector.
    /// - Identical records give an empty delta without allocating.
    ///
    /// The record IDs are not compared; the delta is meant for `old`'s record.
    public init(from old: borrowing Record, to new: borrowing Record, options: DiffOptions = .default) {
        // Filled where the result goes: a delta built in a local and returned was copied on the
        // way out (memcpy of the ~150-byte value).
        self.init(baseTag: 0)
        RecordDiffer.fill(&self, from: old, to: new, options: options)
    }
}
