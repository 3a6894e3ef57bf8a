// LiveChangesMessage: a `changes` batch named by its subscription's number, with its token as a
// change to the previous one (Spec/replication.md §3.5.4).

/// The payload of a ``FrameType/liveChanges`` frame: a batch of a subscription whose number the
/// server established in an earlier ``ChangesMessage`` of it (``ChangesMessage/subscription``).
///
/// Layout: the subscription number (varint ≥ 1), the batch number (varint ≥ 1), flags (bit 0:
/// caught up; bit 1: a knowledge vector follows the token; bit 2: a sparse section follows the
/// records; bit 3: the knowledge and the sparse base are written against the stated knowledge;
/// bit 4: a writer log section ends the payload, Spec/authenticated-writes.md §4; other bits
/// reserved), the token as a change to the subscription's previous one — how many of
/// its leading bytes are kept (varint), then the bytes that follow them (length-prefixed) — the
/// knowledge when flagged, the record count (varint), the records' canonical encodings back to
/// back, the sparse section when flagged, and the writer log section when flagged.
///
/// The zone is not on the wire: the receiver looks the number up (``subscription(of:limits:)``)
/// and decodes the rest in that zone (``init(decoding:zone:reference:limits:)``); it rebuilds the
/// token from its previous one (``token(after:limits:)``). With bit 3 the vectors are written as
/// their entries' differences from ``reference``, the knowledge the subscription's earlier
/// batches stated, which the receiver holds too.
public struct LiveChangesMessage: Hashable, Sendable {
    /// The subscription's number on this connection.
    public var subscription: UInt64
    /// The zone the subscription follows (not encoded: the number stands for it).
    public var zone: RecordZone.ID
    /// The batch number within the subscription.
    public var batch: UInt64
    /// Whether the sender had sent everything it held when it made this batch.
    public var isCaughtUp: Bool
    /// How many leading bytes of the subscription's previous token the new token keeps.
    public var tokenKept: Int
    /// The new token's bytes after those kept.
    public var tokenTail: [UInt8]
    /// The knowledge stated with a caught-up batch (Spec/replication.md §3.5: only what grew).
    public var knowledge: VersionVector?
    /// The latest versions of the records that changed.
    public var records: [Record]
    /// Further changed records, reduced to what the receiver lacks relative to ``base``.
    public var sparseRecords: [SparseRecord]
    /// The vector the sparse records are relative to; sent (and meaningful) only with them.
    public var base: VersionVector?
    /// The knowledge the subscription's earlier batches on this connection stated (their union,
    /// since its last reset), when ``knowledge`` and ``base`` are written against it (flags bit 3);
    /// nil when they are written whole. Not encoded: both sides hold it. Always nil for a batch
    /// with neither knowledge nor sparse records.
    public var reference: VersionVector?
    /// The writers' log entries for the batch's versions (Spec/authenticated-writes.md §4); nil
    /// when the batch carries none.
    public var writerLog: WriterLogSection?

    /// Creates a batch whose token keeps `tokenKept` bytes of the previous one and adds `tokenTail`,
    /// its vectors written against `reference` when one is given.
    public init(
        subscription: UInt64, zone: RecordZone.ID, batch: UInt64, isCaughtUp: Bool, tokenKept: Int, tokenTail: [UInt8],
        knowledge: VersionVector? = nil, records: [Record], sparseRecords: [SparseRecord] = [],
        base: VersionVector? = nil,
        reference: VersionVector? = nil, writerLog: WriterLogSection? = nil
    ) {
        self.subscription = subscription
        self.zone = zone
        self.batch = batch
        self.isCaughtUp = isCaughtUp
        self.tokenKept = tokenKept
        self.tokenTail = tokenTail
        self.knowledge = knowledge
        self.records = records
        self.sparseRecords = sparseRecords
        self.base = sparseRecords.isEmpty ? nil : (base ?? VersionVector())
        self.reference = knowledge == nil && sparseRecords.isEmpty ? nil : reference
        self.writerLog = writerLog?.ranges.isEmpty == false ? writerLog : nil
    }

    /// The compact form of `changes`, whose token follows `previous` (the token of the
    /// subscription's last batch): the token keeps the longest prefix the two share. Nil when
    /// `changes` needs the full form (a reset, a remaining count, a purge horizon or a
    /// subscription number to establish). Its vectors are written against `reference` when one is
    /// given: the knowledge the subscription's earlier batches stated (``reference``).
    public init?(
        _ changes: ChangesMessage, subscription: UInt64, previousToken previous: [UInt8],
        reference: VersionVector? = nil
    ) {
        guard !changes.isReset, changes.remaining == nil, changes.horizon == nil, changes.subscription == nil,
            subscription >= 1
        else { return nil }
        let token = changes.token.bytes
        var kept = 0
        let n = min(token.count, previous.count)
        while kept < n && token[kept] == previous[kept] { kept &+= 1 }
        self.init(
            subscription: subscription, zone: changes.zone, batch: changes.batch, isCaughtUp: changes.isCaughtUp,
            tokenKept: kept,
            tokenTail: Array(token[kept...]), knowledge: changes.knowledge, records: changes.records,
            sparseRecords: changes.sparseRecords, base: changes.base, reference: reference, writerLog: changes.writerLog
        )
    }

