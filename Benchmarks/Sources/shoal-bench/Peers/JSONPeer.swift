// JSONPeer: Foundation's JSONEncoder and JSONDecoder on a Codable mirror of the record.

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import ShoalWire

/// Foundation JSON: one `JSONEncoder` and one `JSONDecoder`, reused for every record.
///
/// Default settings but `.sortedKeys`: without it the key order of an object varies from process
/// to process (it follows hashing, which is seeded per process), and so would `zstd_bytes`.
struct JSONPeer: CodecPeer {
    static let name = "json"

    let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = .sortedKeys
        return e
    }()
    let decoder = JSONDecoder()

    func messages(from corpus: [Record]) -> [JSONRecord] { corpus.map(JSONRecord.init) }
    func encode(_ message: JSONRecord) throws -> Data { try encoder.encode(message) }
    func decode(_ encoded: Data) throws -> JSONRecord { try decoder.decode(JSONRecord.self, from: encoded) }
    func count(_ encoded: Data) -> Int { encoded.count }
    func bytes(_ encoded: Data) -> [UInt8] { [UInt8](encoded) }
}
