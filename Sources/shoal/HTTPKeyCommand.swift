// HTTPKeyCommand: `shoal http-key` prints the key the HTTP API and the console ask for.

import ArgumentParser
import Foundation
import ShoalHTTP

struct HTTPKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http-key",
        abstract: "Print the HTTP API key: send it as the X-API-Key header, or paste it into the console's login.",
        discussion:
            "The key is kept in DATA/http-api.key (mode 0600); `shoal init` writes it, and a data directory made before the HTTP API gets one here or at the next `shoal serve`. Delete the file and restart the daemon for a new key."
    )
    @OptionGroup var options: NodeOptions

    func run() async throws {
        try await reportFailures {
            let dir = options.directory
            guard dir.exists else {
                throw CommandFailure(
                    .dataDirectory, "\(dir.path) holds no Shoal node; create one with `shoal init --data \(dir.path)`")
            }
            let key: APIKey
            do { key = try APIKey.loadOrCreate(in: dir.path) } catch {
                throw CommandFailure(.dataDirectory, "\(error)")
            }
            Console.current.line(
                options.json
                    ? RecordFormatting.jsonText(["key": key.text, "file": APIKey.path(in: dir.path)]) : key.text)
        }
    }
}
