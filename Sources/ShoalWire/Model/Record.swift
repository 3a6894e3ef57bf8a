// Record: a typed bag of fields with CloudKit's system fields and Shoal's replication metadata.

/// A record: a record type, an ID, named typed fields, and system fields.
///
/// Set and read fields by name with the subscript (`record["title"] = .string("Hello")`).
/// System fields — creation and modification time, the nodes that created and last modified the
/// record, its change tag and version vector — are maintained by the store and by replication;
/// they are read-only here. Every field also carries the ``Dot`` of the write that last set it,
/// which is how concurrent edits merge field by field.
public struct Record: Hashable, Sendable, CustomStringConvertible {
    /// A record's identity: its name and the zone it lives in.
    public struct ID: Hashable, Comparable, Sendable, CustomStringConvertible {
        /// The record's name, unique within its zone: 1–255 UTF-8 bytes.
        public var name: String
        /// The zone the record lives in.
        public var zone: RecordZone.ID

        /// Creates a record ID.
        public init(name: String, zone: RecordZone.ID) {
            self.name = name
            self.zone = zone
        }

        /// Orders by zone, then by the UTF-8 bytes of the name (the order digests use).
        public static func < (a: ID, b: ID) -> Bool {
            if a.zone != b.zone { return a.zone < b.zone }
            return UTF8Order.compare(a.name, b.name) < 0
        }

        /// Equal when the zones are equal and the names have the same UTF-8 bytes.
        public static func == (a: ID, b: ID) -> Bool {
            a.zone == b.zone && UTF8Order.equal(a.name, b.name)
        }

        /// Hashes the zone and the name's UTF-8 bytes, consistently with `==`.
        public func hash(into h: inout Hasher) {
            h.combine(zone)
            UTF8Order.hash(name, into: &h)
        }

        public var description: String { "\(zone)/\(name)" }
    }

    /// One field slot: a name, its value (nil marks a removed field), and the write that set it.
    public struct Field: Hashable, Sendable {
        /// The field's name.
        public let name: String
        /// The value, or nil when the field was removed (the marker keeps the removal's dot).
        public var value: FieldValue? {
            @inlinable get { hasValue ? valueStorage : nil }
            @inlinable set {
                if let newValue {
                    valueStorage = newValue
                    hasValue = true
                } else if hasValue {
                    valueStorage = Field.noValue
                    hasValue = false
                }
            }
            @inlinable _modify {
                // Moved out, so that a value edited in place stays uniquely referenced.
                var v: FieldValue? = hasValue ? valueStorage : nil
                valueStorage = Field.noValue
                defer {
                    hasValue = v != nil
                    valueStorage = v ?? Field.noValue
                }
                yield &v
            }
        }
        /// The value when ``hasValue``, ``noValue`` otherwise. Stored unwrapped for the reason
        /// ``Record/parentStorage`` is: appending a decoded slot copied it, then destroyed it.
        /// (Declared before ``stamp``: ShoalDiff's slot comparison reads this layout.)
        @usableFromInline package internal(set) var valueStorage: FieldValue
        /// Whether the slot holds a value (false: a removed-field marker).
        @usableFromInline package internal(set) var hasValue: Bool
        /// The write that last set or removed the field; nil for an edit not yet saved.
        public var stamp: Dot?

        /// What ``valueStorage`` holds for a removed-field marker.
        @usableFromInline static var noValue: FieldValue {
            @inline(__always) get { .bool(false) }
        }

        /// Creates a field slot.
        @inlinable public init(name: String, value: FieldValue?, stamp: Dot? = nil) {
            self.name = name
            self.valueStorage = value ?? Field.noValue
            self.hasValue = value != nil
            self.stamp = stamp
        }
    }

    /// Whether the latest of a node's writes that the record has seen saved or deleted it.
    public struct Head: Hashable, Sendable {
        /// The node whose newest write (at `versionVector[node]`) is a head.
        public var node: NodeID
        /// Whether that write deleted the record.
        public var isDeletion: Bool

        /// Creates a head.
        public init(node: NodeID, isDeletion: Bool) {
            self.node = node
            self.isDeletion = isDeletion
        }
    }

