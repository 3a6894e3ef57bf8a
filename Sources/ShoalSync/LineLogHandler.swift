// LineLogHandler: a swift-log handler that hands each message's text to a closure.

package import Logging

/// Hands the text of each message logged at or above ``logLevel`` to a closure: how the
/// simulator and the tests print the engine's trace (``SyncNode/setTrace(_:)``).
package struct LineLogHandler: LogHandler {
    /// Where each line goes.
    let lines: @Sendable (String) -> Void
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .trace

    /// A handler that sends every line to `lines`.
    package init(_ lines: @escaping @Sendable (String) -> Void) {
        self.lines = lines
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        lines("\(event.message)")
    }
}
