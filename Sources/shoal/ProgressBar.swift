// ProgressBar: a fetch's progress on standard error — one line redrawn in place on a terminal,
// a line per report otherwise.

import Foundation
import Shoal

/// Draws ``AssetProgress`` reports for one asset: a bar, the percentage, megabytes and the rate,
/// as progress lines of the running command's console (``Console/progress(_:)``).
final class ProgressBar: Sendable {
    private let label: String
    private let start = ContinuousClock.now

    /// A bar for fetching `asset`.
    init(fetching asset: Asset) {
        label = "fetching \(asset.hash.hex.prefix(12))…"
    }

    /// Draws `progress`.
    func report(_ progress: AssetProgress) {
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        Console.current.progress(Self.line(label, progress, seconds: seconds))
    }

    /// "fetching 0a1b2c3d4e5f… [############------------]  50%  512.0 of 1024.0 MB  310.2 MB/s".
    static func line(_ label: String, _ p: AssetProgress, seconds: Double) -> String {
        let fraction = min(max(p.fractionCompleted ?? 0, 0), 1)
        let cells = 24, full = Int(fraction * Double(cells))
        let bar = String(repeating: "#", count: full) + String(repeating: "-", count: cells - full)
        let percent = Int(fraction * 100)
        let done = Double(p.completedBytes) / 1e6
        let total = p.totalBytes.map { " of " + mb(Double($0) / 1e6) } ?? ""
        let rate = seconds > 0.05 ? "  " + mb(done / seconds) + " MB/s" : ""
        return
            "\(label) [\(bar)] \(String(repeating: " ", count: max(0, 3 - String(percent).count)))\(percent)%  \(mb(done))\(total) MB\(rate)"
    }

    /// `x` with one decimal ("512.0").
    private static func mb(_ x: Double) -> String {
        let tenths = Int((x * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}

/// Prints a daemon's progress lines on the client: redrawn in place on a terminal; elsewhere (a
/// file, a pipe) the first at once, then at most one every two seconds, and the latest before any
/// other output and at the end — so a log shows where a long fetch got to without a line per
/// report.
struct ProgressPrinter {
    /// Whether standard error is a terminal.
    let terminal: Bool
    /// A line drawn in place and not yet ended (terminal).
    private var open = false
    /// When a line was last printed, and the latest one held back since (not a terminal).
    private var lastShown: ContinuousClock.Instant? = nil
    private var held: String? = nil

    init(terminal: Bool) { self.terminal = terminal }

    /// Shows a progress line.
    mutating func show(_ text: String) {
        if terminal {
            // Back to the start of the line and clear it.
            FileHandle.standardError.write(Data(("\r\u{1B}[2K" + text).utf8))
            open = true
            return
        }
        let now = ContinuousClock.now
        if let lastShown, now - lastShown < .seconds(2) {
            held = text
            return
        }
        FileHandle.standardError.write(Data((text + "\n").utf8))
        lastShown = now
        held = nil
    }

    /// Ends the progress line before other output: the line drawn in place, or the one held back.
    mutating func settle() {
        if open {
            FileHandle.standardError.write(Data("\n".utf8))
            open = false
        }
        if let held {
            FileHandle.standardError.write(Data((held + "\n").utf8))
            self.held = nil
        }
    }
}
