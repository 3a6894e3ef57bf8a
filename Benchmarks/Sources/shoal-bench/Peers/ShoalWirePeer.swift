// ShoalWirePeer: ShoalWire's canonical record encoding, the codec under test.

import ShoalWire

/// ShoalWire: `Record.encoded()` and `Record(decoding:)` (which validates canonical form).
struct ShoalWirePeer: CodecPeer {
    static let name = "shoalwire"

    func messages(from corpus: [Record]) -> [Record] { corpus }
    func encode(_ message: Record) -> [UInt8] { message.encoded() }
    func decode(_ encoded: [UInt8]) throws -> Record { try Record(decoding: encoded) }
    func count(_ encoded: [UInt8]) -> Int { encoded.count }
    func bytes(_ encoded: [UInt8]) -> [UInt8] { encoded }
}
