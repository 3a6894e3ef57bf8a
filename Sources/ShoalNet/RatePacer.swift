// RatePacer: how long an asset lane waits so its bytes stay under a configured rate, alone or
// sharing the count with other lanes (SharedRatePacer).

import Synchronization

/// Keeps a stream of byte counts under `bytesPerSecond`, with a burst of at most `burst` bytes
/// passing without a wait after an idle spell (a generic cell-rate algorithm, counted in bytes).
///
/// The asset lanes ask it after each chunk they receive or serve; the wait it returns delays the
/// next requests (receiving) or the next answers (serving). Pure arithmetic on the instants it is
/// given, so tests drive it without a clock.
package struct RatePacer: Sendable {
    /// The rate the bytes keep to on average.
    package let bytesPerSecond: Int
    /// Bytes that pass without a wait after an idle spell.
    package let burst: Int
    /// When everything counted so far would have passed at exactly the rate (nil before the first).
    private var paidUntil: ContinuousClock.Instant? = nil

    /// A pacer for `bytesPerSecond` (at least 1), with a burst of a tenth of a second's bytes
    /// unless `burst` is given.
    package init(bytesPerSecond: Int, burst: Int? = nil) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        self.burst = max(0, burst ?? self.bytesPerSecond / 10)
    }

    /// The time `bytes` take at the rate.
    func duration(of bytes: Int) -> Duration {
        // Capped at about 285 years, so no count converts out of range.
        let nanoseconds = min((Double(max(0, bytes)) / Double(bytesPerSecond) * 1e9).rounded(.up), 9e18)
        return .nanoseconds(Int64(nanoseconds))
    }

    /// Counts `bytes` that passed at `now` and returns how long to wait before the next ones
    /// (zero while the stream is within its rate and burst).
    package mutating func pause(after bytes: Int, at now: ContinuousClock.Instant) -> Duration {
        let start = paidUntil.map { max($0, now) } ?? now
        let paid = start + duration(of: bytes)
        paidUntil = paid
        let wait = paid - now - duration(of: burst)
        return wait > .zero ? wait : .zero
    }
}

/// A ``RatePacer`` several lanes share (each connection's serving lane counts against the one
/// send rate, over all peers together).
package final class SharedRatePacer: Sendable {
    private let pacer: Mutex<RatePacer>

    /// A shared pacer for `bytesPerSecond` (at least 1).
    package init(bytesPerSecond: Int) { pacer = Mutex(RatePacer(bytesPerSecond: bytesPerSecond)) }

    /// ``RatePacer/pause(after:at:)`` on the shared count.
    package func pause(after bytes: Int, at now: ContinuousClock.Instant) -> Duration {
        pacer.withLock { $0.pause(after: bytes, at: now) }
    }
}
