// WriterLog: the hashes of authenticated writes — slot digests, a write's entry, and the chain a writer's device signs.

internal import Crypto
import Dispatch
import Synchronization
package import ShoalWire

/// The hashing behind authenticated writes (Spec/authenticated-writes.md §2): the digest of a
/// field slot, the entry of a write as its writer's log records it, and the hash chain over a
/// log's entries.
package enum WriterLog {
    /// The digest of the slot named `name` holding `value` (nil: the field was removed) in a
    /// record of `zone` (Spec/authenticated-writes.md §2): the slot's value bytes — a presence
    /// byte, then the canonical value — themselves when they are at most
    /// ``WriteEntry/inlineSlotBytes`` long, otherwise the first ``WriteEntry/digestBytes`` bytes
    /// of SHA-256 over ``WriteEntry/slotDigestContext``, the name as a `name`, and those bytes.
    package static func slotDigest(name: String, value: FieldValue?, zone: RecordZone.ID) -> [UInt8] {
        digest(name: name, valueSize: fieldValueSize(value, zone: zone)) { w in
            writeFieldValue(into: &w, value, zone: zone)
        }
    }

    /// The digest of the slot with the empty name, which stands for the record's type and parent:
    /// as ``slotDigest(name:value:zone:)`` with the value bytes presence 1, the record type as an
    /// `identifier`, then a presence byte and, when 1, the parent as a reference.
    package static func systemDigest(recordType: String, parent: Reference?, zone: RecordZone.ID) -> [UInt8] {
        digest(name: "", valueSize: systemValueSize(recordType: recordType, parent: parent, zone: zone)) { w in
            writeSystemValue(into: &w, recordType: recordType, parent: parent, zone: zone)
        }
    }

    /// The length of a field slot's value bytes: a presence byte, then the canonical value.
    static func fieldValueSize(_ value: FieldValue?, zone: RecordZone.ID) -> Int {
        guard let value else { return 1 }
        return 2 &+ value.payloadSize(zone: zone)
    }

    /// Writes the value bytes ``fieldValueSize(_:zone:)`` measures.
    static func writeFieldValue(into w: inout WireWriter, _ value: FieldValue?, zone: RecordZone.ID) {
        if let value {
            w.writeByte(1)
            w.writeByte(value.tag)
            value.encodePayload(into: &w, zone: zone)
        } else {
            w.writeByte(0)
        }
    }

    /// The length of the system slot's value bytes (``systemDigest(recordType:parent:zone:)``).
    static func systemValueSize(recordType: String, parent: Reference?, zone: RecordZone.ID) -> Int {
        var size = 1 &+ WireSize.string(recordType) &+ 1
        if let parent { size &+= parent.payloadSize(zone: zone) }
        return size
    }

    static func writeSystemValue(into w: inout WireWriter, recordType: String, parent: Reference?, zone: RecordZone.ID)
    {
        w.writeByte(1)
        w.writeString(recordType)
        if let parent {
            w.writeByte(1)
            parent.encodePayload(into: &w, zone: zone)
        } else {
            w.writeByte(0)
        }
    }

    /// The length of the digest of value bytes `valueSize` long.
    static func digestLength(_ valueSize: Int) -> Int {
        valueSize <= WriteEntry.inlineSlotBytes ? valueSize : WriteEntry.digestBytes
    }

    /// The entry of the write `dot` as `version` shows it, `sequence` in its writer's log: the
    /// slots `version` stamps with `dot`; when `dot` is a head of `version` (its writer's vector
    /// entry, and a head), also whether it deleted the record and, for a save, the type and
    /// parent (the slot with the empty name). For the version the write itself produced this is
    /// the write's entry; a later version may show less of it (replaced slots), or another
    /// head's type and parent, and a sender then sends what it lacks (Spec/authenticated-writes.md §4).
    /// `among`: the slots to look at (``SlotLookup``), rather than all of them.
    package static func entry(of version: Record, dot: Dot, sequence: UInt64, among: [Int]? = nil) -> WriteEntry {
        let zone = version.id.zone
        let head = version.versionVector[dot.node] == dot.hlc ? version.heads.first { $0.node == dot.node } : nil
        let deletion = head?.isDeletion == true
        var slots = [WriteEntry.Slot]()
        if !deletion {
            slots.reserveCapacity((among?.count ?? version.fields.count) &+ 1)
            if head != nil {
                slots.append(
                    WriteEntry.Slot(
                        name: "",
                        digest: systemDigest(recordType: version.recordType, parent: version.parent, zone: zone)))
            }
            let fields = version.fields
            for k in 0..<(among?.count ?? fields.count) {
                let f = fields[among?[k] ?? k]
                guard f.stamp == dot else { continue }
                slots.append(
                    WriteEntry.Slot(name: f.name, digest: slotDigest(name: f.name, value: f.value, zone: zone)))
            }
        }
        return WriteEntry(
            sequence: sequence, hlc: dot.hlc, isDeletion: deletion, isCreation: version.creation == dot,
            record: version.id.name, slots: slots)
    }

    /// The canonical bytes of ``entry(of:dot:sequence:)``, written straight from `version` into
    /// one buffer: no slot, digest or entry is built on the way (a relayed batch rebuilds most
    /// of its entries this way, one per version). A nil `sequence` leaves it out: the rest of the
    /// entry, which a save's planning computes before the store numbers it (``encodedEntry(sequence:tail:)``).
    package static func encodedEntry(of version: Record, dot: Dot, sequence: UInt64?, among: [Int]? = nil) -> [UInt8] {
        let zone = version.id.zone
        let head = version.versionVector[dot.node] == dot.hlc ? version.heads.first { $0.node == dot.node } : nil
        let deletion = head?.isDeletion == true
        var size = (sequence.map(WireSize.varint) ?? 0) &+ 8 &+ 1 &+ WireSize.string(version.id.name)
        var count = 0
        var systemSize = 0
        if !deletion {
            if head != nil {
                systemSize = systemValueSize(recordType: version.recordType, parent: version.parent, zone: zone)
                size &+= 1 &+ 1 &+ digestLength(systemSize)
                count = 1
            }
            // Slots go in order of name bytes, as a version's fields do; a version built
            // otherwise takes the general path, which sorts them.
            guard let slots = version.entrySlotsSize(stampedBy: dot, among: among, digestLength: digestLength) else {
                let bytes = entry(of: version, dot: dot, sequence: sequence ?? 1, among: among).encoded()
                return sequence == nil ? Array(bytes.dropFirst()) : bytes  // varint 1 is one byte
            }
            size &+= slots.size
            count &+= slots.count
        }
        size &+= WireSize.varint(UInt64(count))
        return WireWriter.encode(size: size) { w in
            if let sequence { w.writeVarint(sequence) }
            w.writeFixed64(dot.hlc.rawValue)
            w.writeByte((deletion ? 1 : 0) | (version.creation == dot ? 2 : 0))
            w.writeString(version.id.name)
            w.writeVarint(UInt64(count))
            guard !deletion else { return }
            if head != nil {
                w.writeString("")
                writeDigest(into: &w, name: "", valueSize: systemSize) { w in
                    writeSystemValue(into: &w, recordType: version.recordType, parent: version.parent, zone: zone)
                }
            }
            version.writeEntrySlots(stampedBy: dot, among: among, into: &w) { w, name, valueSize, value in
                writeDigest(into: &w, name: name, valueSize: valueSize, value)
            }
        }
    }

    /// The canonical bytes of entry `sequence` whose rest is `tail` (``encodedEntry(of:dot:sequence:)``
    /// without a sequence).
    package static func encodedEntry(sequence: UInt64, tail: [UInt8]) -> [UInt8] {
        WireWriter.encode(size: WireSize.varint(sequence) &+ tail.count) { w in
            w.writeVarint(sequence)
            tail.withUnsafeBytes { w.writeRaw($0) }
        }
    }

    /// The chain value before a log's first entry: SHA-256 over ``WriteEntry/chainContext``, the
    /// zone ID and the writer. The incarnation is not in it: a zone that adopts another
    /// incarnation keeps its records and their logs, and the checkpoints, which name the
    /// incarnation, are signed again.
    package static func chainStart(zone: RecordZone.ID, writer: NodeID) -> [UInt8] {
        let bytes = WireWriter.encode(size: WireSize.zoneID(zone) &+ 16) { w in
            w.writeZoneID(zone)
            w.writeNodeID(writer)
        }
        return sha256(WriteEntry.chainContext, bytes)
    }

    /// The chain value after `entry`, given the value before it: SHA-256 over both.
    package static func chain(_ previous: [UInt8], _ entry: WriteEntry) -> [UInt8] {
        chain(previous, entry.encoded())
    }

    /// The chain value after the entry whose canonical bytes are `entryBytes`.
    package static func chain(_ previous: [UInt8], _ entryBytes: [UInt8]) -> [UInt8] {
        sha256(previous, entryBytes)
    }

    /// The chain value after `entries`, which follow `start` without a gap; nil when they do
    /// not (a sequence missing, repeated or out of order), or when their timestamps do not
    /// strictly increase.
    package static func chain(
        from start: [UInt8], after previous: (sequence: UInt64, hlc: HLC), _ entries: [WriteEntry]
    ) -> [UInt8]? {
        guard let chains = pageChains(from: start, after: previous, entries.map(EncodedEntry.init)) else { return nil }
        return chains.last ?? start
    }

    /// The chain value after each run of ``WriterLogPage/maxEntries`` of `entries` (the last
    /// run may be shorter), hashed on from `start`; nil under the conditions of
    /// ``chain(from:after:_:)``.
    package static func pageChains(
        from start: [UInt8], after previous: (sequence: UInt64, hlc: HLC),
        _ entries: [EncodedEntry]
    ) -> [[UInt8]]? {
        var out = [[UInt8]]()
        var value = start
        var last = previous
        for (i, e) in entries.enumerated() {
            guard last.sequence < UInt64.max, e.sequence == last.sequence &+ 1, e.hlc > last.hlc || last.sequence == 0
            else { return nil }
            value = chain(value, e.bytes)
            if (i &+ 1) % WriterLogPage.maxEntries == 0 || i == entries.count &- 1 { out.append(value) }
            last = (e.sequence, e.hlc)
        }
        return out
    }

    /// The digest of slot `name` whose value bytes (`valueSize` of them) `body` writes: the bytes
    /// when they are short, otherwise the first ``WriteEntry/digestBytes`` bytes of SHA-256 over
    /// ``WriteEntry/slotDigestContext``, the name and the bytes, hashed from scratch space.
    static func digest(name: String, valueSize: Int, _ body: (inout WireWriter) -> Void) -> [UInt8] {
        if valueSize <= WriteEntry.inlineSlotBytes { return WireWriter.encode(size: valueSize, body) }
        return hashed(name: name, valueSize: valueSize, body) { Array($0) }
    }

    /// Writes a slot digest as an entry holds it, its length byte then its bytes, as
    /// ``digest(name:valueSize:_:)`` computes it.
    static func writeDigest(into w: inout WireWriter, name: String, valueSize: Int, _ body: (inout WireWriter) -> Void)
    {
        if valueSize <= WriteEntry.inlineSlotBytes {
            w.writeByte(UInt8(truncatingIfNeeded: valueSize))
            body(&w)
        } else {
            w.writeByte(UInt8(WriteEntry.digestBytes))
            hashed(name: name, valueSize: valueSize, body) { w.writeRaw($0) }
        }
    }

    /// `use` of the first ``WriteEntry/digestBytes`` bytes of SHA-256 over
    /// ``WriteEntry/slotDigestContext``, the name and the value bytes `body` writes, hashed
    /// from scratch space.
    static func hashed<R>(
        name: String, valueSize: Int, _ body: (inout WireWriter) -> Void, _ use: (UnsafeRawBufferPointer) -> R
    ) -> R {
        let size = WireSize.string(name) &+ valueSize
        return withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) { scratch in
            // A hashed value is at least 16 bytes, so there is always a base address.
            guard let base = scratch.baseAddress else {
                preconditionFailure("a temporary allocation of \(size) bytes has no address")
            }
            var w = WireWriter(start: base, count: size)
            w.writeString(name)
            body(&w)
            precondition(w.remaining == 0, "ShoalWire size pass and write pass disagree")
            return WriteEntry.slotDigestContext.withUnsafeBytes { context in
                sha256(context, UnsafeRawBufferPointer(start: base, count: size)) {
                    use(UnsafeRawBufferPointer(rebasing: $0.prefix(WriteEntry.digestBytes)))
                }
            }
        }
    }

    /// SHA-256 over `first` then `second`, as 32 bytes.
    static func sha256(_ first: [UInt8], _ second: [UInt8]) -> [UInt8] {
        first.withUnsafeBytes { a in second.withUnsafeBytes { b in sha256(a, b) { Array($0) } } }
    }

    /// `use` of the SHA-256 over `first` then `second`, read in place. A receiver hashes a few
    /// short inputs per write (its slots, its chain link), so the hash must not allocate: where
    /// the processor has SHA instructions it is ShoalWire's ``SHA256Stream``, elsewhere
    /// swift-crypto's, whose every hash allocates a context and copies it to finalize.
    static func sha256<R>(
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ use: (UnsafeRawBufferPointer) -> R
    ) -> R {
        if SHA256Stream.isAvailable {
            var s = SHA256Stream()
            s.update(first)
            s.update(second)
            return s.finalize().withBytes(use)
        }
        var h = SHA256()
        h.update(bufferPointer: first)
        h.update(bufferPointer: second)
        return h.finalize().withUnsafeBytes(use)
    }
}

