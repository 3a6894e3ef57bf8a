// SavePlanner: builds the versions of a batch of new records on another core while the store writes.

import Dispatch
import ShoalWire

/// Plans saves of new records — validate, stamp, encode, and find the declared-index entries and
/// `deleteSelf` targets each adds — on a global queue, a run of ``runLength`` at a time, while the
/// store's thread writes the runs already planned: a bulk save's encoding overlaps its SQLite
/// work instead of preceding it, and the store's thread does little per record besides binding
/// rows. Batches under ``inlineBelow`` records are planned on the caller's thread (a hop to
/// another thread would cost a single save more than it saves).
///
/// ``take(_:)`` hands out plans in order, each once; ``finish()`` (also run by `deinit`) waits
/// for the planning thread, so a batch abandoned halfway never leaves it writing freed memory.
final class SavePlanner: @unchecked Sendable {
    /// What the store writes for a new record's version besides the record itself: its canonical
    /// bytes, the declared-index entries it adds (their `order` is the store's to set) and the
    /// names of the records of its zone that its `deleteSelf` references target
    /// (``Store/cascadeTargets(_:)``).
    struct Row {
        /// A slice of one buffer holding the encodings of the record's whole run.
        var bytes: ArraySlice<UInt8>
        var entries: [IndexChange]
        var refs: Set<String>
        /// The save's entry in this node's log for the zone without its sequence, digests
        /// computed (Spec/authenticated-writes.md §2): the store numbers it and chains it.
        var logEntry: [UInt8]
    }

    /// A record's version as saved and its row, or the record's error. A tuple, so that a caller
    /// binding `(record, row)` can move the record on (into the saved records) without a copy.
    typealias Plan = Result<(record: Record, row: Row), ShoalError>

    /// Records planned per hand-over between the two threads.
    static let runLength = 64
    /// Smaller batches are planned on the calling thread.
    static let inlineBelow = 256

    private let count: Int
    /// One slot per record, initialized by the planning thread before it signals the run's
    /// semaphore, moved out by ``take(_:)`` (so slots below `taken` are uninitialized).
    private let slots: UnsafeMutablePointer<Plan>
    private let runsReady: [DispatchSemaphore]
    private let group = DispatchGroup()
    private var taken = 0
    private var finished = false

    /// Starts planning `records` as new, `records[i]` at `dots[i]` over its zone's purge horizon
    /// in `horizons`, with the entries of the `indexed` fields (zone → record type → fields) each
    /// adds.
    init(
        _ records: ArraySlice<Record>, dots: [Dot], horizons: [RecordZone.ID: VersionVector], limits: WireLimits,
        indexed: [RecordZone.ID: [String: [IndexedField]]]
    ) {
        precondition(records.count == dots.count, "one dot per planned record")
        count = records.count
        slots = .allocate(capacity: max(count, 1))
        let runs = count < Self.inlineBelow ? 0 : (count + Self.runLength - 1) / Self.runLength
        runsReady = (0..<runs).map { _ in DispatchSemaphore(value: 0) }
        let start = Context(horizons: horizons, indexed: indexed, limits: limits)
        if runs == 0 {
            var context = start
            Self.plan(records, dots, 0..<count, &context, into: slots)
            return
        }
        nonisolated(unsafe) let out = slots
        let ready = runsReady, total = count
        DispatchQueue.global().async(group: group) {
            var context = start
            for run in 0..<runs {
                let lo = run * Self.runLength
                Self.plan(records, dots, lo..<min(total, lo + Self.runLength), &context, into: out)
                ready[run].signal()
            }
        }
    }

    deinit {
        finish()
        slots.deallocate()
    }

    /// What planning needs besides the records, with the lookups of the last zone and record type
    /// kept (a batch is usually of one zone and one type).
    struct Context {
        let horizons: [RecordZone.ID: VersionVector]
        let indexed: [RecordZone.ID: [String: [IndexedField]]]
        let limits: WireLimits
        var zone: RecordZone.ID? = nil
        var horizon = VersionVector()
        var zoneIndexed: [String: [IndexedField]]? = nil
        var recordType: String? = nil
        var typeIndexed: [IndexedField]? = nil

