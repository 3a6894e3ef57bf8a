// SparseRecord: a record version reduced to what a peer lacks — the field slots and vector
// entries its knowledge does not cover (Spec/replication.md §3.5.1).

/// A record version with only the parts a receiver does not already hold.
///
/// A sender that knows a *base* vector `B` — every write `(n, h)` with `h ≤ B[n]` is reflected
/// in the receiver's replica, and in its own — sends, instead of the whole version:
/// - the field slots whose stamps `B` does not cover,
/// - every version-vector entry, and for each entry above `B` from whose node the version holds
///   an omitted slot or its creation, a *floor*: the latest such stamp,
/// - the record type, parent, heads and extensions (small, and not stamped).
///
/// The receiver rebuilds an equivalent version from its own copy of the record (ShoalDiff's
/// `Record(expanding:base:onto:)`), then applies it like any other; the entries and floors let it
/// check that its copy holds every write the omitted parts depend on. A version qualifies only
/// when it is live and `B` covers its creation (the receiver has seen this incarnation of the record).
public struct SparseRecord: Hashable, Sendable {
    /// The record.
    public var id: Record.ID
    /// The record type.
    public var recordType: String
    /// The parent reference.
    public var parent: Reference?
    /// The version's vector, whole.
    public var entries: VersionVector
    /// Per node whose entry is above the base: the latest stamp of that node at or below the
    /// base among the omitted slots and the creation (absent when there is none). A receiver
    /// whose copy's entry is lower lacks a write the omitted parts depend on.
    public var floors: VersionVector
    /// The heads; each head's node has an entry in ``entries``.
    public var heads: [Record.Head]
    /// The field slots the base does not cover, sorted by name, each stamped within ``entries``.
    public var fields: [Record.Field]
    /// Unknown optional extensions.
    public var extensions: [Record.Extension]

    /// Creates a sparse record.
    public init(id: Record.ID, recordType: String, parent: Reference? = nil, entries: VersionVector, heads: [Record.Head],
                fields: [Record.Field], extensions: [Record.Extension] = [], floors: VersionVector = VersionVector()) {
        self.id = id
        self.recordType = recordType
        self.parent = parent
        self.entries = entries
        self.heads = heads
        self.fields = fields
        self.extensions = extensions
        self.floors = floors
    }
}
