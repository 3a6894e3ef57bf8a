// AssetCommands: `shoal asset get` — an asset field's bytes into a file, fetched from peers when needed.

import ArgumentParser
import Foundation
import Shoal
#if canImport(Glibc)
import Glibc
#endif

struct AssetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "asset", abstract: "Work with assets (files stored in record fields).",
                                                    subcommands: [Get.self])

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the asset in a record's field to a file, fetching it from peers when this node lacks it.",
            discussion: "Fetching needs a running daemon (shoal serve) connected to a peer that holds the asset; chunks are verified as they arrive and a lost connection resumes where it stopped.")
        @OptionGroup var options: NodeOptions
        @Argument(help: "The zone: name or name@owner.") var zone: String
        @Argument(help: "The record name.") var name: String
        @Argument(help: "The field holding the asset.") var field: String
        @Option(name: [.short, .customLong("output")], help: "Where to write the bytes (- for standard output).") var output: String
        @Option(name: .long, help: "Seconds to wait for a peer to serve it. Default 120.") var timeout: Int = 120

        func run() async throws {
            try await reportFailures {
                try await options.withNode { node in
                    let id = Record.ID(name: name, zone: parseZone(zone))
                    let record = try await node.record(for: id)
                    guard case .asset(let asset)? = record[field] else {
                        throw CommandFailure(.notFound, "field \(field) of \(id) \(record[field] == nil ? "is not set" : "is not an asset"); fields: \(record.fields.filter { $0.value != nil }.map(\.name).joined(separator: ", "))")
                    }
                    try await fetch(asset, node: node)
                    try await write(asset, node: node)
                }
            }
        }

        func fetch(_ asset: Asset, node: ShoalNode) async throws {
            if (try? node.assets.isComplete(asset)) == true { return }
            guard NodeContext.node != nil else {
                throw CommandFailure(.notFound, "\(asset) is not on this node and no daemon runs to fetch it; start `shoal serve` with a peer that holds it, then run this again")
            }
            let tty = isatty(STDERR_FILENO) != 0
            let chunksBefore = await node.sync.statistics.assetChunksReceived
            let progress = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(tty ? 200 : 2000))
                    let got = await node.sync.statistics.assetChunksReceived - chunksBefore
                    let left = await node.sync.assetTransfers()[asset] ?? 0
                    let line = "fetching \(asset): \(got) chunks received, \(left) to go"
                    Console.current.error(tty ? "\u{1B}[1A\u{1B}[2K" + line : line)
                }
            }
            defer { progress.cancel() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await node.fetchAsset(asset) }
                group.addTask {
                    try await Task.sleep(for: .seconds(timeout))
                    throw CommandFailure(.notFound, "no peer served \(asset) within \(timeout) s (connected peers: \(await node.connectionCount())); try again with a peer that holds it, or a longer --timeout")
                }
                do {
                    try await group.next()
                    group.cancelAll()
                } catch let e as AssetFetchError {
                    group.cancelAll()
                    throw CommandFailure(.notFound, "\(e)")
                }
            }
        }

        func write(_ asset: Asset, node: ShoalNode) async throws {
            do {
                if output == "-" {
                    for try await buffer in try node.assets.contents(of: asset) { FileHandle.standardOutput.write(Data(buffer)) }
                } else {
                    try await node.assets.write(asset, to: output)
                    Console.current.line(options.json ? RecordFormatting.jsonText(["asset": asset.hash.hex, "size": asset.size, "path": output])
                                                      : "wrote \(asset.size) bytes of \(asset) to \(output)")
                }
            } catch let e as AssetError {
                throw CommandFailure(e.code == .assetFileModified ? .badInput : .failure, "\(e)")
            }
        }
    }
}
