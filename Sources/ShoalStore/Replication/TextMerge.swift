// TextMerge: a ready-made conflict resolver that keeps both sides' edits of text fields.

public import ShoalWire
import ShoalDiff

/// A ready-made conflict resolver for text: the named string fields are merged three-way with
/// the version both sides started from, so edits of different lines (or of different words of
/// one line) both survive; where the two sides' edits overlap, the later writer's text wins.
///
/// ```swift
/// await store.setConflictResolver(TextMerge(fields: ["Note.body"]).resolve, for: notes)
/// ```
///
/// For each field named `TYPE.FIELD` (a record type and a field of it) that a conflict lists
/// (``RecordConflict/fieldNames``), when the ancestor and both sides hold strings: each side's
/// edits are found as hunks of lines against the ancestor, and of words within lines both sides
/// edited. Hunks of one side only are applied; hunks of both sides that overlap or touch take the
/// text of the side whose slot ranks higher by last-writer-wins (the later dot, HLC then node ID;
/// an unsaved edit above any saved one) — the side the merge itself gave the field to.
///
/// The result is deterministic: it depends on the three values and the two slots' dots, not on
/// which node computes it or which side is its own. It is a three-way merge, not a sequence CRDT:
/// two edits of the same words, and two insertions at one place, keep one side's.
///
/// Falls back to ``RecordConflict/merged``'s value (last-writer-wins) for a field when there is
/// no ancestor (``RecordConflict/ancestor`` is nil), when one of the three values is not a string,
/// or when the edits are too many to diff in bounded time (more than 1,024 lines removed plus
/// inserted on one side, or about 16 million steps of Myers' diff in all — a 1 MiB field with a
/// few edits takes a small fraction of that). Fields not named, and fields without a conflict,
/// keep the merge's values.
public struct TextMerge: Sendable, Hashable {
    /// The fields merged, each `TYPE.FIELD`: a record type, a dot, a field name. A name of
    /// another form matches no field.
    public let fields: Set<String>

    /// A resolver merging `fields`, each `TYPE.FIELD` (`"Note.body"`).
    public init(fields: Set<String>) {
        self.fields = fields
    }

    /// A resolver merging `fields`, each `TYPE.FIELD`:
    /// `node.setConflictResolver(for: zone, .mergingText(fields: ["Note.body"]))`.
    public static func mergingText(fields: Set<String>) -> TextMerge {
        TextMerge(fields: fields)
    }

    /// The record to keep: `conflict`'s merge with the named string fields merged three-way.
    /// Use it as a ``ConflictResolver`` (`TextMerge(fields:).resolve`), or call it from one that
    /// decides other fields too.
    public func resolve(_ conflict: RecordConflict) -> Record {
        var out = conflict.merged
        guard let ancestor = conflict.ancestor else { return out }
        let type = conflict.merged.recordType
        for name in conflict.fieldNames where fields.contains(type + "." + name) {
            guard case .string(let base)? = ancestor[name], case .string(let local)? = conflict.local[name],
                case .string(let remote)? = conflict.remote[name],
                let localSlot = conflict.local.slots(for: name).first,
                let remoteSlot = conflict.remote.slots(for: name).first
            else { continue }
            let localWins = LastWriterWins.ranks(localSlot, above: remoteSlot, zone: conflict.recordID.zone)
            if let text = TextMerger.merge(ancestor: base, local, remote, firstWins: localWins) {
                out[name] = .string(text)
            }
        }
        return out
    }

    /// Whether `name` is `TYPE.FIELD`: a valid record type and field name joined by a dot.
    package static func isFieldName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { Identifier.isValid(String($0)) }
    }
}
