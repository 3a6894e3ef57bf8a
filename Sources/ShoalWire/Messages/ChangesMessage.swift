// ChangesMessage: one batch of a zone's changes — latest record versions, tombstones included.

/// The payload of a ``FrameType/changes`` frame (Spec/replication.md, "Changes").
///
/// Layout: zone ID, incarnation (16 bytes), batch number (varint, from 1 per subscription),
/// flags (bit 0: caught up — the sender had nothing more when it made this batch; bit 1: a
/// knowledge vector follows the token; bit 2: a sparse section follows the records; bit 3: the
/// subscription restarts from the beginning; bit 4: a count of remaining changes follows; bit 5:
/// the sender's purge horizon follows; bit 6: a subscription number follows; bit 7: a writer log
/// section follows the body, Spec/authenticated-writes.md §4), the
/// sender's change token after this batch (length-prefixed), the knowledge vector (plain vector)
/// when flagged, the remaining count (varint) when flagged, the purge horizon (plain vector) when
/// flagged, the subscription number (varint ≥ 1) when flagged, the record count (varint), then the records' canonical encodings back to back (each is self-delimiting),
/// then, when flag bit 2 is set, the sparse section (``SparseRecord``s and the base vector they
/// are relative to; Spec/replication.md §3.5.1), then, when flag bit 7 is set, the writer log
/// section (``WriterLogSection``, at least one range). Deleted records travel as records whose
/// heads are all deletions.
public struct ChangesMessage: Hashable, Sendable {
    /// The zone.
    public var zone: RecordZone.ID
    /// The incarnation.
    public var incarnation: NodeID
    /// The batch number within the subscription, from 1.
    public var batch: UInt64
    /// Whether the sender had sent everything it held when it made this batch.
    public var isCaughtUp: Bool
    /// Whether the sender restarted the subscription from the beginning with this batch because
    /// the subscriber's token predates tombstones it purged: from here to the next caught-up batch
    /// it sends every record it holds, and a record the subscriber holds that the stream leaves out,
    /// with a vector the caught-up knowledge covers, was deleted (Spec/replication.md §3.5.2).
    public var isReset: Bool
    /// The token to resubscribe with after applying this batch.
    public var token: ChangeToken
    /// Every change the sender knew of when it started reading this batch (sent with caught-up
    /// batches only): the receiver may add it to its own knowledge once the batch is applied.
    public var knowledge: VersionVector?
    /// At most how many more changes the sender had after this batch, for progress displays
    /// (sent with the first batch of a long catch-up); nil when not sent.
    public var remaining: UInt64?
    /// The sender's purge horizon (the union of the vectors of the tombstones it purged), sent
    /// with the caught-up batch of a reset pass: the subscriber takes it as its own, so that what
    /// it creates again supersedes those deletions (Spec/replication.md §3.5.3); nil when not sent.
    public var horizon: VersionVector?
    /// The latest versions of the records that changed.
    public var records: [Record]
    /// Further changed records, reduced to what the receiver lacks relative to ``base``.
    public var sparseRecords: [SparseRecord]
    /// The vector the sparse records are relative to: writes the sender knows the receiver and
    /// the sender both reflect. Sent (and meaningful) only with sparse records.
    public var base: VersionVector?
    /// The number this batch gives its subscription on this connection, so that later batches
    /// can name it instead of the zone (``LiveChangesMessage``, Spec/replication.md §3.5.4); nil
    /// when not sent.
    public var subscription: UInt64?
    /// The writers' log entries for the batch's versions, with the checkpoints that prove them
    /// (Spec/authenticated-writes.md §4); nil when the batch carries none.
    public var writerLog: WriterLogSection?

    /// Creates a batch.
    public init(
        zone: RecordZone.ID, incarnation: NodeID, batch: UInt64, isCaughtUp: Bool, isReset: Bool = false,
        token: ChangeToken,
        knowledge: VersionVector? = nil, remaining: UInt64? = nil, horizon: VersionVector? = nil, records: [Record],
        sparseRecords: [SparseRecord] = [], base: VersionVector? = nil, subscription: UInt64? = nil,
        writerLog: WriterLogSection? = nil
    ) {
        self.zone = zone
        self.incarnation = incarnation
        self.batch = batch
        self.isCaughtUp = isCaughtUp
        self.isReset = isReset
        self.token = token
        self.knowledge = knowledge
        self.remaining = remaining
        self.horizon = horizon
        self.records = records
        self.sparseRecords = sparseRecords
        self.base = sparseRecords.isEmpty ? nil : (base ?? VersionVector())
        self.subscription = subscription
        self.writerLog = writerLog?.ranges.isEmpty == false ? writerLog : nil
    }

    enum Flags {
        static let caughtUp: UInt8 = 1
        static let knowledge: UInt8 = 2
        static let sparse: UInt8 = 4
        static let reset: UInt8 = 8
        static let remaining: UInt8 = 16
        static let horizon: UInt8 = 32
        static let subscription: UInt8 = 64
        static let writerLog: UInt8 = 128
        static let known: UInt8 = 255
    }

    /// The canonical payload bytes. Every record must be in `zone` and pass `Record.validate()`.
    public func encoded() -> [UInt8] {
        let size =
            headerSize &+ BatchBody.size(records: records, sparse: sparseRecords, base: base, zone: zone)
            &+ (writerLog?.encodedSize ?? 0)
        return WireWriter.encode(size: size) { w in
            writeHeader(into: &w)
            BatchBody.write(records: records, sparse: sparseRecords, base: base, zone: zone, into: &w)
            writerLog?.encode(into: &w)
        }
    }