extension WriterLog {
    /// How a range's entries and a batch's versions failed to match (Spec/authenticated-writes.md §4–§5).
    package struct Mismatch: Error, Hashable, Sendable, CustomStringConvertible {
        /// What failed, naming the writer, the entry or the record.
        package var description: String
    }

    /// The form each of `entries` (consecutive entries of `writer`'s log) travels in beside the
    /// batch's `versions`: implied by a version that shows the write whole, partial when the
    /// version shows only some of its slots, whole when no version of the batch shows it.
    package static func items(for entries: [WriteEntry], of writer: NodeID, versions: [Record]) -> [WriterLogSection
        .Item]
    {
        let made = madeBy(writer, versions: versions)
        let index = names(versions)
        return entries.map { e in
            item(for: e, hlc: e.hlc, of: writer, versions: versions, made: made, index: index) ?? .whole(e)
        }
    }

    /// The timestamps of `writer`'s writes that `versions` show whole because each is the
    /// version the write made, by version index: its vector names the writer alone, at the
    /// write (every later write moves the vector). A write is of one record, so its entry is
    /// implied by that version without being read.
    package static func madeBy(_ writer: NodeID, versions: [Record]) -> [HLC: Int] {
        madeBy(writer, vectors: versions.map(\.versionVector))
    }

