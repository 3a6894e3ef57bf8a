// RecordBatch: chunk records laid out in memory exactly as a segment holds them, in a page-aligned
// buffer, so that a batch of received chunks reaches its segment in one aligned write that skips
// the page cache (Spec/assets.md §3.3).

import ShoalWire

/// Chunk records — header, stored bytes, padding: the segment format of ``SegmentStore`` — laid
/// out back to back in a page-aligned buffer, to be written at a page boundary of a segment by
/// one write (``SegmentStore/write(_:at:)``, with `O_DIRECT` where the file system allows it).
///
/// Why: copying received chunks into the page cache cost more CPU than hashing them (`pwrite` was
/// the largest item of a transfer's profile), and the cache pages it fills are never read again
/// soon. One aligned direct write per batch moves the bytes from this buffer to the device.
///
/// Not synchronized. It has one owner at a time — the receiving ``IncomingAsset`` under its lock
/// while it fills, then the ``BatchSync`` that writes it, then the `IncomingAsset` again, which
/// refills it — and is `@unchecked Sendable` for those hand-overs only.
final class RecordBatch: @unchecked Sendable {
    /// Writes of a batch start at a multiple of this and cover a multiple of it: the page size,
    /// and at least the logical block size of the devices direct writes need alignment to.
    static let alignment = 4096

    /// A record in the batch: its chunk and where it starts; the rest as in a segment's
    /// ``SegmentStore/Location``, which ``SegmentStore/reserve(_:)`` makes of it.
    struct Entry: Sendable {
        let hash: ContentHash
        let tag: UInt8
        let offset: Int
        let stored: Int
        let length: Int
    }

    private let buffer: UnsafeMutableRawBufferPointer
    /// Bytes laid out: the records, a multiple of 8.
    private(set) var count = 0
    /// The records, in offset order.
    private(set) var entries: [Entry] = []
    private var positions: [ContentHash: Int] = [:]

    /// A batch that holds up to `capacity` bytes of records (rounded up to ``alignment``).
    init(capacity: Int) {
        buffer = .allocate(byteCount: Self.aligned(max(capacity, 1)), alignment: Self.alignment)
    }

    deinit { buffer.deallocate() }

    /// The most record bytes the batch holds.
    var capacity: Int { buffer.count }

    var isEmpty: Bool { entries.isEmpty }

    /// `n` rounded up to a multiple of ``alignment`` (`n` is a buffer or batch size, far from
    /// `Int.max`; saturates rather than wraps).
    static func aligned(_ n: Int) -> Int {
        let (sum, overflow) = n.addingReportingOverflow(alignment - 1)
        return overflow ? Int.max & ~(alignment - 1) : sum & ~(alignment - 1)
    }

    /// Whether a record of `stored` bytes still fits.
    func fits(stored: Int) -> Bool { SegmentStore.recordBytes(stored) <= buffer.count - count }

    /// Lays out a record for the chunk `hash` (`stored` bytes with `tag`, `length` raw bytes);
    /// false, with nothing changed, when it does not fit.
    func append(_ hash: ContentHash, tag: UInt8, stored: UnsafeRawBufferPointer, length: Int) -> Bool {
        guard fits(stored: stored.count), let base = buffer.baseAddress else { return false }
        let entry = Entry(hash: hash, tag: tag, offset: count, stored: stored.count, length: length)
        SegmentStore.encodeHeader(
            tag: tag, stored: stored.count, length: length, hash: hash,
            into: UnsafeMutableRawBufferPointer(start: base + count, count: SegmentStore.headerBytes))
        let body = base + count + SegmentStore.headerBytes
        if let source = stored.baseAddress { body.copyMemory(from: source, byteCount: stored.count) }
        (body + stored.count).initializeMemory(as: UInt8.self, repeating: 0, count: SegmentStore.padding(stored.count))
        positions[hash] = entries.count
        entries.append(entry)
        count += SegmentStore.recordBytes(stored.count)
        return true
    }

    /// The record of `hash`, when the batch holds one.
    func entry(_ hash: ContentHash) -> Entry? { positions[hash].map { entries[$0] } }

    /// The stored bytes of a record of this batch.
    func stored(_ entry: Entry) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(
            rebasing: buffer[
                (entry.offset + SegmentStore.headerBytes)..<(entry.offset + SegmentStore.headerBytes + entry.stored)])
    }

    /// Takes back the last record laid out (its chunk failed a check).
    func removeLast() {
        guard let last = entries.popLast() else { return }
        positions[last.hash] = nil
        count = last.offset
    }

    /// Gives up the record of `hash`: its magic is zeroed, so the write carries dead space that
    /// no scan indexes. False when the batch holds no record of it.
    @discardableResult
    func drop(_ hash: ContentHash) -> Bool {
        guard let i = positions.removeValue(forKey: hash), let base = buffer.baseAddress else { return false }
        let entry = entries.remove(at: i)
        for (h, p) in positions where p > i { positions[h] = p - 1 }
        base.advanced(by: entry.offset).initializeMemory(as: UInt8.self, repeating: 0, count: 4)
        if entries.isEmpty { count = 0 }
        return true
    }

    /// Empties the batch for refilling.
    func removeAll() {
        count = 0
        entries.removeAll(keepingCapacity: true)
        positions.removeAll(keepingCapacity: true)
    }

    /// What a write of the batch covers: the records, then zeros up to a multiple of
    /// ``alignment`` (the zeros are dead space to a scan, which looks for the next record's magic
    /// at 8-byte boundaries).
    func alignedBytes() -> UnsafeRawBufferPointer {
        let end = Self.aligned(count)
        if let base = buffer.baseAddress, end > count {
            (base + count).initializeMemory(as: UInt8.self, repeating: 0, count: end - count)
        }
        return UnsafeRawBufferPointer(rebasing: buffer[..<end])
    }
}
