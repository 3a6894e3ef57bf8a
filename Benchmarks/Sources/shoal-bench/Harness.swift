// Harness: what a suite is, how a case is timed (monotonic clock, warm-up, best of several runs)
// and how allocations are counted.

import Dispatch
import CMallocCounter
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A benchmark suite: `shoal-bench <name>` runs it and it prints its result lines on stdout.
protocol BenchmarkSuite {
    /// The name on the command line.
    static var name: String { get }
    /// One line for the usage text.
    static var summary: String { get }
    /// Runs every case and prints one line per result.
    static func run() throws
}

/// One timed case: `body` does one iteration of the work (say, decoding the whole corpus) and
/// returns a value that depends on it, so the optimiser cannot drop the work.
struct TimedCase {
    var label: String
    var body: () throws -> Int
}

/// Times cases on a monotonic clock.
///
/// Each case runs once to warm up. Then, `runs` times, every case in turn (round robin, so a
/// burst of load from another process on the shared machine hits all cases alike) repeats its
/// iteration until at least `minimumSeconds` have passed; a run's figure is its elapsed time over
/// its iteration count. A case's result is its best (lowest) run: the closest to the cost of the
/// work itself, with the least interference.
enum Harness {
    /// Runs per case (5, or 1 when `SHOAL_BENCH_QUICK` is set).
    static let runs = quick ? 1 : 5
    /// Minimum time per run, in seconds (0.5, or 0.05 when `SHOAL_BENCH_QUICK` is set).
    static let minimumSeconds = quick ? 0.05 : 0.5

    static var quick: Bool {
        if let v = getenv("SHOAL_BENCH_QUICK") { return String(cString: v) != "0" }
        return false
    }

    /// The best seconds per iteration of each case, in the order given.
    static func bestSecondsPerIteration(_ cases: [TimedCase]) throws -> [Double] {
        for c in cases { blackHole(try c.body()) }
        var best = [Double](repeating: .infinity, count: cases.count)
        for _ in 0..<runs {
            for (i, c) in cases.enumerated() {
                let clock = ContinuousClock()
                let start = clock.now
                var iterations = 0
                var elapsed = 0.0
                repeat {
                    blackHole(try c.body())
                    iterations += 1
                    elapsed = seconds(start.duration(to: clock.now))
                } while elapsed < minimumSeconds
                best[i] = min(best[i], elapsed / Double(iterations))
            }
        }
        return best
    }

    static func seconds(_ d: Duration) -> Double {
        let c = d.components
        return Double(c.seconds) + Double(c.attoseconds) * 1e-18
    }

    /// Megabytes (10^6 bytes) per second for `bytes` processed in `seconds`.
    static func megabytesPerSecond(_ bytes: Int, _ seconds: Double) -> Double {
        Double(bytes) / seconds / 1e6
    }
}

/// Counts allocation calls (malloc, calloc, realloc, the aligned variants) made while `body`
/// runs, on every thread; nil where the counter cannot interpose the allocator (not glibc).
func countAllocations(_ body: () throws -> Void) rethrows -> UInt64? {
    guard shoal_bench_malloc_counting_supported() != 0 else { return nil }
    let before = shoal_bench_malloc_count()
    try body()
    return shoal_bench_malloc_count() &- before
}

/// Keeps a value alive and opaque to the optimiser.
@inline(never) func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Fixed-point text for result lines (`1234.5`), without Foundation's locale-dependent formatting.
func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "nan" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int(scaled / scale)
    var text = (value < 0 && scaled != 0 ? "-" : "") + String(whole)
    if digits > 0 {
        let frac = Int(scaled - Double(whole) * scale)
        let f = String(frac)
        text += "." + String(repeating: "0", count: digits - f.count) + f
    }
    return text
}

/// A benchmark that found its own results wrong (a round trip that did not reproduce its input).
struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Writes a context line on stderr, so stdout holds only result lines.
func printNote(_ text: String) {
    writeStandardError("# \(text)\n")
}

/// Writes `text` to file descriptor 2.
func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}

/// Runs an async suite body from the synchronous `BenchmarkSuite.run()`, passing its error through.
func runBlocking(_ body: @escaping @Sendable () async throws -> Void) throws {
    final class Outcome: @unchecked Sendable { var error: (any Error)? }
    let done = DispatchSemaphore(value: 0)
    let outcome = Outcome()
    Task {
        do { try await body() } catch { outcome.error = error }
        done.signal()
    }
    done.wait()
    if let e = outcome.error { throw e }
}

/// A benchmark that could not produce its numbers, and why.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
