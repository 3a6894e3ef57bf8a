// AssetCommands: `shoal asset get` — an asset field's bytes into a file, fetched from peers when needed.

import ArgumentParser
import Foundation
import Shoal
#if canImport(Glibc)
    import Glibc
#endif

struct AssetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "asset", abstract: "Work with assets (files stored in record fields).",
        subcommands: [Get.self])

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the asset in a record's field to a file, fetching it from peers when this node lacks it.",
            discussion:
                "Fetching needs a running daemon (shoal serve) connected to a peer that holds the asset; chunks are verified as they arrive and a lost connection resumes where it stopped."
        )
        @OptionGroup var options: NodeOptions
        @Argument(help: "The zone: name or name@owner.") var zone: String
        @Argument(help: "The record name.") var name: String
        @Argument(help: "The field holding the asset.") var field: String
        @Option(name: [.short, .customLong("output")], help: "Where to write the bytes (- for standard output).")
        var output: String
        @Option(name: .long, help: "Seconds to wait for a peer to serve it. Default 120.") var timeout: Int = 120

        func run() async throws {
            try await reportFailures {
                try await options.withNode { node in
                    let id = Record.ID(name: name, zone: parseZone(zone))
                    let record = try await node.record(for: id)
                    guard case .asset(let asset)? = record[field] else {
                        throw CommandFailure(
                            .notFound,
                            "field \(field) of \(id) \(record[field] == nil ? "is not set" : "is not an asset"); fields: \(record.fields.filter { $0.value != nil }.map(\.name).joined(separator: ", "))"
                        )
                    }
                    try await fetch(asset, node: node)
                    try await write(asset, node: node)
                }
            }
        }

        func fetch(_ asset: Asset, node: ShoalNode) async throws {
            if (try? node.assets.isComplete(asset)) == true { return }
            guard NodeContext.node != nil else {
                throw CommandFailure(
                    .notFound,
                    "\(asset) is not on this node and no daemon runs to fetch it; start `shoal serve` with a peer that holds it, then run this again"
                )
            }
            // Five reports a second: the client redraws them in place on a terminal, and prints
            // one every two seconds elsewhere (ProgressPrinter).
            let bar = ProgressBar(fetching: asset)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await node.fetchAsset(asset, every: .milliseconds(200), progress: bar.report) }
                group.addTask {
                    try await Task.sleep(for: .seconds(timeout))
                    throw CommandFailure(
                        .notFound,
                        "no peer served \(asset) within \(timeout) s (connected peers: \(await node.connectionCount())); try again with a peer that holds it, or a longer --timeout"
                    )
                }
                do {
                    try await group.next()
                    group.cancelAll()
                } catch let e as ShoalError where e.code == .assetNotAvailable || e.code == .networkUnavailable {
                    group.cancelAll()
                    throw CommandFailure(.notFound, "\(e.code): \(e.message)")
                }
            }
        }

        func write(_ asset: Asset, node: ShoalNode) async throws {
            do {
                if output == "-" {
                    for try await buffer in try node.assets.contents(of: asset) {
                        FileHandle.standardOutput.write(Data(buffer))
                    }
                } else {
                    try await node.assets.write(asset, to: output)
                    Console.current.line(
                        options.json
                            ? RecordFormatting.jsonText(["asset": asset.hash.hex, "size": asset.size, "path": output])
                            : "wrote \(asset.size) bytes of \(asset) to \(output)")
                }
            } catch let e as AssetError {
                throw CommandFailure(e.code == .assetFileModified ? .badInput : .failure, "\(e)")
            }
        }
    }
}