        init(
            horizons: [RecordZone.ID: VersionVector], indexed: [RecordZone.ID: [String: [IndexedField]]],
            limits: WireLimits
        ) {
            self.horizons = horizons
            self.indexed = indexed
            self.limits = limits
        }

        /// Makes `zone` and `type` the current ones.
        mutating func select(_ zone: RecordZone.ID, _ type: String) {
            if self.zone != zone {
                self.zone = zone
                horizon = horizons[zone] ?? VersionVector()
                zoneIndexed = indexed[zone]
                recordType = nil
            }
            if recordType != type {
                recordType = type
                typeIndexed = zoneIndexed?[type]
            }
        }
    }

    /// Plans `records[range]` (positions from `records.startIndex`) into `out[range]`: stamps and
    /// checks each record and encodes it at the end of one buffer for the run (one allocation per
    /// run rather than per record), which the rows then slice.
    private static func plan(
        _ records: ArraySlice<Record>, _ dots: [Dot], _ range: Range<Int>, _ context: inout Context,
        into out: UnsafeMutablePointer<Plan>
    ) {
        var stamped = [(index: Int, record: Record, bytes: Range<Int>, entries: [IndexChange], logEntry: [UInt8])]()
        stamped.reserveCapacity(range.count)
        var buffer = [UInt8]()
        for i in range {
            let client = records[records.startIndex + i]
            context.select(client.id.zone, client.recordType)
            let record: Record, size: Int
            do throws(ShoalError) {
                (record, size) = try Store.planNewRecord(
                    client, dot: dots[i], base: context.horizon, limits: context.limits)
            } catch {
                (out + i).initialize(to: .failure(error))
                continue
            }
            let at = buffer.count
            // Room for the rest of the run at half as much again as this record: records of one
            // batch are alike, and a buffer that grows moves every encoding written so far.
            if buffer.isEmpty { buffer.reserveCapacity((size + size / 2) * (range.upperBound - i)) }
            buffer.append(contentsOf: repeatElement(0, count: size))
            buffer.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                var w = WireWriter(start: base + at, count: size)
                record.encode(into: &w)
                precondition(w.remaining == 0, "ShoalWire size pass and write pass disagree")
            }
            let entry = WriterLog.encodedEntry(of: record, dot: dots[i], sequence: nil)
            stamped.append((i, record, at..<at + size, indexEntries(record, context.typeIndexed), entry))
        }
        // Popped from the end, so each record moves into its plan instead of being copied.
        while let s = stamped.popLast() {
            let row = Row(
                bytes: buffer[s.bytes], entries: s.entries, refs: Store.cascadeTargets(s.record), logEntry: s.logEntry)
            (out + s.index).initialize(to: .success((s.record, row)))
        }
    }

    /// The declared-index entries `record` (new) adds, for its type's indexed `fields`.
    private static func indexEntries(_ record: Record, _ fields: [IndexedField]?) -> [IndexChange] {
        guard let fields, !record.isDeleted else { return [] }
        var entries = [IndexChange]()
        for f in fields {
            guard let v = record[f.field] else { continue }
            if case .list = v {
                for (kind, value) in IndexValue.entries(v) {
                    entries.append(
                        IndexChange(
                            index: f.id, kind: kind, value: value, name: record.id.name, order: 0, present: true))
                }
            } else if let value = IndexValue.scalar(v) {
                // One value: no array of entries to build first.
                entries.append(
                    IndexChange(
                        index: f.id, kind: Int(v.kind.rawValue), value: value, name: record.id.name, order: 0,
                        present: true))
            }
        }
        return entries
    }

    /// The plan of record `i`, waiting for it if needed. Plans are taken in order, each once.
    func take(_ i: Int) -> Plan {
        precondition(i == taken && i < count && !finished, "SavePlanner plans are taken in order, each once")
        if !runsReady.isEmpty && i % Self.runLength == 0 { runsReady[i / Self.runLength].wait() }
        taken += 1
        return (slots + i).move()
    }

    /// Waits for the planning thread and frees the plans not taken.
    func finish() {
        if finished { return }
        finished = true
        group.wait()
        (slots + taken).deinitialize(count: count - taken)
    }
}
