// ShoalCLI: the `shoal` command — a node daemon and the tools to talk to it.

import ArgumentParser
import Foundation

@main
struct ShoalCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shoal",
        abstract: "Shoal: CloudKit's record-sync model, open and peer-to-peer.",
        discussion: """
        Start with `shoal demo`. A node keeps its data in a directory (--data, $SHOAL_DATA, or ~/.shoal). \
        While `shoal serve` runs, other commands reach it through the directory's control socket; \
        otherwise they open the store directly.

        Exit codes: 0 ok, 1 failure, 2 usage, 3 malformed input, 4 not found or expired, \
        5 conflict or limit exceeded, 6 data directory missing, locked or damaged.
        """,
        subcommands: [
            DemoCommand.self, InitCommand.self, ServeCommand.self, ZoneCommand.self, PutCommand.self, GetCommand.self,
            DeleteCommand.self, QueryCommand.self, ChangesCommand.self, WatchCommand.self, StatusCommand.self,
            DigestCommand.self, InspectCommand.self, AssetCommand.self,
        ]
    )
}

/// Options every command that touches a node takes.
struct NodeOptions: ParsableArguments {
    @Option(name: .long, help: "The data directory (default: $SHOAL_DATA or ~/.shoal).")
    var data: String?

    @Flag(name: .long, help: "Print JSON instead of tables.")
    var json = false

    var directory: DataDirectory { DataDirectory.resolve(data) }
}
