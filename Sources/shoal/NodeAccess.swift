// NodeAccess: runs a command against the node — inside the daemon, over its socket, or on the store directly.

import ArgumentParser
import Foundation
import Shoal

/// The node a command acts on while it runs inside the daemon.
enum NodeContext {
    @TaskLocal static var node: ShoalNode? = nil
}

/// A command's failure with its exit status.
struct CommandFailure: Error, CustomStringConvertible {
    let status: ExitStatus
    let description: String
    init(_ status: ExitStatus, _ description: String) {
        self.status = status
        self.description = description
    }

    /// Maps a store error to an exit status.
    init(_ error: ShoalError) {
        switch error.code {
        case .unknownItem, .zoneNotFound, .changeTokenExpired: status = .notFound
        case .serverRecordChanged, .limitExceeded, .partialFailure, .batchRequestFailed: status = .conflict
        case .invalidArguments: status = .badInput
        default: status = .failure
        }
        description = "\(error)"
    }
}

extension NodeOptions {
    /// Runs `body` with the node: the daemon's own (inside the daemon), else forwards the whole
    /// command line to a running daemon, else opens the store directly (no replication).
    func withNode(_ body: (ShoalNode) async throws -> Void) async throws {
        if let node = NodeContext.node {
            try await run(body, node)
            return
        }
        let dir = directory
        if dir.daemonIsRunning {
            let status = try await ControlClient.forward(
                Self.absolutePaths(CommandLine.arguments.dropFirst().map { $0 }), to: dir)
            if status != 0 { throw ExitCode(status) }
            return
        }
        guard dir.exists else {
            throw CommandFailure(
                .dataDirectory,
                "no Shoal data directory at \(dir.path); create one with `shoal init --data \(dir.path)`")
        }
        guard let lock = dir.lockForDaemon() else {
            throw CommandFailure(
                .dataDirectory, "\(dir.path) is in use by another shoal process; try again, or stop it")
        }
        defer { close(lock) }
        let node: ShoalNode
        do {
            node = try await ShoalNode.open(directory: dir.path)
        } catch {
            throw CommandFailure(.dataDirectory, "cannot open the store in \(dir.path): \(error)")
        }
        try await run(body, node)
    }

    /// The arguments with file paths made absolute, since the daemon runs in another directory:
    /// `field=@path` values and `-o` / `--output` paths.
    static func absolutePaths(_ arguments: [String]) -> [String] {
        let cwd = FileManager.default.currentDirectoryPath
        func absolute(_ p: String) -> String { p.hasPrefix("/") || p == "-" ? p : cwd + "/" + p }
        var out = [String]()
        var outputNext = false
        for a in arguments {
            if outputNext {
                out.append(absolute(a))
                outputNext = false
            } else if a == "-o" || a == "--output" {
                out.append(a)
                outputNext = true
            } else if a.hasPrefix("--output=") {
                out.append("--output=" + absolute(String(a.dropFirst("--output=".count))))
            } else if let (field, path) = ValueParsing.file(a) {
                out.append("\(field)=@\(absolute(path))")
            } else {
                out.append(a)
            }
        }
        return out
    }

    private func run(_ body: (ShoalNode) async throws -> Void, _ node: ShoalNode) async throws {
        do {
            try await body(node)
        } catch let e as ShoalError {
            throw CommandFailure(e)
        }
    }
}

/// Turns a failure into a message on the console and an exit code.
func reportFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let f as CommandFailure {
        Console.current.error("error: \(f.description)")
        throw ExitCode(f.status.rawValue)
    } catch let e as ShoalError {
        let f = CommandFailure(e)
        Console.current.error("error: \(f.description)")
        throw ExitCode(f.status.rawValue)
    }
}
