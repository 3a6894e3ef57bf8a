// SHA256Stream: SHA-256 on the processor's SHA instructions, with no allocation — for asset
// chunks (two streams at once) and the many short hashes of authenticated writes.

internal import CShoalSHA

/// SHA-256 (FIPS 180-4) as a stream of bytes, compressed by the processor's SHA instructions
/// (`CShoalSHA`), without allocating. Use only where ``isAvailable``; elsewhere callers hash
/// with swift-crypto (ShoalAssets' `ContentHasher` and ShoalStore's writer logs choose).
package struct SHA256Stream: Sendable {
    /// Whether this processor has the instructions (x86-64 SHA extensions); checked once.
    package static let isAvailable = shoal_sha256_hw_available() == 1

    /// H0…H7.
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19)
    /// Bytes of a block not yet compressed: the first ``pending`` of them.
    private var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pending = 0
    /// Bytes hashed so far (the standard's length, in bytes; wraps past 2^64 bits as it allows).
    private var length: UInt64 = 0

    /// A stream that has hashed nothing yet.
    package init() {}

    /// Hashes `bytes` on from what the stream has hashed so far.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        length &+= UInt64(bytes.count)
        absorb(base, bytes.count)
    }

    /// Compresses or keeps `count` bytes at `base` (``length`` already counts them).
    private mutating func absorb(_ base: UnsafeRawPointer, _ count: Int) {
        var offset = topUp(base, count)
        let blocks = (count &- offset) / 64
        compress(base + offset, blocks: blocks)
        offset &+= blocks &* 64
        keep(base + offset, count &- offset)
    }

    /// Feeds `bytes` to both streams, in one pass where their blocks line up in `bytes` and
    /// also where they do not (each is aligned to its own pending bytes): the blocks both have
    /// whole go through the two-stream instruction loop.
    package static func update(_ a: inout SHA256Stream, and b: inout SHA256Stream, with bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        let count = bytes.count
        a.length &+= UInt64(count)
        b.length &+= UInt64(count)
        var oa = a.topUp(base, count), ob = b.topUp(base, count)
        let both = min((count &- oa) / 64, (count &- ob) / 64)
        if both > 0 {
            withUnsafeMutablePointer(to: &a.state) { sa in
                withUnsafeMutablePointer(to: &b.state) { sb in
                    sa.withMemoryRebound(to: UInt32.self, capacity: 8) { pa in
                        sb.withMemoryRebound(to: UInt32.self, capacity: 8) { pb in
                            shoal_sha256_hw_blocks2(pa, base + oa, pb, base + ob, both)
                        }
                    }
                }
            }
            oa &+= both &* 64
            ob &+= both &* 64
        }
        a.absorb(base + oa, count &- oa)
        b.absorb(base + ob, count &- ob)
    }

    /// Adds bytes from `base` to a partly filled block, compressing it once full; returns how
    /// many bytes it took (none when no block was pending).
    private mutating func topUp(_ base: UnsafeRawPointer, _ count: Int) -> Int {
        guard pending > 0 else { return 0 }
        let n = min(64 &- pending, count)
        withUnsafeMutableBytes(of: &buffer) {
            $0.baseAddress.map { ($0 + pending).copyMemory(from: base, byteCount: n) }
        }
        pending &+= n
        if pending == 64 { compressBuffer() }
        return n
    }

    /// Keeps the last `count` (< 64) bytes of an update, at `base`, as the pending block.
    private mutating func keep(_ base: UnsafeRawPointer, _ count: Int) {
        guard count > 0 else { return }
        withUnsafeMutableBytes(of: &buffer) {
            $0.baseAddress.map { ($0 + pending).copyMemory(from: base, byteCount: count) }
        }
        pending &+= count
    }

    /// Runs the compression over `blocks` whole blocks at `p`.
    private mutating func compress(_ p: UnsafeRawPointer, blocks: Int) {
        guard blocks > 0 else { return }
        withUnsafeMutablePointer(to: &state) { s in
            s.withMemoryRebound(to: UInt32.self, capacity: 8) { shoal_sha256_hw_blocks($0, p, blocks) }
        }
    }

    private mutating func compressBuffer() {
        let block = buffer
        withUnsafeBytes(of: block) { b in b.baseAddress.map { compress($0, blocks: 1) } }
        pending = 0
    }

    /// The digest: the pending bytes, 0x80, zeros, and the length in bits, big-endian.
    package func finalize() -> ContentHash {
        var s = self
        let bits = s.length &* 8, end = s.pending
        withUnsafeMutableBytes(of: &s.buffer) { b in
            b[end] = 0x80
            for i in (end &+ 1)..<64 { b[i] = 0 }
        }
        if end >= 56 {
            s.compressBuffer()
            s.buffer = (0, 0, 0, 0, 0, 0, 0, 0)
        }
        s.buffer.7 = bits.bigEndian
        s.compressBuffer()
        let h = s.state
        func word(_ hi: UInt32, _ lo: UInt32) -> UInt64 { UInt64(hi) << 32 | UInt64(lo) }
        return ContentHash(words: (word(h.0, h.1), word(h.2, h.3), word(h.4, h.5), word(h.6, h.7)))
    }
}
