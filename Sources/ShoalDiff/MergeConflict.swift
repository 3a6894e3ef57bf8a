// MergeConflict: one field both sides changed to different values, with the three records.

public import ShoalWire

/// A field that both sides of a three-way merge changed, to different values.
///
/// Like CloudKit's `serverRecordChanged`, it carries the three whole records — the common
/// ancestor, the local (client) version and the remote (server) version — so a resolver can
/// look at other fields to decide.
public struct MergeConflict: Sendable {
    /// The field both sides changed.
    public let fieldName: String
    /// The version both sides started from.
    public let ancestor: Record
    /// This side's version.
    public let local: Record
    /// The other side's version.
    public let remote: Record

    /// Creates a conflict.
    public init(fieldName: String, ancestor: Record, local: Record, remote: Record) {
        self.fieldName = fieldName
        self.ancestor = ancestor
        self.local = local
        self.remote = remote
    }

    /// The field's value in the ancestor (nil when absent or removed).
    public var ancestorValue: FieldValue? { ancestor[fieldName] }
    /// The field's value on this side (nil when removed).
    public var localValue: FieldValue? { local[fieldName] }
    /// The field's value on the other side (nil when removed).
    public var remoteValue: FieldValue? { remote[fieldName] }
}
