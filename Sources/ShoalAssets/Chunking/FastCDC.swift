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
        guard average >= 256, average & (average - 1) == 0, minimum >= 1, minimum <= average, average <= maximum, maximum <= 64 << 20 else {
            throw AssetError(.invalidArguments, "chunk sizes \(minimum)/\(average)/\(maximum) are not usable: the average must be a power of two of at least 256 bytes, and 1 ≤ minimum ≤ average ≤ maximum ≤ 64 MiB")
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
    func isCanonical(_ chunk: UnsafeRawBufferPointer, last: Bool) -> Bool {
        guard chunk.count >= 1 && chunk.count <= maximumBytes else { return false }
        guard let cut = scan(chunk) else { return last || chunk.count == maximumBytes }
        return cut == chunk.count
    }

    /// The first hash cut point in `data` (at most `maximumBytes` in), or nil when there is none
    /// (the first `minimumBytes` are never cut inside).
    private func scan(_ data: UnsafeRawBufferPointer) -> Int? {
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
