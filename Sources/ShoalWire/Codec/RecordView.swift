// RecordView: a record read in place — validated once, fields found by binary search on their
// sorted names, values read from the encoded bytes without decoding the record.

/// A validated, zero-copy view of a record's canonical encoding.
///
/// `withView(of:limits:_:)` checks the bytes exactly as `Record(decoding:)` does
/// — the same errors at the same offsets — but builds no `Record`: it notes where each field slot
/// starts (on the stack) and hands the view to a closure. Inside it, ``field(named:)`` finds a
/// field by binary search over the sorted names and its ``FieldView`` reads the value from the
/// bytes, neither allocating. A tool that needs one field of a million records pays for one
/// validation pass per record instead of a whole decode (Benchmarks/README.md, `view-one-field`).
///
/// The view borrows the bytes and its slot table: it is valid only inside the closure.
public struct RecordView {
    /// The record's encoded bytes.
    public let bytes: UnsafeRawBufferPointer
    /// Where each field slot starts in ``bytes``, in wire order, then where the fields end.
    let slots: UnsafeBufferPointer<Int>
    /// Where the zone name and owner are in ``bytes`` (a reference value may need the zone).
    let zoneName: Range<Int>, zoneOwner: Range<Int>
    /// Where the record type is in ``bytes``.
    let typeRange: Range<Int>
    /// Where the version vector the stamps are written against lies in ``bytes``.
    let vector: VectorInPlace

    /// Field slots in the record (a field with concurrent slots counts once per slot).
    public var slotCount: Int { slots.count &- 1 }

    /// The record type's UTF-8 bytes.
    public var recordTypeBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[typeRange]) }

    /// The record type.
    public var recordType: String { String(decoding: recordTypeBytes, as: UTF8.self) }

    /// The record's zone (built from the bytes: allocates for names over 15 bytes).
    public var zone: RecordZone.ID {
        RecordZone.ID(
            name: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[zoneName]), as: UTF8.self),
            owner: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[zoneOwner]), as: UTF8.self))
    }

    /// The slot at `index` (0 ..< ``slotCount``), in wire order.
    public func slot(at index: Int) -> FieldView {
        FieldView(record: self, start: slots[index], end: slots[index &+ 1])
    }

    /// The field named `name`: its first slot, the one a decoded record's `record[name]` reads
    /// (for concurrent slots, the one with the later stamp). Nil when the record has no such
    /// field. Binary search over the sorted names; allocates nothing.
    public func field(named name: String) -> FieldView? {
        var name = name
        return name.withUTF8 { field(namedUTF8: UnsafeRawBufferPointer($0)) }
    }

    /// The field whose name has the UTF-8 bytes `name` (see ``field(named:)``).
    public func field(namedUTF8 name: UnsafeRawBufferPointer) -> FieldView? {
        let key = NamePrefix(name, loadable: name.count)
        var low = 0, high = slotCount
        while low < high {
            let mid = low &+ (high &- low) / 2
            if compare(slotAt: mid, with: name, key) < 0 { low = mid &+ 1 } else { high = mid }
        }
        guard low < slotCount, compare(slotAt: low, with: name, key) == 0 else { return nil }
        return slot(at: low)
    }

    /// The order of the slot at `index`'s name against `name` (whose prefix is `key`), as
    /// `UTF8Order.compare`: by the first eight bytes in one comparison where they decide it.
    @inline(__always)
    func compare(slotAt index: Int, with name: UnsafeRawBufferPointer, _ key: NamePrefix) -> Int {
        let start = slots[index]
        if let p = bytes.baseAddress, start >= 0, start < bytes.count {
            // A name under 128 bytes: its length byte, then the name and what follows it.
            let n = Int(p.load(fromByteOffset: start, as: UInt8.self))
            let loadable = bytes.count &- start &- 1
            if n < 0x80 && n <= loadable {
                let slotName = UnsafeRawBufferPointer(start: p + (start &+ 1), count: n)
                return NamePrefix.compare(slotName, NamePrefix(slotName, loadable: loadable), name, key)
            }
        }
        return UTF8Order.compare(nameBytes(ofSlotAt: index), name)
    }

    /// The name of the slot at `index`, read from its length prefix (validated: at most 255 bytes).
    func nameBytes(ofSlotAt index: Int) -> UnsafeRawBufferPointer {
        FieldView.name(in: bytes, at: slots[index])
    }

    /// Validates `bytes` as a record and runs `body` with a view of them.
    /// - Throws: ``WireError`` as `Record(decoding:)` would for the same bytes, or
    ///   what `body` throws.
    @inlinable
    public static func withView<R>(
        of bytes: UnsafeRawBufferPointer, limits: WireLimits = .default,
        _ body: (RecordView) throws -> R
    ) throws -> R {
        var r = WireReader(bytes, limits: limits)
        let header = try RecordViewValidation.header(&r)
        return try withUnsafeTemporaryAllocation(of: Int.self, capacity: header.fieldCount &+ 1) { table in
            try body(RecordView(validating: &r, header: header, into: table))
        }
    }

    /// Validates `bytes` as a record and runs `body` with a view of them (see the buffer form).
    /// - Throws: ``WireError`` for bytes that are not a record, or what `body` throws.
    @inlinable
    public static func withView<R>(of bytes: [UInt8], limits: WireLimits = .default, _ body: (RecordView) throws -> R)
        throws -> R
    {
        try bytes.withUnsafeBytes { try withView(of: $0, limits: limits, body) }
    }

    /// Checks the fields after `header` (read from `r`), noting where each starts in `table`,
    /// and makes the view.
    @usableFromInline
    init(
        validating r: inout WireReader, header: RecordViewValidation.Header, into table: UnsafeMutableBufferPointer<Int>
    ) throws(WireError) {
        try RecordViewValidation.fields(&r, header: header, into: table)
        self.bytes = UnsafeRawBufferPointer(start: r.start, count: r.count)
        self.slots = UnsafeBufferPointer(rebasing: table[0..<(header.fieldCount &+ 1)])
        self.zoneName = header.zoneName
        self.zoneOwner = header.zoneOwner
        self.typeRange = header.recordType
        self.vector = header.vector
    }
}
