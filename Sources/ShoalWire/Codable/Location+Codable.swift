// Location+Codable: a location encodes its coordinates, and its optional parts when present.

extension Location: Codable {
    enum CodingKeys: String, CodingKey {
        case latitude, longitude, altitude, horizontalAccuracy, verticalAccuracy, course, speed, timestamp
    }

    /// Encodes latitude and longitude, and each optional part that is not nil, under their names.
    /// - Throws: whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(latitude, forKey: .latitude)
        try c.encode(longitude, forKey: .longitude)
        try c.encodeIfPresent(altitude, forKey: .altitude)
        try c.encodeIfPresent(horizontalAccuracy, forKey: .horizontalAccuracy)
        try c.encodeIfPresent(verticalAccuracy, forKey: .verticalAccuracy)
        try c.encodeIfPresent(course, forKey: .course)
        try c.encodeIfPresent(speed, forKey: .speed)
        try c.encodeIfPresent(timestamp, forKey: .timestamp)
    }

    /// Decodes a location; the optional parts are nil when absent.
    /// - Throws: `DecodingError` when latitude or longitude is missing, or a part has the wrong type.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            latitude: try c.decode(Double.self, forKey: .latitude),
            longitude: try c.decode(Double.self, forKey: .longitude),
            altitude: try c.decodeIfPresent(Double.self, forKey: .altitude),
            horizontalAccuracy: try c.decodeIfPresent(Double.self, forKey: .horizontalAccuracy),
            verticalAccuracy: try c.decodeIfPresent(Double.self, forKey: .verticalAccuracy),
            course: try c.decodeIfPresent(Double.self, forKey: .course),
            speed: try c.decodeIfPresent(Double.self, forKey: .speed),
            timestamp: try c.decodeIfPresent(Timestamp.self, forKey: .timestamp))
    }
}
