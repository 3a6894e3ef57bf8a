// WriterLogSection: the writers' log entries a batch carries, most of them implied by its versions (Spec/authenticated-writes.md §4).

/// The writers' log entries a `changes` or `live-changes` batch carries for the versions in it
/// (Spec/authenticated-writes.md §4): per writer, a contiguous range of its log, and the
/// checkpoint that ends it unless the writer is the sender.
///
/// An entry whose write a version of the batch shows whole travels as that version's index
/// (and the write's timestamp when it is not the version's entry for the writer): the receiver
/// rebuilds it. The others travel as the slots the version lacks, or whole.
public struct WriterLogSection: Hashable, Sendable {
    /// One entry of a range, in the form it travels.
    public enum Item: Hashable, Sendable {
        /// The write at the writer's vector entry of the batch's version `record`, shown whole.
        case implied(record: Int)
        /// The write at `hlc` of the batch's version `record`, shown whole (an older write of
        /// the writer whose slots the version still holds).
        case impliedAt(record: Int, hlc: HLC)
        /// The write at `hlc` of version `record`, which lacks `missing` of the slots it set
        /// (strictly increasing by name).
        case partial(record: Int, hlc: HLC, missing: [WriteEntry.Slot])
        /// A write no version of the batch shows: the entry itself.
        case whole(WriteEntry)
    }

    /// What ends a range: the chain after its last entry, and the writer device's signature of
    /// the checkpoint it makes with the batch's zone and incarnation.
    public struct Seal: Hashable, Sendable {
        /// The chain value after the range's last entry (32 bytes).
        public var chain: [UInt8]
        /// The signature (64 bytes).
        public var signature: [UInt8]
        /// Creates a seal.
        public init(chain: [UInt8], signature: [UInt8]) {
            self.chain = chain
            self.signature = signature
        }
    }

    /// A contiguous range of one writer's log.
    public struct Range: Hashable, Sendable {
        /// The writer.
        public var writer: NodeID
        /// The writer device's public key (SubjectPublicKeyInfo DER), with a writer's first range
        /// on a connection.
        public var publicKey: [UInt8]?
        /// The first entry's sequence; the others follow without a gap.
        public var firstSequence: UInt64
        /// The entries.
        public var items: [Item]
        /// The checkpoint's chain and signature; nil only for the sender's own writes.
        public var seal: Seal?

        /// Creates a range.
        public init(writer: NodeID, publicKey: [UInt8]? = nil, firstSequence: UInt64, items: [Item], seal: Seal? = nil)
        {
            self.writer = writer
            self.publicKey = publicKey
            self.firstSequence = firstSequence
            self.items = items
            self.seal = seal
        }

        /// The sequence of the range's last entry.
        public var lastSequence: UInt64 { firstSequence &+ UInt64(items.count) &- 1 }
    }

    /// The longest public key accepted, in bytes (a P-256 SubjectPublicKeyInfo is 91).
    public static let maxKeyBytes = 256

    /// The ranges, in increasing order of writer.
    public var ranges: [Range]

    /// Creates a section; ranges are sorted by writer.
    public init(ranges: [Range]) {
        self.ranges = ranges.sorted { $0.writer < $1.writer }
    }

    var encodedSize: Int {
        var n = WireSize.varint(UInt64(ranges.count))
        for r in ranges {
            n &+= 16 &+ 1 &+ WireSize.varint(r.firstSequence) &+ WireSize.varint(UInt64(r.items.count))
            if let k = r.publicKey { n &+= WireSize.lengthPrefixed(k.count) }
            if r.seal != nil { n &+= WriterCheckpoint.chainBytes &+ WriterCheckpoint.signatureBytes }
            for item in r.items { n &+= Self.size(of: item) }
        }
        return n
    }

