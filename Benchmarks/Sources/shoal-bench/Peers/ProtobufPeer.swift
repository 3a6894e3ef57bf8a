// ProtobufPeer: swift-protobuf's binary encoding of Proto/notes.proto.

import ShoalWire
import SwiftProtobuf

/// swift-protobuf: `serializedBytes()` and `init(serializedBytes:)` on the generated `Shoal_Bench_Record`.
struct ProtobufPeer: CodecPeer {
    static let name = "swift-protobuf"

    func messages(from corpus: [Record]) -> [Shoal_Bench_Record] { corpus.map(Shoal_Bench_Record.init) }
    func encode(_ message: Shoal_Bench_Record) throws -> [UInt8] { try message.serializedBytes() }
    func decode(_ encoded: [UInt8]) throws -> Shoal_Bench_Record { try Shoal_Bench_Record(serializedBytes: encoded) }
    func count(_ encoded: [UInt8]) -> Int { encoded.count }
    func bytes(_ encoded: [UInt8]) -> [UInt8] { encoded }
}
