// IdentityCommand: `shoal id` prints this device's ID, the one peers will trust it by.

import ArgumentParser
import Foundation
import Shoal

struct IdentityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Print this device's ID (8 groups of 7 characters), which other devices use to recognise it.",
        discussion:
            "The ID is the SHA-256 of the device's certificate, kept in the data directory's identity/ folder (Spec/security.md)."
    )
    @OptionGroup var options: NodeOptions

    func run() async throws {
        try await reportFailures {
            try await options.withNode { node in
                let id = node.deviceID
                Console.current.line(
                    options.json
                        ? RecordFormatting.jsonText(["device": id.text, "sha256": id.hex, "node": node.nodeID.hex])
                        : id.text)
            }
        }
    }
}