    enum Flags {
        static let caughtUp: UInt8 = 1
        static let knowledge: UInt8 = 2
        static let sparse: UInt8 = 4
        static let againstStated: UInt8 = 8
        static let writerLog: UInt8 = 16
        static let known: UInt8 = 31
    }

    /// The token this batch states, given the subscription's previous one; nil when it keeps more
    /// bytes than `previous` has, or fewer than the two share (the canonical form keeps the longest
    /// shared prefix), or the result is longer than `maxBlobBytes`.
    public func token(after previous: [UInt8], limits: WireLimits = .default) -> ChangeToken? {
        guard tokenKept <= previous.count, tokenKept &+ tokenTail.count <= limits.maxBlobBytes else { return nil }
        if tokenKept < previous.count, let first = tokenTail.first, first == previous[tokenKept] { return nil }
        return ChangeToken(bytes: Array(previous[..<tokenKept]) + tokenTail)
    }

    /// The canonical payload bytes. Every record must be in ``zone`` and pass `Record.validate()`.
    public func encoded() -> [UInt8] {
        let size =
            headerSize
            &+ BatchBody.size(records: records, sparse: sparseRecords, base: base, reference: reference, zone: zone)
            &+ (writerLog?.encodedSize ?? 0)
        return WireWriter.encode(size: size) { w in
            writeHeader(into: &w)
            BatchBody.write(
                records: records, sparse: sparseRecords, base: base, reference: reference, zone: zone, into: &w)
            writerLog?.encode(into: &w)
        }
    }

    /// The payload with `count` whole records given already encoded (as the store keeps them),
    /// as ``ChangesMessage/encoded(count:recordBytes:)`` does; ``records`` must be empty.
    package func encoded(count: Int, recordBytes: [UInt8]) -> [UInt8] {
        let size =
            headerSize
            &+ BatchBody.size(
                count: count, recordBytes: recordBytes, sparse: sparseRecords, base: base, reference: reference,
                zone: zone)
            &+ (writerLog?.encodedSize ?? 0)
        return WireWriter.encode(size: size) { w in
            writeHeader(into: &w)
            BatchBody.write(
                count: count, recordBytes: recordBytes, sparse: sparseRecords, base: base, reference: reference,
                zone: zone, into: &w)
            writerLog?.encode(into: &w)
        }
    }

    var headerSize: Int {
        var size =
            WireSize.varint(subscription) &+ WireSize.varint(batch) &+ 1 &+ WireSize.varint(UInt64(tokenKept))
            &+ WireSize.lengthPrefixed(tokenTail.count)
        if let k = knowledge {
            if let reference {
                size &+= VectorChange.size(VectorChange.entries(of: k), against: reference)
            } else {
                size &+= WireSize.plainVector(k)
            }
        }
        return size
    }

    func writeHeader(into w: inout WireWriter) {
        w.writeVarint(subscription)
        w.writeVarint(batch)
        w.writeByte(
            (isCaughtUp ? Flags.caughtUp : 0) | (knowledge != nil ? Flags.knowledge : 0)
                | (sparseRecords.isEmpty ? 0 : Flags.sparse)
                | (reference != nil ? Flags.againstStated : 0) | (writerLog != nil ? Flags.writerLog : 0))
        w.writeVarint(UInt64(tokenKept))
        w.writeBytes(tokenTail)
        if let k = knowledge {
            if let reference {
                VectorChange.write(VectorChange.entries(of: k), against: reference, into: &w)
            } else {
                w.writePlainVector(k)
            }
        }
    }

    /// The subscription number a payload names (its first field), so the receiver can find the
    /// zone to decode the rest in.
    /// - Throws: ``WireError`` when the number is malformed or 0.
    public static func subscription(of bytes: [UInt8], limits: WireLimits = .default) throws(WireError) -> UInt64 {
        try Borrowed.bytes(of: bytes) { (raw) throws(WireError) -> UInt64 in
            var r = WireReader(raw, limits: limits)
            return try readSubscription(&r)
        }
    }

    static func readSubscription(_ r: inout WireReader) throws(WireError) -> UInt64 {
        let at = r.offset
        let n = try r.readVarint("subscription number")
        guard n >= 1 else { throw WireError(.invalidValue, at: at, "subscription numbers start at 1") }
        return n
    }

