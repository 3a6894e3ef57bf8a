// ShoalProcess: runs the built `shoal` binary for end-to-end tests, with bounded waits.

import Foundation

/// Runs `shoal` (found next to the test bundle, or at $SHOAL_BINARY).
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

    /// Serialises creating pipes and starting processes. Foundation's pipes are not
    /// close-on-exec, so a process started on one thread inherited the pipes another thread had
    /// just made for its own child: the reader of that child's output then never saw the end
    /// of it while the other process lived (a `shoal serve` restarted in ThreeProcessTests held a
    /// writer's `shoal put` output open, and the test hung).
    static let spawnLock = NSLock()

    /// A pipe whose two ends are close-on-exec (a child still gets the end it is given: Process
    /// duplicates it onto 0, 1 or 2, and duplicates do not inherit the flag).
    static func pipe() -> Pipe {
        spawnLock.lock(); defer { spawnLock.unlock() }
        let p = Pipe()
        for h in [p.fileHandleForReading, p.fileHandleForWriting] { _ = fcntl(h.fileDescriptor, F_SETFD, FD_CLOEXEC) }
        return p
    }

    /// Starts `process` while no pipe is being made.
    static func start(_ process: Process) throws {
        spawnLock.lock(); defer { spawnLock.unlock() }
        try process.run()
    }

    /// Runs `shoal args…` to completion (bounded: 60 s) with `input` on standard input.
    static func run(_ args: [String], input: [UInt8]? = nil) throws -> Result {
        guard let binary else { throw CocoaError(.fileNoSuchFile) }
        let p = Process()
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
        return Result(status: p.terminationStatus, output: String(decoding: o, as: UTF8.self), error: String(decoding: e, as: UTF8.self))
    }

    /// A running `shoal serve`, its output collected.
    final class Daemon: @unchecked Sendable {
        let process = Process()
        let output = Shoal.pipe()
        private let lock = NSLock()
        private var text = ""

        init(_ args: [String]) throws {
            guard let binary = Shoal.binary else { throw CocoaError(.fileNoSuchFile) }
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["serve"] + args
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

        /// The port it listens on, from its first log line (bounded: 20 s).
        func port() -> Int? {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let r = log.range(of: #"listen=127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                    return Int(log[r].split(separator: ":").last ?? "")
                }
                usleep(20_000)
            }
            return nil
        }

        /// SIGTERM, then waits (bounded: 20 s).
        func stop() {
            if process.isRunning { process.terminate() }
            let deadline = Date().addingTimeInterval(20)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            output.fileHandleForReading.readabilityHandler = nil
        }
    }

    /// Retries `body` until it returns true (bounded).
    static func eventually(_ seconds: Double = 20, _ body: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try body() { return true }
            usleep(50_000)
        }
        return try body()
    }
}