    /// As ``madeBy(_:versions:)`` from the versions' vectors alone.
    package static func madeBy(_ writer: NodeID, vectors: [VersionVector]) -> [HLC: Int] {
        var out = [HLC: Int]()
        for (i, v) in vectors.enumerated() where v.entries.count == 1 {
            let hlc = v[writer]
            if hlc != .zero { out[hlc] = i }
        }
        return out
    }

    /// As ``items(for:of:versions:)`` for entries given with their timestamps, read only where
    /// `made` (``madeBy(_:versions:)``) names no version; nil when one of the others is unread.
    package static func items(
        for entries: [(hlc: HLC, entry: WriteEntry?)], of writer: NodeID, versions: [Record],
        made: [HLC: Int]
    ) -> [WriterLogSection.Item]? {
        let index = names(versions)
        var out = [WriterLogSection.Item]()
        out.reserveCapacity(entries.count)
        for (hlc, read) in entries {
            guard let item = item(for: read, hlc: hlc, of: writer, versions: versions, made: made, index: index) else {
                return nil
            }
            out.append(item)
        }
        return out
    }

    static func names(_ versions: [Record]) -> [String: Int] {
        var index = [String: Int]()
        for (i, v) in versions.enumerated() { index[v.id.name] = i }
        return index
    }

