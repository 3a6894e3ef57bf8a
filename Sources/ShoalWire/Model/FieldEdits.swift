// FieldEdits: which field slots a record edited in place since its slot array was built, so two
// versions of one lineage can be diffed by looking only at those slots.

internal import Synchronization

/// The lineage of a record's field slots: an origin, and the slots edited in place since.
///
/// Every time a record's slot array is built or restructured (decoding, the memberwise
/// initialiser, a slot inserted or removed, any change through ``Record/fields``) the record
/// takes a new, process-wide unique ``origin`` and an empty ``slots`` mask. Replacing the slot at
/// index `i` in place (``Record/replaceSlot(at:with:)``, which the subscript and `apply` use)
/// keeps the origin and sets bit `i` (an index of 64 or more starts a new origin instead).
///
/// Copies of a record share its lineage. So two records with the same origin were both made
/// from one slot array by in-place replacements only: they have the same slot names at the
/// same indices, and every slot outside `a.slots | b.slots` is the origin's slot in both.
/// ``isShared(with:)`` and ``candidates(with:)`` give the diff those facts; the diff still
/// compares the candidate slots, since an edit may have set a slot back to the value it had.
package struct FieldEdits: Sendable {
    /// The unique number of the slot array this lineage started from; never 0.
    package private(set) var origin: UInt64
    /// Bit `i` set: slot `i` may have been replaced since the origin.
    package private(set) var slots: UInt64

    /// A new lineage, with no edits.
    package init() {
        origin = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
        slots = 0
    }

    /// Records that slot `index` was replaced in place.
    @inline(__always)
    package mutating func mark(_ index: Int) {
        if index >= 0 && index < 64 {
            slots |= 1 &<< UInt64(index)
        } else {
            self = FieldEdits()
        }
    }

    /// Whether `other` belongs to the same lineage (same slot names at the same indices).
    @inlinable
    package func isShared(with other: FieldEdits) -> Bool { origin == other.origin }

    /// The slots that may differ between two records of one lineage (meaningful only when
    /// ``isShared(with:)``).
    @inlinable
    package func candidates(with other: FieldEdits) -> UInt64 { slots | other.slots }

    /// The source of origins: a relaxed counter (uniqueness is all that matters, not order).
    private static let counter = Atomic<UInt64>(0)
}