    static func size(of item: Item) -> Int {
        switch item {
        case .implied(let i): return 1 &+ WireSize.varint(UInt64(i))
        case .impliedAt(let i, _): return 1 &+ WireSize.varint(UInt64(i)) &+ 8
        case .partial(let i, _, let missing):
            var n = 1 &+ WireSize.varint(UInt64(i)) &+ 8 &+ WireSize.varint(UInt64(missing.count))
            for s in missing { n &+= s.encodedSize }
            return n
        case .whole(let e): return 1 &+ WireSize.lengthPrefixed(e.encodedSize)
        }
    }

    /// The canonical bytes (as a batch carries them).
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: encodedSize) { w in encode(into: &w) }
    }

    func encode(into w: inout WireWriter) {
        w.writeVarint(UInt64(ranges.count))
        for r in ranges {
            w.writeNodeID(r.writer)
            w.writeByte((r.publicKey != nil ? 1 : 0) | (r.seal != nil ? 2 : 0))
            if let k = r.publicKey { w.writeBytes(k) }
            w.writeVarint(r.firstSequence)
            w.writeVarint(UInt64(r.items.count))
            for item in r.items {
                switch item {
                case .implied(let i):
                    w.writeByte(0)
                    w.writeVarint(UInt64(i))
                case .impliedAt(let i, let hlc):
                    w.writeByte(1)
                    w.writeVarint(UInt64(i))
                    w.writeFixed64(hlc.rawValue)
                case .partial(let i, let hlc, let missing):
                    w.writeByte(2)
                    w.writeVarint(UInt64(i))
                    w.writeFixed64(hlc.rawValue)
                    w.writeVarint(UInt64(missing.count))
                    for s in missing { s.encode(into: &w) }
                case .whole(let e):
                    w.writeByte(3)
                    w.writeVarint(UInt64(e.encodedSize))
                    e.encode(into: &w)
                }
            }
            if let seal = r.seal {
                seal.chain.withUnsafeBytes { w.writeRaw($0) }
                seal.signature.withUnsafeBytes { w.writeRaw($0) }
            }
        }
    }

    /// Decodes a section standing alone; `records` is how many versions its batch carries
    /// (whole and sparse), which every record index must be below.
    /// - Throws: `WireError` (Spec/authenticated-writes.md §4): writers out of order or
    ///   repeated, a reserved flag or kind, an empty or oversized key, a zero first sequence, an
    ///   empty range, a range past the largest sequence, a record index out of the batch, a whole
    ///   entry whose sequence is not its place, missing slots out of order, a cut-short seal.
    public init(decoding bytes: [UInt8], records: Int, limits: WireLimits = .default) throws(WireError) {
        self = try ControlPayload.decode(bytes, limits: limits, "the writer log section") { (r) throws(WireError) in
            try Self.decode(from: &r, records: records)
        }
    }

    static func decode(from r: inout WireReader, records: Int) throws(WireError) -> WriterLogSection {
        let n = try r.readCount(max: r.limits.maxVectorEntries, "writer count", limitName: "maxVectorEntries")
        try r.require(n, each: 16 &+ 1 &+ 1 &+ 1, "\(n) writer ranges")
        var ranges = [Range]()
        ranges.reserveCapacity(n)
        for _ in 0..<n {
            var at = r.offset
            let writer = try r.readNodeID("range writer")
            if let p = ranges.last?.writer, !(p < writer) {
                throw WireError(
                    p == writer ? .duplicate : .unsorted, at: at,
                    "writer ranges must be listed once each in increasing order of writer")
            }
            at = r.offset
            let flags = try r.readByte("range flags")
            guard flags & ~3 == 0 else {
                throw WireError(.unknownRequiredTag, at: at, "range flags 0x\(Hex.string([flags])) set reserved bits")
            }
            var key: [UInt8]? = nil
            if flags & 1 != 0 {
                at = r.offset
                let length = try r.readLength(
                    max: maxKeyBytes, "writer public key", limitName: "maxKeyBytes", owner: "WriterLogSection")
                guard length > 0 else { throw WireError(.invalidValue, at: at, "writer public key is empty") }
                key = try r.readBytes(length, "writer public key")
            }
            at = r.offset
            let first = try r.readVarint("range first sequence")
            guard first >= 1 else {
                throw WireError(.invalidValue, at: at, "range first sequence is 0; a log starts at 1")
            }
            at = r.offset
            let count = try r.readCount(
                max: r.limits.maxMessageItems, "range entry count", limitName: "maxMessageItems")
            guard count >= 1 else { throw WireError(.invalidValue, at: at, "a writer range holds at least one entry") }
            guard first <= UInt64.max &- UInt64(count) else {
                throw WireError(
                    .invalidValue, at: at, "a range of \(count) entries from \(first) runs past the largest sequence")
            }
            try r.require(count, each: 2, "\(count) range entries")
            var items = [Item]()
            items.reserveCapacity(count)
            for i in 0..<count {
                items.append(try readItem(from: &r, records: records, sequence: first &+ UInt64(i)))
            }
            var seal: Seal? = nil
            if flags & 2 != 0 {
                let chain = try r.readBytes(WriterCheckpoint.chainBytes, "range checkpoint chain")
                seal = Seal(
                    chain: chain,
                    signature: try r.readBytes(WriterCheckpoint.signatureBytes, "range checkpoint signature"))
            }
            ranges.append(Range(writer: writer, publicKey: key, firstSequence: first, items: items, seal: seal))
        }
        var section = WriterLogSection(ranges: [])
        section.ranges = ranges
        return section
    }

    /// Reads the section that ends a batch of `records` versions: flagged present, so it holds
    /// at least one range.
    static func decodeInBatch(from r: inout WireReader, records: Int) throws(WireError) -> WriterLogSection {
        let at = r.offset
        let section = try decode(from: &r, records: records)
        guard !section.ranges.isEmpty else {
            throw WireError(
                .invalidValue, at: at,
                "the batch flags a writer log section, which holds no range; leave the flag clear instead")
        }
        return section
    }

    static func readItem(from r: inout WireReader, records: Int, sequence: UInt64) throws(WireError) -> Item {
        var at = r.offset
        let kind = try r.readByte("entry kind")
        func index() throws(WireError) -> Int {
            let at = r.offset
            let i = try r.readVarint("entry record index")
            guard i < UInt64(max(records, 0)) else {
                throw WireError(
                    .invalidValue, at: at, "entry record index \(i) is not below the batch's \(records) version(s)")
            }
            return Int(truncatingIfNeeded: i)
        }
        switch kind {
        case 0:
            return .implied(record: try index())
        case 1:
            let i = try index()
            return .impliedAt(record: i, hlc: HLC(rawValue: try r.readFixed64("entry HLC")))
        case 2:
            let i = try index()
            let hlc = HLC(rawValue: try r.readFixed64("entry HLC"))
            let n = try r.readCount(
                max: r.limits.maxFieldCount &+ 1, "missing slot count", limitName: "maxFieldCount + 1")
            let missing = try WriteEntry.Slot.decodeList(n, from: &r, "missing slot")
            return .partial(record: i, hlc: hlc, missing: missing)
        case 3:
            at = r.offset
            let length = try r.readLength(max: r.available, "whole entry", limitName: "maxFramePayloadBytes")
            let bytes = try r.readRaw(length, "whole entry")
            var inner = WireReader(bytes, limits: r.limits, base: at &+ WireSize.varint(UInt64(length)))
            let entry = try WriteEntry.decode(from: &inner)
            try inner.expectEnd("the whole entry")
            guard entry.sequence == sequence else {
                throw WireError(
                    .invalidValue, at: at, "whole entry #\(entry.sequence) stands at sequence \(sequence) of its range")
            }
            return .whole(entry)
        default:
            throw WireError(
                .unknownRequiredTag, at: at,
                "entry kind \(kind) is not 0 (implied), 1 (implied at a dot), 2 (partial) or 3 (whole)")
        }
    }
}