    /// The form of the entry at `hlc` (`read`, nil when unread): nil only for an unread entry
    /// `made` does not name.
    static func item(
        for read: WriteEntry?, hlc: HLC, of writer: NodeID, versions: [Record], made: [HLC: Int],
        index: [String: Int]
    ) -> WriterLogSection.Item? {
        if let i = made[hlc] { return .implied(record: i) }
        guard let e = read else { return nil }
        guard let i = index[e.record] else { return .whole(e) }
        let v = versions[i]
        let shown = entry(of: v, dot: Dot(node: writer, hlc: e.hlc), sequence: e.sequence)
        if shown == e {
            return v.versionVector[writer] == e.hlc ? .implied(record: i) : .impliedAt(record: i, hlc: e.hlc)
        }
        // The version may show less of the write (replaced slots), never more or other.
        let held = Set(shown.slots)
        guard shown.isDeletion == e.isDeletion, shown.isCreation == e.isCreation, held.isSubset(of: Set(e.slots)) else {
            return .whole(e)
        }
        let missing = e.slots.filter { !held.contains($0) }
        return .partial(record: i, hlc: e.hlc, missing: missing)
    }

    /// The entries of `range` rebuilt against the batch's `versions` (whole, then sparse as
    /// rebuilt, in the batch's order), or the mismatch: an implied entry whose version has no
    /// write of the writer there, or a partial one whose missing slots the version shows.
    package static func entries(of range: WriterLogSection.Range, versions: [Record]) -> Result<[WriteEntry], Mismatch>
    {
        entries(of: range, versions: versions.map(Optional.some))
    }

