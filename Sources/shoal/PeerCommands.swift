// PeerCommands: `shoal peer add | list | remove` — the devices this node trusts, and the ones it refused.

import ArgumentParser
import Foundation
import Shoal

struct PeerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peer", abstract: "Trust, list or remove the devices this node replicates with.",
        discussion: """
            Peers connect over mutual TLS and are recognised by their device ID (`shoal id` on each machine). \
            A device that is not trusted is refused before it receives any data and listed as pending. \
            Changes take effect at once in a running daemon.
            """,
        subcommands: [Add.self, List.self, Remove.self])

    /// Parses a device ID as `shoal id` prints it.
    static func device(_ text: String) throws -> DeviceID {
        do {
            return try DeviceID(text: text)
        } catch {
            throw CommandFailure(.badInput, "\"\(text)\" is not a device ID: \(error)")
        }
    }

    static func iso(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: date)
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Trust a device: accept its connections, and dial it when --address is given.")
        @OptionGroup var options: NodeOptions
        @Argument(help: "The device ID that `shoal id` prints on the other machine.") var device: String
        @Option(name: .long, help: "Where to dial it (HOST:PORT).") var address: String?
        @Option(name: .long, help: "A name for it.") var name: String?
        func run() async throws {
            try await reportFailures {
                let id = try PeerCommand.device(device)
                try await options.withNode { node in
                    let d = try await node.trustDevice(id, name: name, address: address)
                    Console.current.line(
                        options.json
                            ? RecordFormatting.jsonText([
                                "device": d.device.text, "name": d.name, "addresses": d.addresses
                            ])
                            : "trusted \(d.device)\(d.name.isEmpty ? "" : " (\(d.name))")\(d.addresses.isEmpty ? "" : " at \(d.addresses.joined(separator: ", "))")"
                    )
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "List the trusted devices (with each address and how it was found), the pending ones (refused since the daemon started) and the ones discovered on the LAN."
        )
        @OptionGroup var options: NodeOptions
        func run() async throws {
            try await reportFailures {
                try await options.withNode { node in
                    let trusted = await TrustedDeviceReport.all(node), pending = await node.pendingDevices()
                    // Heard on the LAN but not trusted: listed so the user can trust them.
                    let trustedIDs = Set(trusted.map(\.device.device)), pendingIDs = Set(pending.map(\.device))
                    let discovered = await node.discoveredDevices().filter {
                        !trustedIDs.contains($0.device) && !pendingIDs.contains($0.device)
                    }
                    if options.json {
                        Console.current.line(
                            RecordFormatting.jsonText([
                                "trusted": trusted.map {
                                    [
                                        "device": $0.device.device.text, "name": $0.device.name,
                                        "addresses": $0.device.addresses, "found": $0.foundJSON,
                                        "added": PeerCommand.iso($0.device.added), "connected": $0.isConnected
                                    ]
                                    .merging($0.lastSeenJSON) { a, _ in a } as [String: Any]
                                },
                                "pending": pending.map {
                                    [
                                        "device": $0.device.text, "address": $0.address,
                                        "lastSeen": PeerCommand.iso($0.lastSeen),
                                        "count": $0.count
                                    ] as [String: Any]
                                },
                                "discovered": discovered.map {
                                    [
                                        "device": $0.device.text, "addresses": $0.addresses,
                                        "lastSeen": PeerCommand.iso($0.lastSeen)
                                    ] as [String: Any]
                                }
                            ]))
                        return
                    }
                    let rows =
                        trusted.map {
                            [
                                $0.device.device.text, "trusted", $0.device.name, $0.foundText,
                                PeerCommand.iso($0.device.added)
                            ]
                        }
                        + pending.map {
                            [
                                $0.device.text, "pending", "", $0.address,
                                "\(PeerCommand.iso($0.lastSeen)) (\($0.count)×)"
                            ]
                        }
                        + discovered.map {
                            [
                                $0.device.text, "discovered", "", $0.addresses.joined(separator: ","),
                                PeerCommand.iso($0.lastSeen)
                            ]
                        }
                    if rows.isEmpty {
                        Console.current.line(
                            "no devices; trust one with `shoal peer add DEVICE-ID` (its node is found on the LAN) or add `--address HOST:PORT`"
                        )
                        return
                    }
                    for l in RecordFormatting.table(["DEVICE", "STATE", "NAME", "ADDRESS", "SINCE"], rows) {
                        Console.current.line(l)
                    }
                }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop trusting a device (its connections close at once), or forget a pending one.")
        @OptionGroup var options: NodeOptions
        @Argument(help: "The device ID.") var device: String
        func run() async throws {
            try await reportFailures {
                let id = try PeerCommand.device(device)
                try await options.withNode { node in
                    let known = await node.trustedDevices().contains { $0.device == id }
                    let pending = await node.pendingDevices().contains { $0.device == id }
                    guard known || pending else {
                        throw CommandFailure(
                            .notFound, "\(id) is neither a trusted nor a pending device (see `shoal peer list`)")
                    }
                    try await node.removeDevice(id)
                    Console.current.line(
                        options.json ? RecordFormatting.jsonText(["removed": id.text]) : "removed \(id)")
                }
            }
        }
    }
}
