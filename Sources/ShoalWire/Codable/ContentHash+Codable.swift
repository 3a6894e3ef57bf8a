// ContentHash+Codable: a content hash encodes as its 64 lowercase hexadecimal digits.

extension ContentHash: Codable {
    /// Encodes ``hex`` as a single string.
    /// - Throws: whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(hex)
    }

    /// Decodes a hash from a string of 64 hexadecimal digits.
    /// - Throws: `DecodingError.dataCorrupted` for any other string.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let h = ContentHash(hex: text) else {
            throw DecodingError.dataCorruptedError(
                in: c, debugDescription: "a content hash is 64 hexadecimal digits, not \(text.debugDescription)")
        }
        self = h
    }
}
