// ContentHash+SHA256: SHA-256 through swift-crypto, into ShoalWire's ContentHash.

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
            ContentHash(words: (
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))))
        }
    }
}

/// An incremental SHA-256 whose result is a ``ContentHash``.
struct ContentHasher {
    private var state = SHA256()

    mutating func update(_ bytes: UnsafeRawBufferPointer) { state.update(bufferPointer: bytes) }

    func finalize() -> ContentHash { ContentHash(state.finalize()) }
}
