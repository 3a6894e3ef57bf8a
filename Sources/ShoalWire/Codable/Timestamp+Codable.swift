// Timestamp+Codable: a timestamp encodes as its whole milliseconds since 1970, one integer.

extension Timestamp: Codable {
    /// Encodes ``millisecondsSince1970`` as a single integer.
    /// - Throws: whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(millisecondsSince1970)
    }

    /// Decodes a timestamp from a single integer of milliseconds since 1970.
    /// - Throws: `DecodingError` when the value is not an integer that fits `Int64`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        self.init(millisecondsSince1970: try c.decode(Int64.self))
    }
}
