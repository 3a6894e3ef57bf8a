// RecordDelta: what changed between two versions of a record — field operations and system fields.

/// The difference between two versions of one record, as the diff core computes it and
/// replication sends it.
///
/// Apply a delta only to the version it was computed from: ``baseTag`` fingerprints that
/// version's vector, and every operation states what it expects to find. Operations are sorted by
/// field name, one per field.
public struct RecordDelta: Hashable, Sendable {
    // Stored in this order, with initial values, so that `init(baseTag:)` compiles to a few
    // stores: with `system` after `baseTag`, or assigned in the initialiser, the optimiser builds
    // the ~150-byte value on the stack and copies it out with memcpy (Swift 6.3).

    /// The target's system fields, present when any of them differs from the base's.
    public var system: SystemFields? = nil
    /// A fingerprint of the base version's vector (see ``Record/versionFingerprint``).
    public var baseTag: UInt32
    /// Field operations, strictly increasing by field name.
    public var operations: [Operation] = []

    /// Creates an empty delta: no system fields, no operations.
    @inlinable
    public init(baseTag: UInt32) {
        self.baseTag = baseTag
    }

    /// Creates a delta.
    @inlinable
    public init(baseTag: UInt32, system: SystemFields? = nil, operations: [Operation] = []) {
        self.baseTag = baseTag
        self.system = system
        self.operations = operations
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
        public init(recordType: String, parent: Reference?, creation: Dot?, versionVector: VersionVector,
                    heads: [Record.Head], extensions: [Record.Extension]) {
            self.recordType = recordType
            self.parent = parent
            self.creation = creation
            self.versionVector = versionVector
            self.heads = heads
            self.extensions = extensions
        }

        /// The system fields of `record`.
        public init(of record: Record) {
            self.init(recordType: record.recordType, parent: record.parent, creation: record.creation,
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
    public var versionFingerprint: UInt32 {
        var h: UInt32 = 0x811C_9DC5
        @inline(__always) func mix(_ w: UInt64) {
            var w = w
            for _ in 0..<8 {
                h = (h ^ UInt32(truncatingIfNeeded: w & 0xFF)) &* 0x0100_0193
                w >>= 8
            }
        }
        for e in versionVector.entries {
            mix(e.node.high); mix(e.node.low); mix(e.hlc.rawValue)
        }
        return h
    }
}