    /// The payload with `count` whole records given already encoded: `recordBytes` is their
    /// canonical encodings back to back (as the store keeps them), each a record of ``zone``, so a
    /// batch read from the store travels without decoding and re-encoding every record. ``records``
    /// must be empty (the bytes take their place); ``sparseRecords`` follow as usual.
    package func encoded(count: Int, recordBytes: [UInt8]) -> [UInt8] {
        let size =
            headerSize
            &+ BatchBody.size(count: count, recordBytes: recordBytes, sparse: sparseRecords, base: base, zone: zone)
            &+ (writerLog?.encodedSize ?? 0)
        return WireWriter.encode(size: size) { w in
            writeHeader(into: &w)
            BatchBody.write(
                count: count, recordBytes: recordBytes, sparse: sparseRecords, base: base, zone: zone, into: &w)
            writerLog?.encode(into: &w)
        }
    }

    /// Bytes of everything before the record count.
    var headerSize: Int {
        var size =
            WireSize.zoneID(zone) &+ 16 &+ WireSize.varint(batch) &+ 1 &+ WireSize.lengthPrefixed(token.bytes.count)
        if let k = knowledge { size &+= WireSize.plainVector(k) }
        if let n = remaining { size &+= WireSize.varint(n) }
        if let h = horizon { size &+= WireSize.plainVector(h) }
        if let s = subscription { size &+= WireSize.varint(s) }
        return size
    }

    func writeHeader(into w: inout WireWriter) {
        w.writeZoneID(zone)
        w.writeNodeID(incarnation)
        w.writeVarint(batch)
        w.writeByte(
            (isCaughtUp ? Flags.caughtUp : 0) | (knowledge != nil ? Flags.knowledge : 0)
                | (sparseRecords.isEmpty ? 0 : Flags.sparse) | (isReset ? Flags.reset : 0)
                | (remaining != nil ? Flags.remaining : 0) | (horizon != nil ? Flags.horizon : 0)
                | (subscription != nil ? Flags.subscription : 0)
                | (writerLog != nil ? Flags.writerLog : 0))
        w.writeBytes(token.bytes)
        if let k = knowledge { w.writePlainVector(k) }
        if let n = remaining { w.writeVarint(n) }
        if let h = horizon { w.writePlainVector(h) }
        if let s = subscription { w.writeVarint(s) }
    }

    /// Decodes a changes payload.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input, including a
    ///   record that belongs to another zone (`invalid_value`).
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        var ranges: [Range<Int>]? = nil
        self = try Self.decode(bytes, limits: limits, recordRanges: &ranges)
    }

    /// Decodes a changes payload, also returning where each of ``records`` lies in `bytes`: its
    /// canonical encoding (decoding accepts canonical encodings only), which the store can keep
    /// without encoding the record again.
    package static func decodeKeepingRecordBytes(_ bytes: [UInt8], limits: WireLimits = .default) throws(WireError) -> (
        ChangesMessage, [Range<Int>]
    ) {
        var ranges: [Range<Int>]? = []
        let m = try decode(bytes, limits: limits, recordRanges: &ranges)
        return (m, ranges ?? [])
    }

    /// The decoder; appends each record's byte range to `recordRanges` unless it is nil.
    static func decode(_ bytes: [UInt8], limits: WireLimits, recordRanges: inout [Range<Int>]?) throws(WireError)
        -> ChangesMessage
    {
        try ControlPayload.decode(bytes, limits: limits, "the changes message") {
            (r) throws(WireError) -> ChangesMessage in
            let zone = try r.readZoneID()
            let incarnation = try r.readNodeID("zone incarnation")
            let bAt = r.offset
            let batch = try r.readVarint("batch number")
            guard batch >= 1 else { throw WireError(.invalidValue, at: bAt, "batch numbers start at 1") }
            let fAt = r.offset
            let flags = try r.readByte("changes flags")
            guard flags & ~Flags.known == 0 else {
                throw WireError(
                    .unknownRequiredTag, at: fAt, "changes flags 0x\(Hex.string([flags])) set reserved bits")
            }
            let n = try r.readLength(max: r.limits.maxBlobBytes, "token length", limitName: "maxBlobBytes")
            let token = ChangeToken(bytes: try r.readBytes(n, "token"))
            let knowledge: VersionVector? = flags & Flags.knowledge != 0 ? try r.readPlainVector("knowledge") : nil
            let remaining: UInt64? = flags & Flags.remaining != 0 ? try r.readVarint("remaining changes") : nil
            let horizon: VersionVector? = flags & Flags.horizon != 0 ? try r.readPlainVector("purge horizon") : nil
            let subscription: UInt64? =
                flags & Flags.subscription != 0 ? try LiveChangesMessage.readSubscription(&r) : nil
            let (records, sparse, base) = try BatchBody.read(
                from: &r, zone: zone, sparse: flags & Flags.sparse != 0, what: "this batch",
                recordRanges: &recordRanges)
            let writerLog =
                flags & Flags.writerLog != 0
                ? try WriterLogSection.decodeInBatch(from: &r, records: records.count &+ sparse.count) : nil
            return ChangesMessage(
                zone: zone, incarnation: incarnation, batch: batch, isCaughtUp: flags & Flags.caughtUp != 0,
                isReset: flags & Flags.reset != 0, token: token, knowledge: knowledge, remaining: remaining,
                horizon: horizon, records: records,
                sparseRecords: sparse, base: base, subscription: subscription, writerLog: writerLog)
        }
    }
}
