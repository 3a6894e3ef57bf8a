// ChildProcessTests: the tests' own process starter keeps each child's pipes to that child.

import Foundation
import ShoalTestSupport
import Testing

/// ``ChildProcess`` stands in for Foundation's `Process` in every test that starts a program: its
/// statuses, its streams, and what a child does not inherit.
@Suite(.timeLimit(.minutes(1))) struct ChildProcessTests {
    /// Runs `/bin/sh -c script` to its end and returns its status and output.
    static func sh(_ script: String) async throws -> (status: Int32, output: String) {
        try await Shoal.onOwnThread {
            let p = ChildProcess()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", script]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }

    @Test func statusesAreTheExitCodeOrTheSignal() async throws {
        #expect(try await Self.sh("exit 3").status == 3)
        #expect(try await Self.sh("echo hi").output == "hi\n")
        let p = ChildProcess()
        p.executableURL = URL(fileURLWithPath: "/bin/sleep")
        p.arguments = ["30"]
        try p.run()
        #expect(p.isRunning && p.processIdentifier > 0)
        p.terminate()
        p.waitUntilExit()
        #expect(!p.isRunning && p.terminationStatus == SIGTERM)
    }

    @Test func aMissingProgramIsAnError() {
        let p = ChildProcess()
        p.executableURL = URL(fileURLWithPath: "/nonexistent/shoal-no-such-program")
        #expect(throws: ChildProcessError.self) { try p.run() }
    }

    /// A pipe made without close-on-exec, then a long-lived child started before the pipe's own
    /// child: the long-lived one must not hold the pipe open, or reading it would never end.
    @Test func aChildStartedMeanwhileDoesNotHoldAnotherChildsPipe() async throws {
        let out = Pipe()
        let sleeper = ChildProcess()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["3600"]
        try sleeper.run()
        defer { sleeper.terminate(); sleeper.waitUntilExit() }
        let echo = ChildProcess()
        echo.executableURL = URL(fileURLWithPath: "/bin/echo")
        echo.arguments = ["done"]
        echo.standardOutput = out
        try echo.run()
        let started = Date()
        let data = try await Shoal.onOwnThread { out.fileHandleForReading.readDataToEndOfFile() }
        #expect(String(decoding: data, as: UTF8.self) == "done\n")
        #expect(
            sleeper.isRunning,
            "the reader saw the end while the other child still ran (\(Date().timeIntervalSince(started)) s)")
        echo.waitUntilExit()
        #expect(echo.terminationStatus == 0)
    }

    /// Many children started at once from many threads, each with its own pipes: each output is
    /// its own child's, whole.
    @Test func childrenStartedAtOnceKeepTheirOwnOutput() async throws {
        let outputs = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for i in 0..<32 { group.addTask { (i, try await Self.sh("echo child-\(i)").output) } }
            var all = [Int: String]()
            for try await (i, output) in group { all[i] = output }
            return all
        }
        #expect(outputs.count == 32 && outputs.allSatisfy { $0.value == "child-\($0.key)\n" }, "\(outputs)")
    }
}
