// WriteEntry: one write as its writer's log for a zone records it — the link of the hash chain a writer signs.

/// One write — a save or a deletion of one record, one ``Dot`` — as the log of its writer for a
/// zone records it (Spec/authenticated-writes.md §2).
///
/// A writer numbers its writes in a zone incarnation without gaps (``sequence``) and chains
/// them by hash; its device signs the chain's head now and then (``WriterCheckpoint``), which
/// proves every entry up to it, whoever relays them. An entry names the record and, for each
/// field slot the write stamped, a digest of the slot, so a receiver can check a relayed
/// version's slots against what their writer wrote without holding the values it replaced.
///
/// Layout: sequence (varint ≥ 1), HLC (fixed64), flags (bit 0: deletion, bit 1: creation; the
/// others reserved), record name, slot count, then each slot's name and digest (a length byte,
/// 1–16, then the bytes), strictly increasing by name bytes.
public struct WriteEntry: Hashable, Sendable, CustomStringConvertible {
    /// A field slot the write stamped: its name and its digest.
    public struct Slot: Hashable, Sendable {
        /// The field's name; the empty name stands for the record's type and parent.
        public var name: String
        /// The slot's digest (Spec/authenticated-writes.md §2): its value bytes themselves when
        /// they are at most ``inlineSlotBytes`` long, otherwise ``digestBytes`` bytes of hash.
        public var digest: [UInt8]

        /// Creates a slot.
        public init(name: String, digest: [UInt8]) {
            self.name = name
            self.digest = digest
        }
    }

    /// The length of a hashed slot digest, in bytes: the longest a digest can be.
    public static let digestBytes = 16
    /// The longest slot value that is its own digest; a longer one is hashed.
    public static let inlineSlotBytes = 15
    /// The bytes that start a slot digest's input, so it means nothing elsewhere.
    public static let slotDigestContext: [UInt8] = Array("shoal slot v1\0".utf8)
    /// The bytes that start a chain's first hash input.
    public static let chainContext: [UInt8] = Array("shoal writer chain v1\0".utf8)

    /// The write's place in its writer's log for the zone incarnation: 1, 2, 3, … without gaps.
    public var sequence: UInt64
    /// The write's timestamp (its dot's HLC); strictly increasing along a log.
    public var hlc: HLC
    /// Whether the write deleted the record.
    public var isDeletion: Bool
    /// Whether the write created the record (its dot is the record's creation dot).
    public var isCreation: Bool
    /// The record written (the zone is the log's).
    public var record: String
    /// The slots the write stamped, in increasing order of name bytes; none for a deletion.
    public var slots: [Slot]

    /// Creates an entry; slots are sorted by the UTF-8 bytes of their names.
    public init(
        sequence: UInt64, hlc: HLC, isDeletion: Bool = false, isCreation: Bool = false, record: String, slots: [Slot]
    ) {
        self.sequence = sequence
        self.hlc = hlc
        self.isDeletion = isDeletion
        self.isCreation = isCreation
        self.record = record
        // Slots taken from a record's fields come in order already: only check them.
        let ordered = zip(slots, slots.dropFirst()).allSatisfy { UTF8Order.compare($0.name, $1.name) < 0 }
        self.slots = ordered ? slots : slots.sorted { UTF8Order.compare($0.name, $1.name) < 0 }
    }

    public var description: String {
        "entry #\(sequence) \(record) at \(hlc)\(isDeletion ? " (deletion)" : "")\(isCreation ? " (creation)" : ""), \(slots.count) slot(s)"
    }