    /// An extension section this version of Shoal does not understand, kept so that re-encoding
    /// reproduces the original bytes.
    public struct Extension: Hashable, Sendable {
        /// The tag; odd tags are optional to understand.
        public var tag: UInt64
        /// The section's bytes.
        public var bytes: [UInt8]
        /// Creates an extension.
        public init(tag: UInt64, bytes: [UInt8]) {
            self.tag = tag
            self.bytes = bytes
        }
    }

    /// The record's type, e.g. `Note`: a letter, then letters, digits or `_`; at most 255 bytes.
    public var recordType: String
    /// The record's identity.
    public let id: ID
    /// The record's parent, for hierarchical sharing (same zone, action `.none`).
    public var parent: Reference? {
        @inlinable get { hasParent ? parentStorage : nil }
        @inlinable set {
            if let newValue {
                parentStorage = newValue
                hasParent = true
            } else if hasParent {
                parentStorage = Record.noParent
                hasParent = false
            }
        }
        @inlinable _modify {
            var p: Reference? = hasParent ? parentStorage : nil
            parentStorage = Record.noParent
            defer {
                hasParent = p != nil
                parentStorage = p ?? Record.noParent
            }
            yield &p
        }
    }
    /// The parent when ``hasParent``, ``noParent`` otherwise. Stored unwrapped: an optional
    /// struct of strings among a record's stored properties makes the optimizer copy a record
    /// it could move (a decode built each record, copied it out and destroyed the original).
    @usableFromInline var parentStorage: Reference
    /// Whether the record has a parent.
    @usableFromInline var hasParent: Bool
    /// What ``parentStorage`` holds for a record without a parent.
    @usableFromInline static var noParent: Reference {
        @inline(__always) get { Reference(recordID: ID(name: "", zone: RecordZone.ID(name: "", owner: ""))) }
    }
    /// The write that created the record; nil until saved.
    public package(set) var creation: Dot?
    /// Every write this version of the record has seen, per node.
    public package(set) var versionVector: VersionVector
    /// The concurrent latest writes, sorted by node; empty until saved.
    public package(set) var heads: [Head]
    /// All field slots, sorted by name, including removed-field markers.
    ///
    /// A name usually has one slot. A merge of concurrent versions keeps, side by side, every
    /// slot of a name neither side has seen superseded (Spec/diff-and-merge.md §5): such
    /// *concurrent slots* are adjacent, stamped, the later stamp first, and the first is the
    /// field's value (``slots(for:)``). A save keeps only that first one.
    ///
    /// Changing the array through this property starts a new ``FieldEdits`` lineage; the
    /// subscript's in-place edits only mark their slot.
    public package(set) var fields: [Field] {
        @inlinable _read { yield slots }
        _modify {
            edits = FieldEdits()
            yield &slots
        }
    }
    /// Unknown optional extensions, preserved.
    public package(set) var extensions: [Extension]
    /// The field slots (``fields``).
    @usableFromInline var slots: [Field]
    /// Which slots were edited in place since ``slots`` was last built or restructured.
    package private(set) var edits: FieldEdits

    /// Creates a new, unsaved record with no fields.
    public init(recordType: String, id: ID) {
        self.recordType = recordType
        self.id = id
        self.parentStorage = Record.noParent
        self.hasParent = false
        self.creation = nil
        self.versionVector = VersionVector()
        self.heads = []
        self.slots = []
        self.extensions = []
        self.edits = FieldEdits()
    }

    /// Creates a record from all of its parts, system fields included, as a decoder or a replica
    /// does. `fields` must be sorted by name bytes — concurrent slots of one name adjacent, stamped,
    /// the later stamp first — and `heads` by node;
    /// ``encoded()`` writes what it is given, so a record built from inconsistent parts fails
    /// ``validate(limits:)`` (Spec/wire-format.md §3.5).
    public init(
        recordType: String, id: ID, parent: Reference?, creation: Dot?, versionVector: VersionVector,
        heads: [Head], fields: [Field], extensions: [Extension]
    ) {
        self.recordType = recordType
        self.id = id
        self.parentStorage = parent ?? Record.noParent
        self.hasParent = parent != nil
        self.creation = creation
        self.versionVector = versionVector
        self.heads = heads
        self.slots = fields
        self.extensions = extensions
        self.edits = FieldEdits()
    }

