// RecordDelta: what changed between two versions of a record — field operations and system fields.

/// The difference between two versions of one record, as the diff core computes it and
/// replication sends it.
///
/// Apply a delta only to the version it was computed from: ``baseTag`` fingerprints that
/// version's vector, and every operation states what it expects to find. Operations are sorted by
/// field name, one per field.
public struct RecordDelta: Hashable, Sendable {
    /// The target's system fields, present when any of them differs from the base's.
    public var system: SystemFields? {
        @inlinable get { systemBox?.fields }
        @inlinable set { systemBox = newValue.map(SystemFieldsBox.init) }
    }
    /// A fingerprint of the base version's vector (see ``Record/versionFingerprint``).
    public var baseTag: UInt32
    /// Field operations, strictly increasing by field name.
    public var operations: [Operation] = []
    /// ``system``, kept behind a reference so that a delta is three words: small enough to be
    /// returned in registers, where the ~150-byte value with the fields inline was copied
    /// through memory by every function returning one (most deltas carry none).
    @usableFromInline var systemBox: SystemFieldsBox? = nil

    /// Creates an empty delta: no system fields, no operations.
    @inlinable
    public init(baseTag: UInt32) {
        self.baseTag = baseTag
    }

    /// Creates a delta.
    @inlinable
    public init(baseTag: UInt32, system: SystemFields? = nil, operations: [Operation] = []) {
        self.baseTag = baseTag
        self.operations = operations
        self.system = system
    }

    /// Holds a delta's system fields (compared and hashed by value).
    @usableFromInline final class SystemFieldsBox: Hashable, Sendable {
        @usableFromInline let fields: SystemFields
        @usableFromInline init(_ fields: SystemFields) { self.fields = fields }
        @usableFromInline static func == (a: SystemFieldsBox, b: SystemFieldsBox) -> Bool {
            a === b || a.fields == b.fields
        }
        @usableFromInline func hash(into h: inout Hasher) { h.combine(fields) }
    }

    /// Whether applying the delta changes nothing.
    public var isEmpty: Bool { system == nil && operations.isEmpty }

    /// A record's system fields, carried whole when any of them changes.
    public struct SystemFields: Hashable, Sendable {
        /// The record type.
        public var recordType: String
        /// The parent reference.
        public var parent: Reference?
        /// The creating write.
        public var creation: Dot?
        /// The version vector.
        public var versionVector: VersionVector
        /// The heads.
        public var heads: [Record.Head]
        /// Unknown optional extensions.
        public var extensions: [Record.Extension]

        /// Creates system fields.
        public init(
            recordType: String, parent: Reference?, creation: Dot?, versionVector: VersionVector,
            heads: [Record.Head], extensions: [Record.Extension]
        ) {
            self.recordType = recordType
            self.parent = parent
            self.creation = creation
            self.versionVector = versionVector
            self.heads = heads
            self.extensions = extensions
        }

        /// The system fields of `record`.
        public init(of record: Record) {
            self.init(
                recordType: record.recordType, parent: record.parent, creation: record.creation,
                versionVector: record.versionVector, heads: record.heads, extensions: record.extensions)
        }
    }

    /// One edit of one field.
    public enum Operation: Hashable, Sendable {
        /// Replace (or insert) the field's slot: a value, or a removed-field marker when the
        /// value is nil, with the stamp of the write.
        case set(Record.Field)
        /// Remove the slot entirely (only unsaved edits and purges do this).
        case drop(name: String)
        /// Edit a list value element-wise; the result gets `stamp`.
        case splice(name: String, stamp: Dot?, edits: [ListSplice])
        /// Edit a string or bytes value byte-range-wise; the result gets `stamp`.
        case patch(name: String, stamp: Dot?, edits: [BytePatch])

        /// The field the operation edits.
        public var fieldName: String {
            switch self {
            case .set(let f): return f.name
            case .drop(let n), .splice(let n, _, _), .patch(let n, _, _): return n
            }
        }
    }

    /// Replace `deleteCount` elements at `offset` (of the base list) with `insert`.
    public struct ListSplice: Hashable, Sendable {
        /// Position in the base list.
        public var offset: Int
        /// Elements of the base list removed from `offset`.
        public var deleteCount: Int
        /// Elements inserted there, of the list's element kind.
        public var insert: ListValue

        /// Creates a splice.
        public init(offset: Int, deleteCount: Int, insert: ListValue) {
            self.offset = offset
            self.deleteCount = deleteCount
            self.insert = insert
        }
    }

    /// Replace `deleteCount` bytes at `offset` (of the base value's bytes) with `insert`.
    public struct BytePatch: Hashable, Sendable {
        /// Byte position in the base value.
        public var offset: Int
        /// Bytes of the base value removed from `offset`.
        public var deleteCount: Int
        /// Bytes inserted there.
        public var insert: [UInt8]

        /// Creates a patch.
        public init(offset: Int, deleteCount: Int, insert: [UInt8]) {
            self.offset = offset
            self.deleteCount = deleteCount
            self.insert = insert
        }
    }
}

extension Record {
    /// A 32-bit fingerprint of the version vector, which deltas use to name their base version.
    ///
    /// Spec/wire-format.md §7.1: with `n` entries, `h = n`; then for each entry in vector order
    /// `h = rotl(h, 23) ^ node.high·K1 ^ node.low·K2 ^ hlc·K3` (wrapping 64-bit products); the
    /// fingerprint is the low 32 bits of MurmurHash3's `fmix64(h)`. An entry's three products do
    /// not depend on `h`, so they overlap: a few cycles per entry, not a chain of 24 dependent
    /// multiplies as byte-wise FNV-1a was.
    public var versionFingerprint: UInt32 { versionVector.fingerprint }
}

extension VersionVector {
    /// The vector's fingerprint (``Record/versionFingerprint``). Reading it through the vector
    /// lets a mutating method of `Record` hash without copying the whole record first.
    @inlinable package var fingerprint: UInt32 {
        entries.withUnsafeBufferPointer { entries in
            var h = UInt64(truncatingIfNeeded: entries.count)
            for e in entries {
                let mixed =
                    (e.node.high &* 0x9E37_79B9_7F4A_7C15) ^ (e.node.low &* 0xC2B2_AE3D_27D4_EB4F)
                    ^ (e.hlc.rawValue &* 0x1656_67B1_9E37_79F9)
                h = ((h << 23) | (h >> 41)) ^ mixed
            }
            h ^= h >> 33
            h &*= 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 33
            h &*= 0xC4CE_B9FE_1A85_EC53
            h ^= h >> 33
            return UInt32(truncatingIfNeeded: h)
        }
    }
}
