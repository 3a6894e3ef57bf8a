// NonFiniteText: how nested JSON writes the doubles JSON has no numbers for.

/// The text nested JSON uses for doubles JSON cannot write.
enum NonFiniteText {
    static let nan = "NaN", infinity = "Infinity", minusInfinity = "-Infinity"

    static func value(_ text: String) -> Double? {
        switch text {
        case nan: return .nan
        case infinity: return .infinity
        case minusInfinity: return -.infinity
        default: return nil
        }
    }
}
