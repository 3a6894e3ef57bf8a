// MergePolicy: how a three-way merge resolves fields changed on both sides.

public import ShoalWire

/// How ``merge(ancestor:local:remote:policy:)`` resolves a field both sides changed to
/// different values.
///
/// ``lastWriterWins`` (the default) keeps the slot with the later stamp, so every node computes
/// the same winner without talking. ``resolve(_:)`` hands each conflict to the caller.
public struct MergePolicy: Sendable {
    /// What a resolver decides for one conflicting field.
    public enum Resolution: Sendable, Hashable {
        /// Keep the local slot (value and stamp).
        case local
        /// Keep the remote slot (value and stamp).
        case remote
        /// Use this value (nil removes the field) as a new, unsaved edit: its stamp is nil, so it
        /// appears in ``ShoalWire/Record/changedKeys`` and is stamped when the record is saved.
        case value(FieldValue?)
    }

    enum Rule: Sendable {
        case lastWriterWins
        case resolver(@Sendable (MergeConflict) -> Resolution)
    }

    let rule: Rule

    /// Deterministic last-writer-wins by the fields' stamps (``ShoalWire/Dot`` order: HLC, then
    /// node ID); see ``LastWriterWins``.
    public static let lastWriterWins = MergePolicy(rule: .lastWriterWins)

    /// Calls `resolver` for each conflicting field, in field-name order.
    public static func resolve(_ resolver: @escaping @Sendable (MergeConflict) -> Resolution) -> MergePolicy {
        MergePolicy(rule: .resolver(resolver))
    }
}
