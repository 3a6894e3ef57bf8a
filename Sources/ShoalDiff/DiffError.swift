// DiffError: the typed error of applying a record delta that does not fit, or merging unrelated records.

/// The error ``apply(_:to:)`` and the merges return when their inputs do not fit together.
///
/// Applying never traps: a delta computed from another version, a splice past the end of a list,
/// a patch that leaves a string invalid — each yields a `DiffError` naming what was wrong
/// (``code``), the field concerned (``field``), the position inside that field's value where it
/// applies (``offset``), and a ``detail`` that says what was expected and how to fix it. ``Code``
/// is an extensible struct, so new codes never break existing `switch` statements.
public struct DiffError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of misfit this is. Compare with the static members, e.g. `.baseMismatch`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The stable, snake_case name of the code.
        public let name: String

        /// Creates a code with a stable name.
        package init(_ name: String) { self.name = name }

        /// The delta was computed from another version: its base tag is not the record's
        /// ``ShoalWire/Record/versionFingerprint``. Fetch the version it was computed from, or
        /// ask the sender for the whole record.
        public static let baseMismatch = Code("base_mismatch")
        /// A splice or patch reaches past the end of the value it edits, or its edits overlap,
        /// touch, are out of order or empty.
        public static let outOfRange = Code("out_of_range")
        /// A splice's elements are not of the list's element kind.
        public static let kindMismatch = Code("kind_mismatch")
        /// A byte patch targets a value that is not a string or bytes, or a splice targets a
        /// value that is not a list.
        public static let notPatchable = Code("not_patchable")
        /// A splice, patch or drop names a field the record has no value or slot for.
        public static let missingField = Code("missing_field")
        /// A byte patch leaves a string value that is not valid UTF-8.
        public static let invalidUTF8 = Code("invalid_utf8")
        /// The delta's operations are not strictly increasing by field name (one per field).
        public static let unsortedOperations = Code("unsorted_operations")
        /// Records with different IDs were given to a merge.
        public static let recordMismatch = Code("record_mismatch")

        /// The code's stable name.
        public var description: String { name }
    }

    /// What kind of misfit this is.
    public let code: Code
    /// The field the failing operation edits; nil for whole-record problems.
    public let field: String?
    /// Position inside the field's value (element index for lists, byte offset for strings and
    /// bytes) where the problem lies; nil when no position applies.
    public let offset: Int?
    /// What was expected and how to fix it.
    public let detail: String

    /// Creates an error; the diff core uses the static factories below.
    package init(_ code: Code, field: String? = nil, offset: Int? = nil, _ detail: String) {
        self.code = code
        self.field = field
        self.offset = offset
        self.detail = detail
    }

    /// The code, the field and offset when known, and the detail, on one line.
    public var description: String {
        var s = code.name
        if let field { s += " in field \(field)" }
        if let offset { s += " at \(offset)" }
        return s + ": " + detail
    }
}

extension DiffError {
    static func baseMismatch(expected: UInt32, found: UInt32) -> DiffError {
        DiffError(
            .baseMismatch,
            "the delta was computed from the version with fingerprint \(hex(expected)) but the record's is \(hex(found)); apply it to that version, or fetch the whole record"
        )
    }

    static func outOfRange(_ field: String, offset: Int, _ what: String) -> DiffError {
        DiffError(
            .outOfRange, field: field, offset: offset,
            what + "; the delta was computed from another value — refetch the record")
    }

    static func unsorted(_ name: String, after previous: String) -> DiffError {
        DiffError(
            .unsortedOperations, field: name,
            "operations must be sorted by field name, one per field; \(name) follows \(previous) — build deltas with diff(_:_:) or sort them"
        )
    }

    static func hex(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - s.count)) + s
    }
}
