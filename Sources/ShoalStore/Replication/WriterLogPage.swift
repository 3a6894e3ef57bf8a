// WriterLogPage: a run of another writer's verified entries kept as one row of writer_entries.

import ShoalWire

/// How a row of `writer_entries` holds its entries (Schema): one entry as its canonical bytes
/// (its chain value, if kept, in the row's `chain`), or a page of consecutive entries, each as
/// its timestamp (8 bytes, little-endian), its length (4 bytes, little-endian), the length of
/// its chain value (1 byte: 0, or 32 in this node's own log), its canonical bytes and its chain
/// value. Entries written or verified together are kept in pages of at most ``maxEntries``, so
/// that keeping them costs a row per page rather than one per entry.
enum WriterLogPage {
    /// The most entries one row holds.
    static let maxEntries = 256

    /// One entry of a row: its sequence, its timestamp, and where its canonical bytes and its
    /// chain value (empty when not kept) are.
    struct Item {
        var sequence: UInt64
        var hlc: HLC
        var bytes: Range<Int>
        var chain: Range<Int>
    }

    /// An entry to keep: its timestamp, canonical bytes and chain value (empty: not kept).
    typealias Entry = (hlc: HLC, bytes: [UInt8], chain: [UInt8])

    /// The page holding `entries` (consecutive), in order.
    static func encode(_ entries: ArraySlice<Entry>) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(entries.reduce(0) { $0 &+ 13 &+ $1.bytes.count &+ $1.chain.count })
        for e in entries {
            withUnsafeBytes(of: e.hlc.rawValue.littleEndian) { out.append(contentsOf: $0) }
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: e.bytes.count).littleEndian) { out.append(contentsOf: $0) }
            out.append(UInt8(truncatingIfNeeded: e.chain.count))
            out.append(contentsOf: e.bytes)
            out.append(contentsOf: e.chain)
        }
        return out
    }

    /// The entries of a row whose last entry is `last` (sequence and timestamp) and which holds
    /// `count` of them in `bytes`, in order; nil when the row does not read as that (a damaged
    /// store).
    static func items(of bytes: [UInt8], count: Int64, last: (sequence: UInt64, hlc: HLC)) -> [Item]? {
        guard count >= 1, count <= Int64(maxEntries), UInt64(count) <= last.sequence else { return nil }
        if count == 1 { return [Item(sequence: last.sequence, hlc: last.hlc, bytes: 0..<bytes.count, chain: 0..<0)] }
        var out = [Item]()
        out.reserveCapacity(Int(count))
        var at = 0
        var sequence = last.sequence &- UInt64(count) &+ 1
        for _ in 0..<count {
            guard bytes.count &- at >= 13 else { return nil }
            var hlc: UInt64 = 0
            var length: UInt32 = 0
            for i in 0..<8 { hlc |= UInt64(bytes[at &+ i]) << (8 &* UInt64(i)) }
            for i in 0..<4 { length |= UInt32(bytes[at &+ 8 &+ i]) << (8 &* UInt32(i)) }
            let chain = Int(bytes[at &+ 12])
            at &+= 13
            guard Int(length) <= bytes.count &- at, chain <= bytes.count &- at &- Int(length) else { return nil }
            let end = at &+ Int(length)
            out.append(Item(sequence: sequence, hlc: HLC(rawValue: hlc), bytes: at..<end, chain: end..<(end &+ chain)))
            at = end &+ chain
            sequence &+= 1
        }
        guard at == bytes.count, out.last?.hlc == last.hlc else { return nil }
        return out
    }
}
