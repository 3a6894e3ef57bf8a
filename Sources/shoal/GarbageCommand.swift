// GarbageCommand: `shoal gc` — remove asset chunks no record references; and the interval option
// with which `shoal serve` does it on its own.

import ArgumentParser
import Foundation
import Logging
import Shoal

struct GarbageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Remove asset files no record references (what a daemon also does every --asset-gc-interval).",
        discussion:
            "Asset chunks and manifests that no live record and no kept tombstone of any zone names are removed, and segment files with mostly dead bytes compacted. Assets being saved or fetched are never removed. --dry-run only reports."
    )
    @OptionGroup var options: NodeOptions
    @Flag(name: .customLong("dry-run"), help: "Report what would be removed; remove nothing.") var dryRun = false

    func run() async throws {
        try await reportFailures {
            try await options.withNode { node in
                let r = try await node.collectAssetGarbage(dryRun: dryRun)
                if options.json {
                    Console.current.line(
                        RecordFormatting.jsonText(
                            [
                                "dryRun": dryRun, "manifestsRemoved": r.manifestsRemoved,
                                "manifestsKept": r.manifestsKept,
                                "chunksRemoved": r.chunksRemoved, "chunksKept": r.chunksKept,
                                "bytesRemoved": r.bytesRemoved,
                                "segmentsCompacted": r.segmentsCompacted, "segmentBytesFreed": r.segmentBytesFreed,
                                "damagedManifestsRemoved": r.damagedManifestsRemoved,
                                "temporaryFilesRemoved": r.temporaryFilesRemoved
                            ] as [String: Any]))
                } else {
                    Console.current.line((dryRun ? "would have " : "") + "\(r)")
                }
            }
        }
    }
}

/// A time interval option: a number with `s`, `m`, `h` or `d` (`90s`, `30m`, `6h`, `1d`); 0 is never.
struct Interval: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let seconds: Int

    init(seconds: Int) { self.seconds = seconds }

    init?(argument: String) {
        var text = argument.trimmingCharacters(in: .whitespaces)
        let units: [(String, Int)] = [("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        var scale = 1
        if let (unit, factor) = units.first(where: { text.hasSuffix($0.0) }) {
            text.removeLast(unit.count)
            scale = factor
        }
        guard let count = Int(text), count >= 0, count <= 365 * 86_400 / scale else { return nil }
        seconds = count * scale
    }

    var description: String { seconds == 0 ? "never" : seconds % 3600 == 0 ? "\(seconds / 3600)h" : "\(seconds)s" }
    var defaultValueDescription: String { description }
}

extension ServeCommand {
    /// Collects asset garbage every `interval` until cancelled, logging what it freed (a line at
    /// info when it removed something, at debug otherwise) and any failure (the next round tries again).
    static func collectGarbage(_ node: ShoalNode, every interval: Interval, log: Logger) async {
        guard interval.seconds > 0 else { return }
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(interval.seconds))
            guard !Task.isCancelled else { return }
            do {
                let r = try await node.collectAssetGarbage()
                log.log(
                    level: r.manifestsRemoved + r.chunksRemoved + r.temporaryFilesRemoved > 0 ? .info : .debug,
                    "asset garbage collected: \(r)")
            } catch {
                log.warning(
                    "asset garbage collection failed; it runs again in \(interval)", metadata: ["error": "\(error)"])
            }
        }
    }
}