    /// As ``entries(of:versions:)`` where some versions could not be rebuilt (nil): an entry
    /// implied by one of those is a mismatch.
    package static func entries(of range: WriterLogSection.Range, versions: [Record?]) -> Result<[WriteEntry], Mismatch>
    {
        resolve(
            range, versions: versions, whole: { $0 },
            implied: { v, dot, sequence, among in entry(of: v, dot: dot, sequence: sequence, among: among) })
    }

    /// Each item of `range` as `whole` makes it of its entry, or, for an entry a version implies
    /// whole (no slot missing), as `implied` makes it of the version, the dot, the sequence and
    /// the slots to look at (``SlotLookup``).
    static func resolve<T>(
        _ range: WriterLogSection.Range, versions: [Record?], whole: (WriteEntry) -> T,
        implied: (Record, Dot, UInt64, [Int]?) -> T
    ) -> Result<[T], Mismatch> {
        if let m = orderMismatch(of: range, versions: versions) { return .failure(m) }
        return resolve(
            range.items[...], firstSequence: range.firstSequence, writer: range.writer, versions: versions,
            whole: whole, implied: implied)
    }

    /// The first item of `range` whose write is not later than the item before it, checked
    /// before any entry is rebuilt: a log's timestamps strictly increase, and without this a
    /// range naming one large version's write again and again would have the receiver hash that
    /// version once per item (up to ``WireLimits/maxMessageItems`` times) only to refuse the
    /// chain afterwards. Items naming a version that is not there are left to the rebuild.
    static func orderMismatch(of range: WriterLogSection.Range, versions: [Record?]) -> Mismatch? {
        var previous: HLC?
        for (offset, item) in zip(0..., range.items) {
            let hlc: HLC
            switch item {
            case .whole(let e): hlc = e.hlc
            case .impliedAt(_, let h), .partial(_, let h, _): hlc = h
            case .implied(let i):
                guard i < versions.count, let v = versions[i]?.versionVector[range.writer], v != .zero else { continue }
                hlc = v
            }
            if let previous, hlc <= previous {
                let sequence = range.firstSequence &+ UInt64(offset)
                return Mismatch(
                    description:
                        "entry #\(sequence) of \(range.writer) is not later than the entry before it (\(hlc) after \(previous)): a log's timestamps strictly increase"
                )
            }
            previous = hlc
        }
        return nil
    }

    /// As ``resolve(_:versions:whole:implied:)`` for `items`, a run of a range's items whose
    /// first is entry `firstSequence` of `writer`'s log.
    static func resolve<T>(
        _ items: ArraySlice<WriterLogSection.Item>, firstSequence: UInt64, writer: NodeID, versions: [Record?],
        whole: (WriteEntry) -> T, implied: (Record, Dot, UInt64, [Int]?) -> T
    ) -> Result<[T], Mismatch> {
        var out = [T]()
        out.reserveCapacity(items.count)
        var lookup = SlotLookup(versions: versions.count)
        for (offset, item) in zip(0..., items) {
            let sequence = firstSequence &+ UInt64(offset)
            switch source(of: item, sequence: sequence, writer: writer, versions: versions) {
            case .failure(let m): return .failure(m)
            case .success(.whole(let e)): out.append(whole(e))
            case .success(.version(let v, let i, let hlc, nil)):
                let dot = Dot(node: writer, hlc: hlc)
                out.append(implied(v, dot, sequence, lookup.slots(of: v, at: i, for: dot)))
            case .success(.version(let v, let i, let hlc, let missing)):
                let dot = Dot(node: writer, hlc: hlc)
                switch entry(
                    of: v, dot: dot, sequence: sequence, missing: missing, among: lookup.slots(of: v, at: i, for: dot))
                {
                case .success(let e): out.append(whole(e))
                case .failure(let m): return .failure(m)
                }
            }
        }
        return .success(out)
    }

