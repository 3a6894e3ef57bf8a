// NamePrefix: the first eight bytes of a name as one word, so most name comparisons take one step.

/// A name's first eight bytes as a big-endian word (zero after its end) and its length.
///
/// Two names whose words differ are ordered as their words are (a word's zero padding sorts
/// before any byte it hides, as a shorter name sorts before a longer one it starts); names of at
/// most eight bytes with equal words are ordered by length; only longer names with equal words
/// need the bytes compared (``compare(_:_:_:_:)``).
struct NamePrefix {
    let word: UInt64
    let count: Int

    /// The prefix of `name`, with `loadable` bytes readable from its start (itself and what
    /// follows it in the same input): one 8-byte load when there are 8, else byte by byte.
    @inline(__always)
    init(_ name: UnsafeRawBufferPointer, loadable: Int) {
        count = name.count
        guard let p = name.baseAddress else {
            word = 0
            return
        }
        if loadable >= 8 {
            let w = UInt64(bigEndian: p.loadUnaligned(as: UInt64.self))
            word = count >= 8 ? w : w & ~(~UInt64(0) &>> UInt64(truncatingIfNeeded: count &* 8))
        } else {
            var w: UInt64 = 0
            for i in 0..<min(count, 8) {
                w |= UInt64(p.load(fromByteOffset: i, as: UInt8.self)) &<< UInt64(truncatingIfNeeded: 56 &- 8 &* i)
            }
            word = w
        }
    }

    /// The order of `a` (prefix `pa`) against `b` (prefix `pb`), as `UTF8Order.compare(a, b)`.
    @inline(__always)
    static func compare(_ a: UnsafeRawBufferPointer, _ pa: NamePrefix, _ b: UnsafeRawBufferPointer, _ pb: NamePrefix)
        -> Int
    {
        if pa.word != pb.word { return pa.word < pb.word ? -1 : 1 }
        if pa.count <= 8 && pb.count <= 8 { return pa.count == pb.count ? 0 : (pa.count < pb.count ? -1 : 1) }
        return UTF8Order.compare(a, b)
    }
}
