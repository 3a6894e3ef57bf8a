// Reference+Codable: a reference encodes as its target's ID and its delete action.

extension Reference.Action: Codable {}

extension Reference: Codable {
    enum CodingKeys: String, CodingKey {
        case recordID, action
    }

    /// Encodes `recordID` and `action` (0 none, 1 deleteSelf) under those keys.
    /// - Throws: whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(recordID, forKey: .recordID)
        try c.encode(action, forKey: .action)
    }

    /// Decodes a reference from `recordID` and `action`.
    /// - Throws: `DecodingError` when a key is missing, of the wrong type, or an unknown action.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            recordID: try c.decode(Record.ID.self, forKey: .recordID),
            action: try c.decode(Action.self, forKey: .action))
    }
}
