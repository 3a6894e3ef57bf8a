// FastCDC: where the next chunk ends — normalized content-defined chunking over a gear hash.

/// The sizes that govern content-defined chunking, and the cut-point search itself.
///
/// FastCDC (Xia et al., 2016/2020) with normalized chunking at level 2: no cut in the first
/// ``minimumBytes``; up to ``averageBytes`` a cut needs the gear hash's top `log2(average) + 2`
/// bits to be zero (harder), after it the top `log2(average) - 2` bits (easier), so sizes gather
/// around the average; at ``maximumBytes`` the chunk is cut regardless. The exact rule, the masks
/// and the table are in `Spec/assets.md` §2; every node must chunk alike for chunks to dedupe.
public struct ChunkingParameters: Hashable, Sendable, CustomStringConvertible {
    /// No chunk but an asset's last is shorter. Default 16 KiB.
    public let minimumBytes: Int
    /// The normalization point, a power of two. Default 64 KiB.
    public let averageBytes: Int
    /// No chunk is longer. Default 256 KiB.
    public let maximumBytes: Int
    /// Top `log2(average) + 2` bits: the mask before the normalization point.
    let smallMask: UInt64
    /// Top `log2(average) - 2` bits: the mask after it.
    let largeMask: UInt64

    /// Shoal's chunking: 16 KiB / 64 KiB / 256 KiB (Spec/assets.md §2.3 gives the measurements).
    public static let standard = ChunkingParameters(checkedMinimum: 16 << 10, average: 64 << 10, maximum: 256 << 10)

    /// Other sizes, for measurements and tests: nodes that exchange assets must all use
    /// ``standard`` (a peer's manifest cut otherwise is refused).
    ///
    /// - Throws: ``AssetError`` `invalidArguments` unless `average` is a power of two of at least
    ///   256 bytes and `1 <= minimum <= average <= maximum <= 64 MiB`.
    public init(minimum: Int, average: Int, maximum: Int) throws(AssetError) {
        guard average >= 256, average & (average - 1) == 0, minimum >= 1, minimum <= average, average <= maximum,
            maximum <= 64 << 20
        else {
            throw AssetError(
                .invalidArguments,
                "chunk sizes \(minimum)/\(average)/\(maximum) are not usable: the average must be a power of two of at least 256 bytes, and 1 ≤ minimum ≤ average ≤ maximum ≤ 64 MiB"
            )
        }
        self.init(checkedMinimum: minimum, average: average, maximum: maximum)
    }

    private init(checkedMinimum minimum: Int, average: Int, maximum: Int) {
        minimumBytes = minimum
        averageBytes = average
        maximumBytes = maximum
        let bits = average.trailingZeroBitCount
        smallMask = ~UInt64(0) << UInt64(64 - (bits + 2))
        largeMask = ~UInt64(0) << UInt64(64 - (bits - 2))
    }

    /// "16384/65536/262144".
    public var description: String { "\(minimumBytes)/\(averageBytes)/\(maximumBytes)" }

    /// The length of the chunk that starts at the beginning of `data`: cut `data` there and call
    /// again on the rest to chunk a whole asset.
    ///
    /// `data` must hold at least ``maximumBytes`` bytes unless it is the end of the asset: the
    /// result is then `data.count` when no cut point is found.
    public func cutPoint(in data: UnsafeRawBufferPointer) -> Int { scan(data) ?? min(data.count, maximumBytes) }

