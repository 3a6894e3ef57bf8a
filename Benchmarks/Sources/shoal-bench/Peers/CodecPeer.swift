// CodecPeer: one record codec under test — how it models the corpus, encodes and decodes a record.

import ShoalWire

/// A codec the `codec` suite compares: ShoalWire itself or a peer.
///
/// The corpus is converted to the codec's own model (`Message`) once, outside the timed region;
/// then encoding is `Message → Encoded` and decoding `Encoded → Message`, one record at a time.
protocol CodecPeer {
    /// The codec's model of one record.
    associatedtype Message: Equatable
    /// One encoded record, in the form the codec produces and consumes.
    associatedtype Encoded

    /// The `impl=` name on result lines.
    static var name: String { get }
    /// The corpus in the codec's model (not timed).
    func messages(from corpus: [Record]) throws -> [Message]
    /// Encodes one record.
    func encode(_ message: Message) throws -> Encoded
    /// Decodes one record.
    func decode(_ encoded: Encoded) throws -> Message
    /// Size of an encoding in bytes.
    func count(_ encoded: Encoded) -> Int
    /// The bytes of an encoding (for compression; not timed).
    func bytes(_ encoded: Encoded) -> [UInt8]
}