    /// Decodes a live changes payload of a subscription to `zone`; `reference` is the knowledge the
    /// subscription's earlier batches stated, which a batch with flags bit 3 writes its vectors
    /// against (see ``reference``).
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input, including a
    ///   record that belongs to another zone (`invalid_value`).
    public init(
        decoding bytes: [UInt8], zone: RecordZone.ID, reference: VersionVector = VersionVector(),
        limits: WireLimits = .default
    ) throws(WireError) {
        var ranges: [Range<Int>]? = nil
        self = try Self.decode(bytes, zone: zone, reference: reference, limits: limits, recordRanges: &ranges)
    }

    /// Decodes a live changes payload, also returning where each of ``records`` lies in `bytes`.
    package static func decodeKeepingRecordBytes(
        _ bytes: [UInt8], zone: RecordZone.ID, reference: VersionVector = VersionVector(),
        limits: WireLimits = .default
    ) throws(WireError) -> (LiveChangesMessage, [Range<Int>]) {
        var ranges: [Range<Int>]? = []
        let m = try decode(bytes, zone: zone, reference: reference, limits: limits, recordRanges: &ranges)
        return (m, ranges ?? [])
    }

    static func decode(
        _ bytes: [UInt8], zone: RecordZone.ID, reference: VersionVector, limits: WireLimits,
        recordRanges: inout [Range<Int>]?
    ) throws(WireError) -> LiveChangesMessage {
        try ControlPayload.decode(bytes, limits: limits, "the live changes message") {
            (r) throws(WireError) -> LiveChangesMessage in
            let subscription = try readSubscription(&r)
            let bAt = r.offset
            let batch = try r.readVarint("batch number")
            guard batch >= 1 else { throw WireError(.invalidValue, at: bAt, "batch numbers start at 1") }
            let fAt = r.offset
            let flags = try r.readByte("live changes flags")
            guard flags & ~Flags.known == 0 else {
                throw WireError(
                    .unknownRequiredTag, at: fAt, "live changes flags 0x\(Hex.string([flags])) set reserved bits")
            }
            let against = flags & Flags.againstStated != 0
            guard !against || flags & (Flags.knowledge | Flags.sparse) != 0 else {
                throw WireError(
                    .invalidValue, at: fAt,
                    "live changes flags 0x\(Hex.string([flags])) write vectors against the stated knowledge, but the batch has neither knowledge nor a sparse section"
                )
            }
            let kAt = r.offset
            let kept = try r.readVarint("token bytes kept")
            guard kept <= UInt64(r.limits.maxBlobBytes) else {
                throw WireError(
                    .limitExceeded, at: kAt,
                    "the token keeps \(kept) bytes; tokens are at most \(r.limits.maxBlobBytes) (maxBlobBytes)")
            }
            let tAt = r.offset
            let n = try r.readLength(max: r.limits.maxBlobBytes, "token tail length", limitName: "maxBlobBytes")
            guard Int(kept) &+ n <= r.limits.maxBlobBytes else {
                throw WireError(
                    .limitExceeded, at: tAt,
                    "the token would be \(Int(kept) &+ n) bytes; tokens are at most \(r.limits.maxBlobBytes) (maxBlobBytes)"
                )
            }
            let tail = try r.readBytes(n, "token tail")
            var knowledge: VersionVector? = nil
            if flags & Flags.knowledge != 0 {
                knowledge =
                    against
                    ? VectorChange.vector(try VectorChange.read(&r, against: reference, meaning: .entries, "knowledge"))
                    : try r.readPlainVector("knowledge")
            }
            let (records, sparse, base) = try BatchBody.read(
                from: &r, zone: zone, sparse: flags & Flags.sparse != 0, reference: against ? reference : nil,
                what: "this subscription", recordRanges: &recordRanges)
            let writerLog =
                flags & Flags.writerLog != 0
                ? try WriterLogSection.decodeInBatch(from: &r, records: records.count &+ sparse.count) : nil
            return LiveChangesMessage(
                subscription: subscription, zone: zone, batch: batch, isCaughtUp: flags & Flags.caughtUp != 0,
                tokenKept: Int(kept), tokenTail: tail, knowledge: knowledge, records: records,
                sparseRecords: sparse, base: base, reference: against ? reference : nil, writerLog: writerLog)
        }
    }

    /// The batch as a ``ChangesMessage`` of `incarnation` with `token` (``token(after:limits:)``).
    public func changes(incarnation: NodeID, token: ChangeToken) -> ChangesMessage {
        ChangesMessage(
            zone: zone, incarnation: incarnation, batch: batch, isCaughtUp: isCaughtUp, token: token,
            knowledge: knowledge,
            records: records, sparseRecords: sparseRecords, base: base, writerLog: writerLog)
    }
}