    // MARK: Fields

    /// The position of the first slot named `name`, or where it would be inserted.
    @inlinable package func slot(of name: String) -> (index: Int, found: Bool) {
        var lo = 0, hi = slots.count
        while lo < hi {
            let mid = (lo &+ hi) >> 1
            if UTF8Order.compare(slots[mid].name, name) < 0 { lo = mid &+ 1 } else { hi = mid }
        }
        return (lo, lo < slots.count && UTF8Order.equal(slots[lo].name, name))
    }

    /// The end of the run of slots named like the slot at `index` (its concurrent slots).
    @inlinable package func slotRunEnd(from index: Int) -> Int {
        var end = index &+ 1
        while end < slots.count && UTF8Order.equal(slots[end].name, slots[index].name) { end &+= 1 }
        return end
    }

    /// The slots of the field `key`: none, one, or — after a merge of concurrent writes that
    /// neither side had seen — several, the later stamp first. The first is the field's value.
    public func slots(for key: String) -> ArraySlice<Field> {
        let s = slot(of: key)
        return s.found ? slots[s.index..<slotRunEnd(from: s.index)] : slots[s.index..<s.index]
    }

    /// The value of the field `key`, or nil if it has none. Setting nil removes the field.
    ///
    /// Reading gives the first of the field's slots (the latest of concurrent ones); setting
    /// replaces all of them.
    public subscript(key: String) -> FieldValue? {
        get {
            let s = slot(of: key)
            return s.found ? slots[s.index].value : nil
        }
        set {
            let s = slot(of: key)
            if s.found {
                let end = slotRunEnd(from: s.index)
                if end &- s.index > 1 {
                    let name = slots[s.index].name
                    if newValue == nil && versionVector.isEmpty {
                        fields.removeSubrange(s.index..<end)
                    } else {
                        fields.replaceSubrange(s.index..<end, with: CollectionOfOne(Field(name: name, value: newValue)))
                    }
                    return
                }
            }
            if let newValue {
                if s.found {
                    replaceSlot(at: s.index, with: Field(name: slots[s.index].name, value: newValue))
                } else {
                    fields.insert(Field(name: key, value: newValue), at: s.index)
                }
            } else if s.found {
                if versionVector.isEmpty {
                    fields.remove(at: s.index)
                } else if slots[s.index].value != nil || slots[s.index].stamp == nil {
                    replaceSlot(at: s.index, with: Field(name: slots[s.index].name, value: nil))
                }
            }
        }
    }

    /// The record with only the first slot of each field: what a save keeps of concurrent slots.
    package var withoutConcurrentSlots: Record {
        // Concurrent slots are stamped, so a record without a vector (an app's new one) has none.
        guard !versionVector.isEmpty else { return self }
        var hasRuns = false
        for i in slots.indices.dropFirst() where UTF8Order.equal(slots[i - 1].name, slots[i].name) {
            hasRuns = true
            break
        }
        guard hasRuns else { return self }
        var r = self
        r.fields = slots.enumerated().filter { i, f in i == 0 || !UTF8Order.equal(slots[i - 1].name, f.name) }.map(
            \.element)
        return r
    }

    /// Replaces the slot at `index` (an existing slot; `slot.name` must be its name) and marks
    /// it edited, keeping the record's ``FieldEdits`` lineage.
    package mutating func replaceSlot(at index: Int, with slot: consuming Field) {
        assert(UTF8Order.equal(slots[index].name, slot.name), "replaceSlot(at:with:) may not rename a slot")
        edits.mark(index)
        slots[index] = slot
    }

    /// Equal when every part is: type, ID, parent, creation, vector, heads, fields, extensions.
    /// (``edits`` describes how the value was built, not the value.)
    public static func == (a: Record, b: Record) -> Bool {
        a.id == b.id && a.recordType == b.recordType && a.creation == b.creation && a.versionVector == b.versionVector
            && a.heads == b.heads && a.parent == b.parent && a.slots == b.slots && a.extensions == b.extensions
    }

    /// Hashes what ``==`` compares.
    public func hash(into h: inout Hasher) {
        h.combine(recordType)
        h.combine(id)
        h.combine(parent)
        h.combine(creation)
        h.combine(versionVector)
        h.combine(heads)
        h.combine(slots)
        h.combine(extensions)
    }

