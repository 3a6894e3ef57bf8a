// Location: a geographic position with optional altitude, accuracies, course, speed and time.

/// A geographic position, as CloudKit's `CLLocation` field type carries it.
public struct Location: Hashable, Sendable, CustomStringConvertible {
    /// Degrees north of the equator.
    public var latitude: Double
    /// Degrees east of Greenwich.
    public var longitude: Double
    /// Metres above sea level.
    public var altitude: Double?
    /// Radius of uncertainty of latitude/longitude, in metres.
    public var horizontalAccuracy: Double?
    /// Uncertainty of altitude, in metres.
    public var verticalAccuracy: Double?
    /// Direction of travel in degrees from true north.
    public var course: Double?
    /// Speed in metres per second.
    public var speed: Double?
    /// When the position was measured.
    public var timestamp: Timestamp?

    /// Creates a location.
    public init(
        latitude: Double, longitude: Double, altitude: Double? = nil,
        horizontalAccuracy: Double? = nil, verticalAccuracy: Double? = nil,
        course: Double? = nil, speed: Double? = nil, timestamp: Timestamp? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.course = course
        self.speed = speed
        self.timestamp = timestamp
    }

    public var description: String { "(\(latitude), \(longitude))" }

    // Equality is by canonical bits, like FieldValue.double (NaN equals NaN; -0 differs from +0).
    public static func == (a: Location, b: Location) -> Bool {
        CanonicalDouble.same(a.latitude, b.latitude) && CanonicalDouble.same(a.longitude, b.longitude)
            && CanonicalDouble.same(a.altitude, b.altitude)
            && CanonicalDouble.same(a.horizontalAccuracy, b.horizontalAccuracy)
            && CanonicalDouble.same(a.verticalAccuracy, b.verticalAccuracy)
            && CanonicalDouble.same(a.course, b.course) && CanonicalDouble.same(a.speed, b.speed)
            && a.timestamp == b.timestamp
    }

    public func hash(into h: inout Hasher) {
        for d in [latitude, longitude] { h.combine(CanonicalDouble.bits(d)) }
        for d in [altitude, horizontalAccuracy, verticalAccuracy, course, speed] {
            h.combine(d.map(CanonicalDouble.bits))
        }
        h.combine(timestamp)
    }
}

/// The canonical bit pattern of doubles: every NaN is the quiet NaN `0x7FF8000000000000`;
/// everything else, including −0.0, keeps its bits.
@usableFromInline package enum CanonicalDouble {
    /// The one NaN Shoal encodes.
    @usableFromInline package static let nanBits: UInt64 = 0x7FF8_0000_0000_0000

    @inlinable package static func bits(_ d: Double) -> UInt64 {
        d.isNaN ? nanBits : d.bitPattern
    }

    @inlinable package static func same(_ a: Double, _ b: Double) -> Bool { bits(a) == bits(b) }

    @inlinable package static func same(_ a: Double?, _ b: Double?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?): return bits(x) == bits(y)
        default: return false
        }
    }
}
