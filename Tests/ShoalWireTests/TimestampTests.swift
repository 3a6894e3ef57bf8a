// TimestampTests: converting between Timestamp and Date rounds down and round-trips exactly.

import Foundation
import Testing
import ShoalWire
import ShoalSamples

@Suite struct TimestampTests {
    @Test func dateRoundsDownToTheMillisecond() {
        #expect(Timestamp(Date(timeIntervalSince1970: 1.0005)).millisecondsSince1970 == 1000)
        #expect(Timestamp(Date(timeIntervalSince1970: -0.0005)).millisecondsSince1970 == -1)
        #expect(Timestamp(Date(timeIntervalSince1970: .infinity)).millisecondsSince1970 == .max)
        #expect(Timestamp(Date(timeIntervalSince1970: -.infinity)).millisecondsSince1970 == .min)
        #expect(Timestamp(Date(timeIntervalSince1970: .nan)).millisecondsSince1970 == 0)
    }

    /// `Timestamp(t.date) == t` for every millisecond a `Date` holds exactly (years 0–9999 and
    /// beyond), including ones where multiplying by 1,000 lands just below the integer.
    @Test func dateRoundTripsEveryMillisecond() {
        #expect(
            Timestamp(Timestamp(millisecondsSince1970: -7_707_420_307_838).date).millisecondsSince1970
                == -7_707_420_307_838)
        let seed = UInt64.random(in: 0...UInt64.max)
        var g = SplitMix64(seed: seed)
        for _ in 0..<200_000 {
            let ms = Int64.random(in: -62_000_000_000_000...253_000_000_000_000, using: &g)
            let back = Timestamp(Timestamp(millisecondsSince1970: ms).date).millisecondsSince1970
            guard back == ms else {
                Issue.record("seed \(seed): \(ms) ms came back from Date as \(back)")
                return
            }
        }
    }
}
