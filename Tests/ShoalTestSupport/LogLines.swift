// LogLines: a swift-log logger whose lines a test reads back.

package import Logging
import Synchronization

/// The lines ``logger`` logged, in order, for a test to read back.
package final class LogLines: Sendable {
    private let lines = Mutex<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])

    package init() {}

    /// Every line so far: its level and message.
    package var all: [(Logger.Level, String)] { lines.withLock { $0.map { ($0.level, $0.message) } } }

    /// Every line so far as "level message key=value …", the metadata in key order.
    package var rendered: [String] {
        lines.withLock { lines in
            lines.map { line in
                let metadata = line.metadata.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
                return "\(line.level) \(line.message)\(metadata)"
            }
        }
    }

    /// A logger, at `trace`, whose lines go here.
    package var logger: Logger {
        Logger(label: "test") { _ in Handler(lines: self) }
    }

    struct Handler: LogHandler {
        let lines: LogLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            lines.lines.withLock { $0.append((event.level, "\(event.message)", merged)) }
        }
    }
}
