// ContentHash+SHA256: SHA-256 through swift-crypto, into ShoalWire's ContentHash — and, where the
// processor has SHA instructions, ShoalWire's SHA256Stream, which hashes a chunk and the whole
// asset in one pass over the bytes.

internal import Crypto
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
            ContentHash(
                words: (
                    UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                    UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                    UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                    UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
                ))
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
