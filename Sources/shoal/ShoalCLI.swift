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
            DemoCommand.self, InitCommand.self, IdentityCommand.self, PeerCommand.self, ServeCommand.self,
            ZoneCommand.self, PutCommand.self, GetCommand.self,
            DeleteCommand.self, QueryCommand.self, IndexCommand.self, ChangesCommand.self, WatchCommand.self,
            StatusCommand.self,
            DigestCommand.self, InspectCommand.self, AssetCommand.self, GarbageCommand.self, HTTPKeyCommand.self
        ]
    )

    /// Runs the command the arguments name, exiting with Shoal's codes: a bad argument is 2
    /// (usage), as documented, not ArgumentParser's 64.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var async = command as? any AsyncParsableCommand {
                try await async.run()
            } else {
                try command.run()
            }
        } catch {
            let code = status(for: error)
            guard code == ExitStatus.usage.rawValue else { exit(withError: error) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(code)
        }
    }

    /// The exit code for `error`: ArgumentParser's, with its usage code (64) made Shoal's (2).
    static func status(for error: any Error) -> Int32 {
        let code = exitCode(for: error)
        return code == .validationFailure ? ExitStatus.usage.rawValue : code.rawValue
    }
}

/// Options every command that touches a node takes.
struct NodeOptions: ParsableArguments {
    @Option(name: .long, help: "The data directory (default: $SHOAL_DATA or ~/.shoal).")
    var data: String?

    @Flag(name: .long, help: "Print JSON instead of tables.")
    var json = false

    var directory: DataDirectory { DataDirectory.resolve(data) }
}
