// RecordZone.ID+Codable: a zone ID encodes as its name and owner.

extension RecordZone.ID: Codable {
    enum CodingKeys: String, CodingKey {
        case name, owner
    }

    /// Encodes `name` and `owner` under those keys.
    /// - Throws: whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(owner, forKey: .owner)
    }

    /// Decodes a zone ID from `name` and `owner`.
    /// - Throws: `DecodingError` when a key is missing or not a string.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name), owner: try c.decode(String.self, forKey: .owner))
    }
}
