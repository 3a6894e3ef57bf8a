// ShoalProcess: runs the built `shoal` binary for end-to-end tests, with bounded waits that never
// hold a thread of Swift's cooperative pool.

import Foundation
import ShoalTestSupport

/// Runs `shoal` (found next to the test bundle, or at $SHOAL_BINARY).
///
/// Every wait here is async: a blocking read of a child's output runs on a thread of its own
/// (``onOwnThread(_:)``), and polling sleeps with `Task.sleep`. The pool has one thread per core
/// (two in CI), and the tests of every suite share it: two tests blocked in a process wait at
/// once stopped every other test for as long, and the loopback tests' nodes with them (their
/// engines and timers run on the pool). Twenty seconds of that failed their `eventually`s.
enum Shoal {
    static var binary: String? {
        if let env = ProcessInfo.processInfo.environment["SHOAL_BINARY"] { return env }
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("shoal").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    struct Result {
        let status: Int32
        let output: String
        let error: String
    }

    /// A pipe whose two ends are close-on-exec. A child gets only the streams it is given
    /// (``ChildProcess`` closes every other descriptor in it), so a reader of one child's output
    /// never waits on a copy of the pipe that another child, started meanwhile, holds open.
    static func pipe() -> Pipe {
        let p = Pipe()
        for h in [p.fileHandleForReading, p.fileHandleForWriting] { _ = fcntl(h.fileDescriptor, F_SETFD, FD_CLOEXEC) }
        return p
    }

    /// Starts `process`.
    static func start(_ process: ChildProcess) throws {
        try process.run()
    }

    /// Runs `body` on a new thread and returns what it returns: for blocking calls (a read to the
    /// end of a child's output), which must not hold a thread of the cooperative pool.
    static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            Thread { c.resume(with: Swift.Result { try body() }) }.start()
        }
    }

    /// Waits until `process` has exited, polling (bounded: `seconds`); false if it still runs.
    static func waitForExit(_ process: ChildProcess, seconds: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        return !process.isRunning
    }

    /// Runs `shoal args…` to completion (bounded: 60 s) with `input` on standard input.
    static func run(_ args: [String], input: [UInt8]? = nil) async throws -> Result {
        try await onOwnThread { try runBlocking(args, input: input) }
    }

    /// ``run(_:input:)``'s work, which blocks its thread until the process ends.
    private static func runBlocking(_ args: [String], input: [UInt8]?) throws -> Result {
        guard let binary else { throw CocoaError(.fileNoSuchFile) }
        let p = ChildProcess()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = args
        let out = pipe(), err = pipe(), inPipe = pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = inPipe
        try start(p)
        if let input { inPipe.fileHandleForWriting.write(Data(input)) }
        try? inPipe.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(60)
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        while p.isRunning && Date() < deadline { usleep(10_000) }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        return Result(
            status: p.terminationStatus, output: String(decoding: o, as: UTF8.self),
            error: String(decoding: e, as: UTF8.self))
    }

    /// A running `shoal serve`, its output collected.
    final class Daemon: @unchecked Sendable {
        let process = ChildProcess()
        let output = Shoal.pipe()
        private let lock = NSLock()
        private var text = ""

        /// Starts `shoal serve args…`, or `wrapper… shoal serve args…` (`ip netns exec NS`, say);
        /// `command` names another long-running command (`watch`).
        init(_ args: [String], wrapper: [String] = [], command: String = "serve") throws {
            guard let binary = Shoal.binary else { throw CocoaError(.fileNoSuchFile) }
            process.executableURL = URL(fileURLWithPath: wrapper.first ?? binary)
            // Daemons of parallel tests must not all take the HTTP API's default port: each gets
            // one of the system's choosing unless the test names one.
            let args =
                command == "serve" && !args.contains(where: { $0 == "--http" || $0 == "--no-http" })
                ? args + ["--http", "127.0.0.1:0"] : args
            process.arguments =
                wrapper.isEmpty ? [command] + args : Array(wrapper.dropFirst()) + [binary, command] + args
            process.standardOutput = output
            process.standardError = output
            output.fileHandleForReading.readabilityHandler = { [weak self] h in
                let d = h.availableData
                guard let self, !d.isEmpty else { return }
                self.lock.lock(); self.text += String(decoding: d, as: UTF8.self); self.lock.unlock()
            }
            try Shoal.start(process)
        }

        var log: String { lock.lock(); defer { lock.unlock() }; return text }

        /// The port it listens on, from its first log line (bounded: 60 s).
        func port() async -> Int? {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                if let r = log.range(of: #"listen=127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                    return Int(log[r].split(separator: ":").last ?? "")
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return nil
        }

        /// The port its HTTP API listens on, from its first log line (bounded: 60 s).
        func httpPort() async -> Int? {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                if let r = log.range(of: #"http=127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                    return Int(log[r].split(separator: ":").last ?? "")
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return nil
        }

        /// SIGTERM, then waits (bounded: 20 s), then SIGKILL.
        func stop() async {
            if process.isRunning { process.terminate() }
            if !(await Shoal.waitForExit(process, seconds: 20)) { kill(process.processIdentifier, SIGKILL) }
            output.fileHandleForReading.readabilityHandler = nil
        }
    }

    /// The daemons a test starts, stopped when its body ends, however it ends (a `defer` cannot
    /// wait for them).
    final class Daemons: @unchecked Sendable {
        private let lock = NSLock()
        private var list = [Daemon]()

        /// Starts `shoal serve args…` (or `shoal command args…`), after `wrapper` when given.
        func start(_ args: [String], wrapper: [String] = [], command: String = "serve") throws -> Daemon {
            let d = try Daemon(args, wrapper: wrapper, command: command)
            lock.lock(); list.append(d); lock.unlock()
            return d
        }

        /// Stops every daemon started here.
        func stopAll() async {
            let all = lock.withLock { () -> [Daemon] in
                defer { list = [] }
                return list
            }
            for d in all { await d.stop() }
        }
    }

    /// Runs `body` with a ``Daemons`` and stops them all afterwards, also when `body` throws.
    static func withDaemons<T>(_ body: (Daemons) async throws -> T) async throws -> T {
        let daemons = Daemons()
        do {
            let result = try await body(daemons)
            await daemons.stopAll()
            return result
        } catch {
            await daemons.stopAll()
            throw error
        }
    }

    /// The device ID `shoal id` prints for the data directory `dir`.
    static func deviceID(_ dir: String) async throws -> String {
        let r = try await run(["id", "--data", dir])
        guard r.status == 0 else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSDebugDescriptionErrorKey: "shoal id failed: \(r.error)"])
        }
        return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Makes every node in `dirs` trust every other, with `shoal id` and `shoal peer add`
    /// (through a running daemon, or on the store when none runs).
    static func pair(_ dirs: [String]) async throws {
        var ids = [String]()
        for d in dirs { ids.append(try await deviceID(d)) }
        for (i, d) in dirs.enumerated() {
            for (j, id) in ids.enumerated() where i != j {
                let r = try await run(["peer", "add", id, "--name", "node\(j)", "--data", d])
                guard r.status == 0 else {
                    throw CocoaError(
                        .fileWriteUnknown, userInfo: [NSDebugDescriptionErrorKey: "shoal peer add failed: \(r.error)"])
                }
            }
        }
    }

    /// Retries `body` until it returns true (bounded: 90 s by default, far above what a passing
    /// run needs, since a full `swift test` keeps both cores busy for about a minute).
    static func eventually(_ seconds: Double = 90, _ body: () async throws -> Bool) async rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try await body() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return try await body()
    }

    /// Where a command lists the trusted devices with how each address was found.
    enum Listing {
        /// `shoal status --json`, under `devices`.
        case status
        /// `shoal peer list --json`, under `trusted`.
        case peerList
    }

    /// The entry of the trusted `device` in `listing` of the node in `dir`.
    static func trustedEntry(_ dir: String, _ device: String, in listing: Listing = .status) async throws -> [String:
        Any]?
    {
        let (args, key) = listing == .status ? (["status"], "devices") : (["peer", "list"], "trusted")
        let out = try await run(args + ["--json", "--data", dir]).output
        let json = try? JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
        return (json?[key] as? [[String: Any]])?.first { $0["device"] as? String == device }
    }

    /// How the node in `dir` found the addresses of the trusted `device`, as `listing` says:
    /// "ADDRESS SOURCE connected|idle" lines, sorted.
    static func found(_ dir: String, _ device: String, in listing: Listing = .status) async throws -> [String] {
        guard let found = try await trustedEntry(dir, device, in: listing)?["found"] as? [[String: Any]] else {
            return ["unreadable"]
        }
        return found.map {
            "\($0["address"] ?? "?") \($0["source"] ?? "?") \(($0["connected"] as? Bool) == true ? "connected" : "idle")"
        }.sorted()
    }
}
