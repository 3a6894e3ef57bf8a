// Asset+Codable: an asset encodes as its content hash and its size.

extension Asset: Codable {
    enum CodingKeys: String, CodingKey {
        case hash, size
    }

    /// Encodes `hash` (hexadecimal) and `size` under those keys.
    /// - Throws: whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(hash, forKey: .hash)
        try c.encode(size, forKey: .size)
    }

    /// Decodes an asset from `hash` and `size`.
    /// - Throws: `DecodingError` when a key is missing or malformed, or the size is negative.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let size = try c.decode(Int64.self, forKey: .size)
        guard size >= 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: .size, in: c, debugDescription: "an asset's size is 0…2^63-1, not \(size)")
        }
        self.init(hash: try c.decode(ContentHash.self, forKey: .hash), size: size)
    }
}
