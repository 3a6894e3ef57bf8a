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
    /// The fields that travel as an edit of a slot the receiver holds rather than whole, sorted
    /// by name; none of them is also in ``fields``, and each is the field's only slot.
    public var deltas: [FieldDelta]

    /// Creates a sparse record.
    public init(
        id: Record.ID, recordType: String, parent: Reference? = nil, entries: VersionVector, heads: [Record.Head],
        fields: [Record.Field], extensions: [Record.Extension] = [], digest: UInt64 = 0, deltas: [FieldDelta] = []
    ) {
        self.id = id
        self.recordType = recordType
        self.parent = parent
        self.entries = entries
        self.heads = heads
        self.fields = fields
        self.extensions = extensions
        self.digest = digest
        self.deltas = deltas
    }

    /// A field slot sent as an edit of the slot it replaced (Spec/replication.md §3.5.1, "Delta
    /// slots"): the receiver holds that slot — the base covers its stamp — and applies the edit
    /// only to a value whose ``baseDigest`` matches, so the result is the sender's value byte for
    /// byte.
    public struct FieldDelta: Hashable, Sendable {
        /// The field.
        public var name: String
        /// The stamp of the slot this edit makes (within the record's entries).
        public var stamp: Dot
        /// The stamp of the slot the edit applies to: the one the sender's write replaced.
        public var baseStamp: Dot
        /// ``digest(of:zone:)`` of the value the edit applies to.
        public var baseDigest: UInt32
        /// The edit.
        public var edit: Edit

        /// What a delta slot does to its base value.
        public enum Edit: Hashable, Sendable {
            /// Byte edits of a string's UTF-8 bytes or of a bytes value.
            case patch([RecordDelta.BytePatch])
            /// Element edits of a list of `kind`.
            case splice(kind: FieldValue.Kind, [RecordDelta.ListSplice])

            /// Whether this is a byte patch.
            public var isPatch: Bool {
                if case .patch = self { return true }
                return false
            }
        }

        /// Creates a delta slot.
        public init(name: String, stamp: Dot, baseStamp: Dot, baseDigest: UInt32, edit: Edit) {
            self.name = name
            self.stamp = stamp
            self.baseStamp = baseStamp
            self.baseDigest = baseDigest
            self.edit = edit
        }

        /// The digest naming a delta's base value: CRC-32C (wire-format §13) of the value as a
        /// standalone value — its type tag, then its payload (wire-format §5) in `zone`.
        public static func digest(of value: FieldValue, zone: RecordZone.ID) -> UInt32 {
            switch value {
            case .string(var s):
                let head = WireWriter.encode(size: 1 &+ WireSize.varint(UInt64(s.utf8.count))) { w in
                    w.writeByte(value.tag)
                    w.writeVarint(UInt64(s.utf8.count))
                }
                return s.withUTF8 { CRC32C.checksum(UnsafeRawBufferPointer($0), continuing: CRC32C.checksum(head)) }
            case .bytes(let b):
                let head = WireWriter.encode(size: 1 &+ WireSize.varint(UInt64(b.count))) { w in
                    w.writeByte(value.tag)
                    w.writeVarint(UInt64(b.count))
                }
                return b.withUnsafeBytes { CRC32C.checksum($0, continuing: CRC32C.checksum(head)) }
            default:
                return CRC32C.checksum(
                    WireWriter.encode(size: 1 &+ value.payloadSize(zone: zone)) { w in
                        w.writeByte(value.tag)
                        value.encodePayload(into: &w, zone: zone)
                    })
            }
        }
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
