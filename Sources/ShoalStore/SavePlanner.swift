// SavePlanner: builds the versions of a batch of new records on another core while the store writes.

import Dispatch
import ShoalWire

/// Plans saves of new records (validate, stamp, encode: ``Store/planNewRecord(_:dot:base:limits:)``;
/// and the declared-index entries each adds)
/// on a global queue, a run of ``runLength`` at a time, while the store's thread writes the runs
/// already planned: a bulk save's encoding overlaps its SQLite work instead of preceding it.
/// Batches under ``inlineBelow`` records are planned on the caller's thread (a hop to another
/// thread would cost a single save more than it saves).
///
/// ``take(_:)`` hands out plans in order, each once; ``finish()`` (also run by `deinit`) waits
/// for the planning thread, so a batch abandoned halfway never leaves it writing freed memory.
final class SavePlanner: @unchecked Sendable {
    typealias Plan = Result<(record: Record, bytes: [UInt8], entries: [IndexChange]), ShoalError>

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
    /// adds (their `order` is the store's to set).
    init(_ records: ArraySlice<Record>, dots: [Dot], horizons: [RecordZone.ID: VersionVector], limits: WireLimits,
         indexed: [RecordZone.ID: [String: [IndexedField]]]) {
        precondition(records.count == dots.count, "one dot per planned record")
        count = records.count
        slots = .allocate(capacity: max(count, 1))
        let runs = count < Self.inlineBelow ? 0 : (count + Self.runLength - 1) / Self.runLength
        runsReady = (0..<runs).map { _ in DispatchSemaphore(value: 0) }
        let base = records.startIndex
        if runs == 0 {
            for i in 0..<count { (slots + i).initialize(to: Self.plan(records[base + i], dots[i], horizons, limits, indexed)) }
            return
        }
        nonisolated(unsafe) let out = slots
        let ready = runsReady, total = count
        DispatchQueue.global().async(group: group) {
            for run in 0..<runs {
                let lo = run * Self.runLength, hi = min(total, lo + Self.runLength)
                for i in lo..<hi { (out + i).initialize(to: Self.plan(records[base + i], dots[i], horizons, limits, indexed)) }
                ready[run].signal()
            }
        }
    }

    deinit {
        finish()
        slots.deallocate()
    }

    private static func plan(_ client: Record, _ dot: Dot, _ horizons: [RecordZone.ID: VersionVector], _ limits: WireLimits,
                             _ indexed: [RecordZone.ID: [String: [IndexedField]]]) -> Plan {
        let record: Record, bytes: [UInt8]
        do throws(ShoalError) {
            (record, bytes) = try Store.planNewRecord(client, dot: dot, base: horizons[client.id.zone] ?? VersionVector(), limits: limits)
        } catch {
            return .failure(error)
        }
        var entries = [IndexChange]()
        if !record.isDeleted, let fields = indexed[record.id.zone]?[record.recordType] {
            for f in fields {
                guard let v = record[f.field] else { continue }
                for (kind, value) in IndexValue.entries(v) {
                    entries.append(IndexChange(index: f.id, kind: kind, value: value, name: record.id.name, order: 0, present: true))
                }
            }
        }
        return .success((record, bytes, entries))
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
