// LogHandler: the daemon's swift-log output — one readable line, or one JSON object, per event.

import Foundation
import Logging
import ShoalWire

/// Writes swift-log events to standard output: `2026-11-22T10:00:00.000Z info  message key=value`
/// by default, or `{"level":…,"msg":…,"ts":…,…}` per line with `--log-format json`.
struct ConsoleLogHandler: LogHandler {
    let label: String
    let json: Bool
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        for (k, v) in event.metadata ?? [:] { all[k] = v }
        let now = Timestamp.now().description
        let level = event.level.rawValue
        if json {
            var o: [String: Any] = ["ts": now, "level": level, "msg": event.message.description, "logger": label]
            for (k, v) in all { o[k] = v.description }
            if let data = try? JSONSerialization.data(
                withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])
            {
                Console.current.line(String(decoding: data, as: UTF8.self))
            }
        } else {
            let meta = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            Console.current.line(
                "\(now) \(level.padding(toLength: 7, withPad: " ", startingAt: 0)) \(event.message)\(meta.isEmpty ? "" : " " + meta)"
            )
        }
    }

    /// A logger writing through this handler.
    static func logger(json: Bool, level: Logger.Level) -> Logger {
        var l = Logger(label: "shoal", factory: { ConsoleLogHandler(label: $0, json: json) })
        l.logLevel = level
        return l
    }
}