    /// An entry of a range as its receiver proves it: its place, its timestamp and its
    /// canonical bytes, which the chain hashes and the store keeps.
    package struct EncodedEntry: Hashable, Sendable {
        /// The entry's place in its writer's log.
        package var sequence: UInt64
        /// The write's timestamp.
        package var hlc: HLC
        /// The entry's canonical bytes (``WriteEntry/encoded()``).
        package var bytes: [UInt8]

        package init(sequence: UInt64, hlc: HLC, bytes: [UInt8]) {
            self.sequence = sequence
            self.hlc = hlc
            self.bytes = bytes
        }

        package init(_ entry: WriteEntry) {
            self.init(sequence: entry.sequence, hlc: entry.hlc, bytes: entry.encoded())
        }
    }

    /// As ``entries(of:versions:)``, each entry as its canonical bytes: an entry a version
    /// implies whole is written straight from the version (``encodedEntry(of:dot:sequence:)``).
    ///
    /// A range of at least ``parallelEntries`` items is rebuilt in two halves on two threads, at
    /// once: the entries are independent of each other (the chain over them is hashed later,
    /// in order), and the receiver does nothing else meanwhile. The result, and the first
    /// mismatch, are those of one pass in order.
    package static func encodedEntries(of range: WriterLogSection.Range, versions: [Record?]) -> Result<
        [EncodedEntry], Mismatch
    > {
        if let m = orderMismatch(of: range, versions: versions) { return .failure(m) }
        let n = range.items.count
        guard n >= parallelEntries, System.coreCount > 1 else {
            return encodedEntries(
                range.items[...], firstSequence: range.firstSequence, writer: range.writer, versions: versions)
        }
        let done = Mutex<[Result<[EncodedEntry], Mismatch>?]>([nil, nil])
        DispatchQueue.concurrentPerform(iterations: 2) { half in
            let lower = half == 0 ? 0 : n / 2, upper = half == 0 ? n / 2 : n
            let result = encodedEntries(
                range.items[lower..<upper], firstSequence: range.firstSequence &+ UInt64(lower),
                writer: range.writer, versions: versions)
            done.withLock { $0[half] = result }
        }
        let halves = done.withLock { $0 }
        switch (halves[0], halves[1]) {
        case (.success(let first)?, .success(let second)?): return .success(first + second)
        case (.failure(let m)?, _), (_, .failure(let m)?): return .failure(m)
        default:
            return .failure(
                Mismatch(description: "the entries of \(range.writer) from #\(range.firstSequence) were not rebuilt"))
        }
    }

    /// The fewest items of a range that ``encodedEntries(of:versions:)`` rebuilds on two threads:
    /// below it, handing half to another thread costs more than it saves.
    static let parallelEntries = 512

    static func encodedEntries(
        _ items: ArraySlice<WriterLogSection.Item>, firstSequence: UInt64, writer: NodeID,
        versions: [Record?]
    ) -> Result<[EncodedEntry], Mismatch> {
        resolve(items, firstSequence: firstSequence, writer: writer, versions: versions, whole: EncodedEntry.init) {
            v, dot, sequence, among in
            EncodedEntry(
                sequence: sequence, hlc: dot.hlc, bytes: encodedEntry(of: v, dot: dot, sequence: sequence, among: among)
            )
        }
    }