    /// The names of the fields that have values, in sorted order.
    public var allKeys: [String] {
        slots.indices.compactMap { i in
            i > 0 && UTF8Order.equal(slots[i - 1].name, slots[i].name) || slots[i].value == nil ? nil : slots[i].name
        }
    }

    /// Names of fields set or removed since the record was last saved or fetched.
    public var changedKeys: [String] { fields.compactMap { $0.stamp == nil ? $0.name : nil } }

    // MARK: System fields

    /// The node that created the record; nil until saved.
    public var createdBy: NodeID? { creation?.node }
    /// When the record was created; nil until saved.
    public var creationDate: Timestamp? { creation?.hlc.timestamp }
    /// The node whose write is the newest this version has seen; nil until saved.
    public var modifiedBy: NodeID? { versionVector.latest?.node }
    /// When the newest write this version has seen was made; nil until saved.
    public var modificationDate: Timestamp? { versionVector.latest?.hlc.timestamp }

    /// A short string naming this version; changes whenever the record does. Nil until saved.
    ///
    /// Save policies compare it: a save with ``Record/changeTag`` different from the stored
    /// record's fails with `serverRecordChanged`.
    public var changeTag: String? {
        if versionVector.isEmpty { return nil }
        var h = FNV1a64()
        for e in versionVector.entries {
            h.add(e.node.high); h.add(e.node.low); h.add(e.hlc.rawValue)
        }
        return Hex.string(h.value)
    }

    /// Whether every latest write deleted the record (a tombstone), under the default rule that a
    /// save concurrent with a delete keeps the record.
    public var isDeleted: Bool { !heads.isEmpty && heads.allSatisfy(\.isDeletion) }

    public var description: String {
        "\(recordType) \(id) {" + allKeys.compactMap { k in self[k].map { "\(k): \($0)" } }.joined(separator: ", ")
            + "}"
    }
}

/// Byte-order comparison of strings' UTF-8 (the canonical order of names in Shoal).
///
/// Shoal compares names and string values by their UTF-8 bytes, never by Swift's `String ==`,
/// which treats canonically equivalent text (`"é"` and `"e\u{301}"`) as equal although the two
/// encode differently (Spec/wire-format.md §3.4).
@usableFromInline package enum UTF8Order {
    /// Whether two strings have the same UTF-8 bytes.
    @inlinable package static func equal(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && compare(a, b) == 0
    }

    /// Feeds the UTF-8 bytes of `s` (and their count) to `h`, consistently with ``equal(_:_:)``.
    @inlinable package static func hash(_ s: String, into h: inout Hasher) {
        var s = s
        s.withUTF8 { h.combine(bytes: UnsafeRawBufferPointer($0)) }
        h.combine(s.utf8.count)
    }

    @inlinable package static func compare(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in compare(UnsafeRawBufferPointer(pa), UnsafeRawBufferPointer(pb)) }
        }
    }

    @inlinable package static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = min(a.count, b.count)
        if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
            let c = memcmpBytes(pa, pb, n)
            if c != 0 { return c }
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    @inlinable package static func memcmpBytes(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ n: Int) -> Int {
        var i = 0
        while i &+ 8 <= n {
            let x = UInt64(bigEndian: a.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let y = UInt64(bigEndian: b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            if x != y { return x < y ? -1 : 1 }
            i &+= 8
        }
        while i < n {
            let x = a.load(fromByteOffset: i, as: UInt8.self), y = b.load(fromByteOffset: i, as: UInt8.self)
            if x != y { return x < y ? -1 : 1 }
            i &+= 1
        }
        return 0
    }
}

/// 64-bit FNV-1a, for short non-cryptographic tags.
package struct FNV1a64 {
    package private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325
    package init() {}
    package mutating func add(_ word: UInt64) {
        var w = word
        for _ in 0..<8 {
            value = (value ^ (w & 0xFF)) &* 0x100_0000_01b3
            w >>= 8
        }
    }
    package mutating func add(bytes: some Sequence<UInt8>) {
        for b in bytes { value = (value ^ UInt64(b)) &* 0x100_0000_01b3 }
    }
}
