// Record.ID+Codable: a record ID encodes as its name and its zone's ID.

extension Record.ID: Codable {
    enum CodingKeys: String, CodingKey {
        case name, zone
    }

    /// Encodes `name` and `zone` under those keys.
    /// - Throws: whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(zone, forKey: .zone)
    }

    /// Decodes a record ID from `name` and `zone`.
    /// - Throws: `DecodingError` when a key is missing or of the wrong type.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name), zone: try c.decode(RecordZone.ID.self, forKey: .zone))
    }
}