    /// The canonical bytes: what the chain hashes (Spec/authenticated-writes.md §2.1).
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: encodedSize) { w in encode(into: &w) }
    }

    /// Decodes an entry.
    /// - Throws: `WireError` for truncated or malformed input: a zero sequence, a reserved flag,
    ///   a deletion with slots, an invalid record name, slots out of order or repeated, a digest
    ///   of 0 or more than 16 bytes, more slots than `maxFieldCount` + 1.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the write entry") { (r) throws(WireError) in
            try Self.decode(from: &r)
        }
    }

    var encodedSize: Int {
        var n = WireSize.varint(sequence) &+ 8 &+ 1 &+ WireSize.string(record) &+ WireSize.varint(UInt64(slots.count))
        for s in slots { n &+= s.encodedSize }
        return n
    }

    func encode(into w: inout WireWriter) {
        w.writeVarint(sequence)
        w.writeFixed64(hlc.rawValue)
        w.writeByte((isDeletion ? 1 : 0) | (isCreation ? 2 : 0))
        w.writeString(record)
        w.writeVarint(UInt64(slots.count))
        for s in slots { s.encode(into: &w) }
    }

    static func decode(from r: inout WireReader) throws(WireError) -> WriteEntry {
        var at = r.offset
        let sequence = try r.readVarint("entry sequence")
        guard sequence >= 1 else {
            throw WireError(.invalidValue, at: at, "entry sequence is 0; a writer's log starts at 1")
        }
        let hlc = HLC(rawValue: try r.readFixed64("entry HLC"))
        at = r.offset
        let flags = try r.readByte("entry flags")
        guard flags & ~3 == 0 else {
            throw WireError(.unknownRequiredTag, at: at, "entry flags 0x\(Hex.string([flags])) set reserved bits")
        }
        let record = try r.readName("entry record name")
        at = r.offset
        let limit = r.limits.maxFieldCount &+ 1
        let n = try r.readCount(max: limit, "entry slot count", limitName: "maxFieldCount + 1", owner: "WriteEntry")
        if flags & 1 != 0, n > 0 {
            throw WireError(.invalidValue, at: at, "a deletion's entry stamps no slot; this one lists \(n)")
        }
        let slots = try Slot.decodeList(n, from: &r, "entry slot")
        var entry = WriteEntry(
            sequence: sequence, hlc: hlc, isDeletion: flags & 1 != 0, isCreation: flags & 2 != 0, record: record,
            slots: [])
        entry.slots = slots
        return entry
    }
}

extension WriteEntry.Slot {
    /// The slot's size on the wire: its name, the digest's length byte and the digest.
    var encodedSize: Int { WireSize.string(name) &+ 1 &+ digest.count }

    func encode(into w: inout WireWriter) {
        w.writeString(name)
        w.writeByte(UInt8(truncatingIfNeeded: digest.count))
        digest.withUnsafeBytes { w.writeRaw($0) }
    }

    /// Reads `n` slots, strictly increasing by name bytes, each a name then a digest of 1–16
    /// bytes; `what` names them in errors.
    static func decodeList(_ n: Int, from r: inout WireReader, _ what: String) throws(WireError) -> [WriteEntry.Slot] {
        try r.require(n, each: 3, "\(n) \(what)s")
        var slots = [WriteEntry.Slot]()
        slots.reserveCapacity(n)
        for _ in 0..<n {
            var at = r.offset
            // The empty name is the record's type and parent; any other is a field name.
            let name = try r.readString(max: r.limits.maxFieldNameBytes, "\(what) name", limitName: "maxFieldNameBytes")
            if let previous = slots.last {
                let order = UTF8Order.compare(previous.name, name)
                if order >= 0 {
                    throw WireError(
                        order == 0 ? .duplicate : .unsorted, at: at,
                        "\(what)s must be listed once each in increasing order of name bytes")
                }
            }
            at = r.offset
            let length = Int(try r.readByte("\(what) digest length"))
            guard (1...WriteEntry.digestBytes).contains(length) else {
                throw WireError(
                    .invalidValue, at: at,
                    "\(what) \(name.debugDescription) has a digest of \(length) bytes; a digest is 1 to \(WriteEntry.digestBytes) bytes"
                )
            }
            slots.append(WriteEntry.Slot(name: name, digest: try r.readBytes(length, "\(what) digest")))
        }
        return slots
    }
}
