// ContentHash+SHA256: SHA-256 through swift-crypto, into ShoalWire's ContentHash — and, where the
// processor has SHA instructions, a stream of our own that hashes a chunk and the whole asset
// in one pass over the bytes.

internal import Crypto
internal import CShoalSHA
public import ShoalWire

extension ContentHash {
    /// The SHA-256 of `bytes` (swift-crypto's; the hash that names assets and chunks).
    public static func sha256(_ bytes: UnsafeRawBufferPointer) -> ContentHash {
        ContentHash(SHA256.hash(data: bytes))
    }

    /// The SHA-256 of `bytes` (swift-crypto's; the hash that names assets and chunks).
    public static func sha256(_ bytes: [UInt8]) -> ContentHash {
        bytes.withUnsafeBytes { sha256($0) }
    }

    init(_ digest: SHA256.Digest) {
        self = digest.withUnsafeBytes { raw in
            ContentHash(words: (
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))))
        }
    }
}

/// An incremental SHA-256 whose result is a ``ContentHash``.
///
/// Where the processor has SHA instructions (``SHA256Stream/isAvailable``) it is a
/// ``SHA256Stream``, so that ``updateHashing(_:)`` can hash a chunk and feed it to the whole in
/// one pass, two streams at once (2,830 MB/s of hashed bytes against 1,570 for one stream on
/// this project's AMD EPYC, Spec/assets.md §2.3). Elsewhere it is swift-crypto's, and the chunk
/// is hashed in a second pass. Either way the result is the same SHA-256.
struct ContentHasher {
    private enum Backend {
        case stream(SHA256Stream)
        case crypto(SHA256)
    }

    private var backend: Backend

    /// A hasher using the SHA instructions when `instructions` and the processor has them.
    init(instructions: Bool = true) {
        backend = instructions && SHA256Stream.isAvailable ? .stream(SHA256Stream()) : .crypto(SHA256())
    }

    /// Whether this hasher runs on the SHA instructions.
    var usesInstructions: Bool { if case .stream = backend { true } else { false } }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch backend {
        case .stream(var s):
            s.update(bytes)
            backend = .stream(s)
        case .crypto(var s):
            s.update(bufferPointer: bytes)
            backend = .crypto(s)
        }
    }

    /// Adds `bytes` to the whole and returns the SHA-256 of `bytes` alone: a chunk in content
    /// order, hashed for its own check and for the asset's in the same pass where the
    /// instructions allow.
    mutating func updateHashing(_ bytes: UnsafeRawBufferPointer) -> ContentHash {
        switch backend {
        case .stream(var s):
            var chunk = SHA256Stream()
            SHA256Stream.update(&s, and: &chunk, with: bytes)
            backend = .stream(s)
            return chunk.finalize()
        case .crypto(var s):
            s.update(bufferPointer: bytes)
            backend = .crypto(s)
            return .sha256(bytes)
        }
    }

    func finalize() -> ContentHash {
        switch backend {
        case .stream(let s): s.finalize()
        case .crypto(let s): ContentHash(s.finalize())
        }
    }
}

/// SHA-256 (FIPS 180-4) as a stream of bytes, compressed by the processor's SHA instructions
/// (`CShoalSHA`). Use only where ``isAvailable``; ``ContentHasher`` chooses.
struct SHA256Stream {
    /// Whether this processor has the instructions (x86-64 SHA extensions); checked once.
    static let isAvailable = shoal_sha256_hw_available() == 1

    /// H0…H7.
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19)
    /// Bytes of a block not yet compressed: the first ``pending`` of them.
    private var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pending = 0
    /// Bytes hashed so far (the standard's length, in bytes; wraps past 2^64 bits as it allows).
    private var length: UInt64 = 0

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
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
    static func update(_ a: inout SHA256Stream, and b: inout SHA256Stream, with bytes: UnsafeRawBufferPointer) {
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
        withUnsafeMutableBytes(of: &buffer) { $0.baseAddress.map { ($0 + pending).copyMemory(from: base, byteCount: n) } }
        pending &+= n
        if pending == 64 { compressBuffer() }
        return n
    }

    /// Keeps the last `count` (< 64) bytes of an update, at `base`, as the pending block.
    private mutating func keep(_ base: UnsafeRawPointer, _ count: Int) {
        guard count > 0 else { return }
        withUnsafeMutableBytes(of: &buffer) { $0.baseAddress.map { ($0 + pending).copyMemory(from: base, byteCount: count) } }
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
    func finalize() -> ContentHash {
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
