// Timestamp: a point in time at millisecond precision, the `date` field type's exact value.

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// A point in time with millisecond precision: the value of a `date` field.
///
/// Shoal stores dates as whole milliseconds since 1970-01-01T00:00:00Z, so a value round-trips
/// exactly and two nodes hold identical bytes. Convert from `Date` with ``init(_:)`` (which rounds
/// down to the millisecond) and back with ``date``.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z (negative before).
    public var millisecondsSince1970: Int64

    /// Creates a timestamp from milliseconds since 1970.
    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    /// Creates a timestamp from a `Date`, rounding down to the millisecond and clamping to Int64.
    ///
    /// The result is the latest millisecond whose ``date`` is not after `date`, so
    /// `Timestamp(t.date) == t` for every timestamp `t` a `Date` can hold to the millisecond. A NaN
    /// date gives 0.
    public init(_ date: Date) {
        let product = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard !product.isNaN else {
            millisecondsSince1970 = 0
            return
        }
        var ms: Int64
        if product >= 9.2e18 {
            ms = .max
        } else if product <= -9.2e18 {
            ms = .min
        } else {
            ms = Int64(product)
        }
        // The multiplication here and the division in `date` round separately: settle on the
        // neighbour that makes the two inverses.
        if ms < .max, Timestamp(millisecondsSince1970: ms + 1).date <= date {
            ms += 1
        } else if ms > .min, Timestamp(millisecondsSince1970: ms).date > date {
            ms -= 1
        }
        millisecondsSince1970 = ms
    }

    /// The current time.
    public static func now() -> Timestamp { Timestamp(Date()) }

    /// The same instant as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000) }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        a.millisecondsSince1970 < b.millisecondsSince1970
    }

    /// ISO 8601 in UTC with milliseconds, e.g. `2026-11-22T10:00:00.000Z`.
    public var description: String { ISO8601.format(millisecondsSince1970) }

    /// Parses ISO 8601 (`2026-11-22`, `2026-11-22T10:00:00Z`, with optional `.sss` and `±hh:mm`).
    public init?(iso8601 text: String) {
        guard let ms = ISO8601.parse(text) else { return nil }
        millisecondsSince1970 = ms
    }
}

/// A small, locale-free ISO 8601 formatter and parser (proleptic Gregorian, UTC).
package enum ISO8601 {
    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    @usableFromInline package static func format(_ ms: Int64) -> String {
        // Clamp to years 0...9999 for display; the stored value is exact regardless.
        let clamped = min(max(ms, -62_167_219_200_000), 253_402_300_799_999)
        var days = clamped / 86_400_000
        var rem = clamped % 86_400_000
        if rem < 0 { rem += 86_400_000; days -= 1 }
        let (y, m, d) = civil(fromDays: days)
        let h = rem / 3_600_000, mi = rem / 60_000 % 60, s = rem / 1000 % 60, f = rem % 1000
        func pad(_ v: Int64, _ n: Int) -> String {
            let t = String(v)
            return String(repeating: "0", count: max(0, n - t.count)) + t
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2)).\(pad(f, 3))Z"
    }

    @usableFromInline package static func parse(_ text: String) -> Int64? {
        let c = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= c.count else { return nil }
            var v: Int64 = 0
            for k in 0..<n {
                let ch = c[i + k]
                guard ch >= 48, ch <= 57 else { return nil }
                v = v * 10 + Int64(ch - 48)
            }
            i += n
            return v
        }
        func expect(_ ch: UInt8) -> Bool {
            guard i < c.count, c[i] == ch else { return false }
            i += 1
            return true
        }
        guard let y = digits(4), expect(45), let mo = digits(2), expect(45), let d = digits(2),
            (1...12).contains(mo), (1...31).contains(d)
        else { return nil }
        var ms = daysFromCivil(y, mo, d) * 86_400_000
        if i == c.count { return ms }
        guard expect(84) || expect(116) || expect(32),
            let h = digits(2), expect(58), let mi = digits(2), h < 24, mi < 60
        else { return nil }
        ms += h * 3_600_000 + mi * 60_000
        if expect(58) {
            guard let s = digits(2), s < 61 else { return nil }
            ms += s * 1000
            if expect(46) {
                var scale: Int64 = 100
                var any = false
                while i < c.count, c[i] >= 48, c[i] <= 57 {
                    ms += Int64(c[i] - 48) * scale
                    scale /= 10
                    i += 1
                    any = true
                }
                guard any else { return nil }
            }
        }
        if i == c.count || expect(90) || expect(122) {
            return i == c.count ? ms : nil
        }
        let sign: Int64
        if expect(43) { sign = 1 } else if expect(45) { sign = -1 } else { return nil }
        guard let oh = digits(2) else { return nil }
        _ = expect(58)
        guard let om = digits(2), i == c.count else { return nil }
        return ms - sign * (oh * 3_600_000 + om * 60_000)
    }
}
