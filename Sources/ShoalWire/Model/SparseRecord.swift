// SparseRecord: a record version reduced to what a peer lacks — the field slots and vector
// entries its knowledge does not cover (Spec/replication.md §3.5.1).

/// A record version with only the parts a receiver does not already hold.
///
/// A sender that knows a *base* vector `B` — every write `(n, h)` with `h ≤ B[n]` is reflected
/// in the receiver's replica, and in its own — sends, instead of the whole version:
/// - the field slots whose stamps `B` does not cover,
/// - the version-vector entries above `B`, plus the entry of every head,
/// - the record type, parent, heads and extensions (small, and not stamped).
///
/// The receiver rebuilds an equivalent version from its own copy of the record (ShoalDiff's
/// `Record(expanding:base:onto:)`), then applies it like any other. A version qualifies only when
/// it is live and `B` covers its creation (the receiver has seen this incarnation of the record).
public struct SparseRecord: Hashable, Sendable {
    /// The record.
    public var id: Record.ID
    /// The record type.
    public var recordType: String
    /// The parent reference.
    public var parent: Reference?
    /// The vector entries sent: those above the base, and every head's.
    public var entries: VersionVector
    /// The heads; each head's node has an entry in ``entries``.
    public var heads: [Record.Head]
    /// The field slots the base does not cover, sorted by name, each stamped within ``entries``.
    public var fields: [Record.Field]
    /// Unknown optional extensions.
    public var extensions: [Record.Extension]

    /// Creates a sparse record.
    public init(id: Record.ID, recordType: String, parent: Reference? = nil, entries: VersionVector, heads: [Record.Head],
                fields: [Record.Field], extensions: [Record.Extension] = []) {
        self.id = id
        self.recordType = recordType
        self.parent = parent
        self.entries = entries
        self.heads = heads
        self.fields = fields
        self.extensions = extensions
    }
}