    /// The entry `item` of a range stands for, `sequence` in `writer`'s log, rebuilt against
    /// the batch's `versions`; nil when the item does not hold up (see ``entries(of:versions:)``).
    package static func entry(for item: WriterLogSection.Item, sequence: UInt64, writer: NodeID, versions: [Record?])
        -> WriteEntry?
    {
        switch source(of: item, sequence: sequence, writer: writer, versions: versions) {
        case .failure: return nil
        case .success(.whole(let e)): return e
        case .success(.version(let v, _, let hlc, let missing)):
            return try? entry(of: v, dot: Dot(node: writer, hlc: hlc), sequence: sequence, missing: missing).get()
        }
    }

    /// Where a range's item takes its entry from.
    enum Source {
        /// Sent whole.
        case whole(WriteEntry)
        /// Rebuilt from a version of the batch (the `index`th) at a timestamp, with the slots it
        /// lacks (partial).
        case version(Record, index: Int, hlc: HLC, missing: [WriteEntry.Slot]?)
    }

    /// The slots to look at for each entry rebuilt from a version: all of them the first time
    /// a version is named, only the write's own afterwards (``Record/slotIndicesByStamp()``,
    /// built once for a version named again). A range naming many writes of one version (its
    /// earlier writes, or a forged range naming thousands) then costs what the version's slots
    /// do, not its items times them.
    struct SlotLookup {
        private var named: [Bool]
        private var byStamp = [Int: [Dot: [Int]]]()

        init(versions: Int) { named = [Bool](repeating: false, count: versions) }

        /// The slots of `v`, the `i`th version, to look at for `dot`'s entry (nil: all).
        mutating func slots(of v: Record, at i: Int, for dot: Dot) -> [Int]? {
            guard i >= 0, i < named.count else { return nil }
            guard named[i] else {
                named[i] = true
                return nil
            }
            if byStamp[i] == nil { byStamp[i] = v.slotIndicesByStamp() }
            return byStamp[i]?[dot] ?? []
        }
    }

    static func source(of item: WriterLogSection.Item, sequence: UInt64, writer: NodeID, versions: [Record?]) -> Result<
        Source, Mismatch
    > {
        let i: Int
        switch item {
        case .whole(let e): return .success(.whole(e))
        case .implied(let index), .impliedAt(let index, _), .partial(let index, _, _): i = index
        }
        guard i < versions.count else {
            return .failure(
                Mismatch(
                    description: "entry #\(sequence) of \(writer) names version \(i) of a batch of \(versions.count)"))
        }
        guard let v = versions[i] else {
            return .failure(
                Mismatch(
                    description:
                        "entry #\(sequence) of \(writer) is implied by version \(i), which could not be rebuilt here"))
        }
        let hlc: HLC
        var missing: [WriteEntry.Slot]? = nil
        switch item {
        case .impliedAt(_, let h): hlc = h
        case .partial(_, let h, let m):
            hlc = h
            missing = m
        default: hlc = v.versionVector[writer]
        }
        guard hlc != .zero else {
            return .failure(
                Mismatch(
                    description: "entry #\(sequence) of \(writer) is implied by \(v.id), which shows no write of it"))
        }
        return .success(.version(v, index: i, hlc: hlc, missing: missing))
    }

    /// The entry of `dot` rebuilt from `version` with the slots it lacks (`missing`, nil: none
    /// listed); a mismatch when a missing slot is one the version shows.
    static func entry(
        of v: Record, dot: Dot, sequence: UInt64, missing: [WriteEntry.Slot]?,
        among: [Int]? = nil
    ) -> Result<WriteEntry, Mismatch> {
        let e = entry(of: v, dot: dot, sequence: sequence, among: among)
        guard let missing else { return .success(e) }
        let shown = Set(e.slots.map(\.name))
        if let twice = missing.first(where: { shown.contains($0.name) }) {
            return .failure(
                Mismatch(
                    description:
                        "entry #\(sequence) of \(dot.node) lists slot \(twice.name.debugDescription) as missing from \(v.id), which shows it"
                ))
        }
        return .success(
            WriteEntry(
                sequence: sequence, hlc: dot.hlc, isDeletion: e.isDeletion, isCreation: e.isCreation, record: e.record,
                slots: e.slots + missing))
    }

