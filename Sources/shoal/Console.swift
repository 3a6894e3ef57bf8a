// Console: where a command's output goes — the terminal, or a buffer the daemon sends back.

import Foundation

/// The output of a command. Commands never call `print` directly: run inside the daemon (for a
/// client talking to it over the control socket), their output is captured and sent back.
final class Console: @unchecked Sendable {
    private let lock = NSLock()
    private let sink: (@Sendable (String) -> Void)?

    /// The console of the running command.
    @TaskLocal static var current = Console(sink: nil)

    /// A console writing to the terminal (nil sink) or handing each line to `sink`.
    init(sink: (@Sendable (String) -> Void)?) { self.sink = sink }

    /// Writes a line to standard output (or the sink).
    func line(_ text: String = "") {
        lock.lock(); defer { lock.unlock() }
        if let sink {
            sink(text)
        } else {
            FileHandle.standardOutput.write(Data((text + "\n").utf8))
        }
    }

    /// Reports progress: a line for standard error that the next report replaces. Sent to the
    /// client (the sink) as such, which redraws it in place on a terminal and prints one every two
    /// seconds elsewhere (``ProgressPrinter``); without a sink, an error line.
    func progress(_ text: String) {
        lock.lock(); defer { lock.unlock() }
        if let sink {
            sink("\u{0}p " + text)
        } else {
            FileHandle.standardError.write(Data((text + "\n").utf8))
        }
    }

    /// Writes a line to standard error (or the sink).
    func error(_ text: String) {
        lock.lock(); defer { lock.unlock() }
        if let sink {
            sink("\u{0}e " + text)
        } else {
            FileHandle.standardError.write(Data((text + "\n").utf8))
        }
    }
}

/// `shoal` exit codes (documented in the README and `shoal --help`).
enum ExitStatus: Int32 {
    /// Success.
    case ok = 0
    /// Bad usage or arguments.
    case usage = 2
    /// The input (a file given to inspect, a value) is malformed.
    case badInput = 3
    /// The record, zone or token asked for does not exist or expired.
    case notFound = 4
    /// A save conflicted (serverRecordChanged) or a limit was exceeded.
    case conflict = 5
    /// The data directory is missing, locked or damaged.
    case dataDirectory = 6
    /// Anything else.
    case failure = 1
}

extension Duration {
    /// This duration in seconds, for rates and reports.
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
