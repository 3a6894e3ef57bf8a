// IndexKey: the coding key of a position in a list, an array or a nested array.

/// The coding key of element `index` of an unkeyed container (shown as `[index]` in paths).
struct IndexKey: CodingKey {
    let index: Int
    init(_ index: Int) { self.index = index }
    init?(intValue: Int) { self.index = intValue }
    init?(stringValue: String) { nil }
    var intValue: Int? { index }
    var stringValue: String { "Index \(index)" }
}
