// SuperKey: the coding key under which a superclass encodes its part.

/// The coding key `super`, for `superEncoder()` and `superDecoder()`.
struct SuperKey: CodingKey {
    init() {}
    init?(intValue: Int) { nil }
    init?(stringValue: String) { guard stringValue == "super" else { return nil } }
    var intValue: Int? { nil }
    var stringValue: String { "super" }
}