    /// Whether `chunk` is a chunk this chunking would cut: no cut point before its end, and one at
    /// its end unless it is `last` or of the maximum size.
    ///
    /// The same answer as scanning for the first cut point (``cutPoint(in:)``), computed about
    /// three times faster: the gear hash at a byte depends only on the 64 bytes up to it (each
    /// older byte's term is shifted out), so the chunk is checked as four independent stretches
    /// at once, each starting its hash 64 bytes early — four dependency chains for the CPU to
    /// overlap instead of one. A receiver checks every chunk that arrives (Spec/assets.md §5.1).
    func isCanonical(_ chunk: UnsafeRawBufferPointer, last: Bool) -> Bool {
        let count = chunk.count
        guard count >= 1 && count <= maximumBytes else { return false }
        guard count > minimumBytes, let bytes = chunk.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            return last || count == maximumBytes
        }
        let end = count &- 1, normal = min(averageBytes, count)
        return GearTable.words.withUnsafeBufferPointer { gear -> Bool in
            // No cut at a byte before the last, with the small mask up to the normalization point
            // and the large one after it.
            if Self.anyCut(bytes, gear, origin: minimumBytes, from: minimumBytes, to: min(end, normal), mask: smallMask)
                || Self.anyCut(
                    bytes, gear, origin: minimumBytes, from: max(minimumBytes, normal), to: end, mask: largeMask)
            {
                return false
            }
            let atEnd =
                Self.hash(bytes, gear, from: max(minimumBytes, end &- 63), through: end)
                & (end < normal ? smallMask : largeMask) == 0
            return atEnd || last || count == maximumBytes
        }
    }

    /// The gear hash after byte `through`, started (at zero) at byte `from`.
    private static func hash(
        _ bytes: UnsafePointer<UInt8>, _ gear: UnsafeBufferPointer<UInt64>, from: Int, through: Int
    ) -> UInt64 {
        var fp: UInt64 = 0
        var i = from
        while i <= through {
            fp = (fp &<< 1) &+ gear[Int(bytes[i])]
            i &+= 1
        }
        return fp
    }

    /// Whether the hash after any byte in `from..<to` has the bits of `mask` all zero, the hash
    /// starting at zero at byte `origin` (`origin <= from`). Four stretches are hashed in one loop.
    private static func anyCut(
        _ bytes: UnsafePointer<UInt8>, _ gear: UnsafeBufferPointer<UInt64>, origin: Int, from: Int, to: Int,
        mask: UInt64
    ) -> Bool {
        guard from < to else { return false }
        let stretch = (to &- from) / 4
        guard stretch >= 256 else {
            var fp = from > origin ? hash(bytes, gear, from: max(origin, from &- 64), through: from &- 1) : 0
            var i = from
            while i < to {
                fp = (fp &<< 1) &+ gear[Int(bytes[i])]
                if fp & mask == 0 { return true }
                i &+= 1
            }
            return false
        }
        let s1 = from &+ stretch, s2 = s1 &+ stretch, s3 = s2 &+ stretch
        // Each stretch's hash as it stands before its first byte: the 64 bytes before it decide it.
        func warm(_ start: Int) -> UInt64 {
            start > origin ? hash(bytes, gear, from: max(origin, start &- 64), through: start &- 1) : 0
        }
        var f0 = warm(from), f1 = warm(s1), f2 = warm(s2), f3 = warm(s3)
        var k = 0
        while k < stretch {
            f0 = (f0 &<< 1) &+ gear[Int(bytes[from &+ k])]
            f1 = (f1 &<< 1) &+ gear[Int(bytes[s1 &+ k])]
            f2 = (f2 &<< 1) &+ gear[Int(bytes[s2 &+ k])]
            f3 = (f3 &<< 1) &+ gear[Int(bytes[s3 &+ k])]
            if (f0 & mask == 0) || (f1 & mask == 0) || (f2 & mask == 0) || (f3 & mask == 0) { return true }
            k &+= 1
        }
        // The last stretch's remainder (to - from is not always a multiple of four).
        var i = s3 &+ stretch
        while i < to {
            f3 = (f3 &<< 1) &+ gear[Int(bytes[i])]
            if f3 & mask == 0 { return true }
            i &+= 1
        }
        return false
    }

    /// The first hash cut point in `data` (at most `maximumBytes` in), or nil when there is none
    /// (the first `minimumBytes` are never cut inside).
    func scan(_ data: UnsafeRawBufferPointer) -> Int? {
        let n = min(data.count, maximumBytes)
        guard n > minimumBytes, let bytes = data.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        let normal = min(averageBytes, n)
        let small = smallMask, large = largeMask
        return GearTable.words.withUnsafeBufferPointer { gear -> Int? in
            var fp: UInt64 = 0
            var i = minimumBytes
            while i < normal {
                fp = (fp &<< 1) &+ gear[Int(bytes[i])]
                if fp & small == 0 { return i &+ 1 }
                i &+= 1
            }
            while i < n {
                fp = (fp &<< 1) &+ gear[Int(bytes[i])]
                if fp & large == 0 { return i &+ 1 }
                i &+= 1
            }
            return nil
        }
    }
}
