// SparseRecord: a record version reduced to what a peer lacks — the field slots and vector
// entries its knowledge does not cover (Spec/replication.md §3.5.1).

/// A record version with only the parts a receiver does not already hold.
///
/// A sender that knows a *base* vector `B` — every write `(n, h)` with `h ≤ B[n]` is reflected
/// in the receiver's replica, and in its own — sends, instead of the whole version:
/// - every slot of each field with a slot whose stamp `B` does not cover,
/// - every version-vector entry,
/// - the record type, parent, heads and extensions (small, and not stamped),
/// - a ``digest`` of what it leaves out: the creation and the omitted slots' names and stamps.
///
/// The receiver rebuilds the version from its own copy of the record (ShoalDiff's
/// `Record(expanding:base:onto:)`) — the slots of the other fields that `B` covers, and the
/// creation — and uses it only if those digest to ``digest``: then it holds exactly the sender's
/// version. Otherwise it asks for the whole version. A version qualifies only when it is live
/// and `B` covers its creation (the receiver has seen this incarnation of the record).
public struct SparseRecord: Hashable, Sendable {
    /// The record.
    public var id: Record.ID
    /// The record type.
    public var recordType: String
    /// The parent reference.
    public var parent: Reference?
    /// The version's vector, whole.
    public var entries: VersionVector
    /// The ``OmittedDigest`` of the creation and the omitted slots, which a receiver's rebuilt
    /// version must match.
    public var digest: UInt64
    /// The heads; each head's node has an entry in ``entries``.
    public var heads: [Record.Head]
    /// The slots of the fields the base does not wholly cover, sorted by name (concurrent slots
    /// of one field adjacent, the later stamp first), each stamped within ``entries``.
    public var fields: [Record.Field]
    /// Unknown optional extensions.
    public var extensions: [Record.Extension]

    /// Creates a sparse record.
    public init(id: Record.ID, recordType: String, parent: Reference? = nil, entries: VersionVector, heads: [Record.Head],
                fields: [Record.Field], extensions: [Record.Extension] = [], digest: UInt64 = 0) {
        self.id = id
        self.recordType = recordType
        self.parent = parent
        self.entries = entries
        self.heads = heads
        self.fields = fields
        self.extensions = extensions
        self.digest = digest
    }

    /// The digest of what a sparse record leaves out (Spec/replication.md §3.5.1): 64-bit FNV-1a
    /// over the creation's node ID and timestamp, then, for each omitted slot in record order,
    /// its name's length and bytes and its stamp's node ID and timestamp. Node IDs are fed as
    /// their first and last 8 bytes read big-endian, each 64-bit word as 8 bytes little-endian.
    /// Values are not fed: a stamp names the one write that set the slot.
    public struct OmittedDigest: Sendable {
        private var h = FNV1a64()

        /// Starts a digest with the record's creation.
        public init(creation: Dot) { add(creation) }

        /// Feeds an omitted slot (stamped; an unsaved slot is never omitted).
        public mutating func add(_ slot: Record.Field) {
            h.add(UInt64(slot.name.utf8.count))
            h.add(bytes: slot.name.utf8)
            if let s = slot.stamp { add(s) }
        }

        private mutating func add(_ dot: Dot) {
            h.add(dot.node.high)
            h.add(dot.node.low)
            h.add(dot.hlc.rawValue)
        }

        /// The digest so far.
        public var value: UInt64 { h.value }
    }
}