    /// Whether `version` shows only writes of `writer` that `entry(at:)` holds: each slot stamped
    /// by the writer is among its write's entry's slots, with the same digest; a head of the
    /// writer has an entry for the version's record that says whether it deleted it, and a
    /// creation by the writer is an entry's creation (Spec/authenticated-writes.md §5 rule 1;
    /// the type and parent are checked against the heads' entries together, not here). Returns
    /// the mismatch, or nil. `rebuilt`: the dots of entries rebuilt from this very version
    /// (implied by it in a batch), which show it as it is by construction.
    package static func check(_ version: Record, writer: NodeID, rebuilt: [Dot] = [], entry at: (HLC) -> WriteEntry?)
        -> Mismatch?
    {
        check(version, writer: writer, isRebuilt: { rebuilt.contains($0) }, entry: at)
    }

    /// As ``check(_:writer:rebuilt:entry:)``, asking `isRebuilt` whether an entry was rebuilt
    /// from this version.
    package static func check(
        _ version: Record, writer: NodeID, isRebuilt: (Dot) -> Bool, entry at: (HLC) -> WriteEntry?
    ) -> Mismatch? {
        let zone = version.id.zone
        var entries = [HLC: WriteEntry]()
        func find(_ hlc: HLC) -> WriteEntry? {
            if let e = entries[hlc] { return e }
            guard let e = at(hlc), e.record == version.id.name else { return nil }
            entries[hlc] = e
            return e
        }
        // The fields are read in place (iterating the array would copy each): a receiver checks
        // every version of a batch, most of whose slots an entry rebuilt from it covers.
        let slotMismatch: Mismatch? = version.fields.withUnsafeBufferPointer { fields in
            for i in fields.indices {
                // An entry rebuilt from this version holds this slot's digest by construction.
                guard let stamp = fields[i].stamp, stamp.node == writer, !isRebuilt(stamp) else { continue }
                let name = fields[i].name
                guard let e = find(stamp.hlc) else {
                    return Mismatch(
                        description:
                            "\(version.id) holds \(name.debugDescription) stamped \(stamp), a write no entry of \(writer) holds"
                    )
                }
                let digest = slotDigest(name: name, value: fields[i].value, zone: zone)
                guard e.slots.contains(WriteEntry.Slot(name: name, digest: digest)) else {
                    return Mismatch(
                        description:
                            "\(version.id) holds \(name.debugDescription) stamped \(stamp) with a value its writer did not write"
                    )
                }
            }
            return nil
        }
        if let slotMismatch { return slotMismatch }
        // An entry rebuilt from this version says what it says of its heads and creation.
        if let head = version.heads.first(where: { $0.node == writer }),
            !isRebuilt(Dot(node: writer, hlc: version.versionVector[writer]))
        {
            let hlc = version.versionVector[writer]
            guard let e = find(hlc) else {
                return Mismatch(
                    description: "\(version.id) has \(writer) at \(hlc) as a head, a write no entry of it holds")
            }
            guard e.isDeletion == head.isDeletion else {
                return Mismatch(
                    description:
                        "\(version.id) says \(writer)'s write at \(hlc) \(head.isDeletion ? "deleted" : "saved") it; its entry says otherwise"
                )
            }
        }
        if let creation = version.creation, creation.node == writer, !isRebuilt(creation) {
            guard let e = find(creation.hlc), e.isCreation else {
                return Mismatch(
                    description: "\(version.id) names \(creation) as its creation, which no entry of \(writer) says")
            }
        }
        return nil
    }
}

/// The dots of the entries a batch's range rebuilt from each of its versions (implied by the
/// version), by version index. Most versions imply one entry: it is held without an array of
/// its own.
package struct RebuiltDots: Sendable {
    private var first: [Dot?]
    private var more = [Int: [Dot]]()

    /// No dot for any of `count` versions.
    package init(count: Int) {
        first = Array(repeating: nil, count: count)
    }

    /// How many versions.
    package var count: Int { first.count }

    /// Notes `dot` as rebuilt from version `i`.
    package mutating func add(_ dot: Dot, at i: Int) {
        if first[i] == nil { first[i] = dot } else { more[i, default: []].append(dot) }
    }

    /// Whether `dot` was rebuilt from version `i`.
    package func contains(_ dot: Dot, at i: Int) -> Bool {
        guard let f = first[i] else { return false }
        return f == dot || more[i]?.contains(dot) == true
    }
}
