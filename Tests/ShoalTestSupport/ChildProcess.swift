// ChildProcess: a program the tests start, with posix_spawn, in place of Foundation's Process.

import CShoalSpawn
package import Foundation

/// A child process started with `posix_spawn`, with the part of Foundation's `Process` interface
/// the tests use.
///
/// Foundation's `Process.run()` on Linux (Swift 6.3) lists `/proc/self/fd` by copying each
/// directory entry whole, 256 bytes, past the end of a short entry: when that entry ends glibc's
/// buffer before an unmapped page, the test process dies in `memcpy` (SIGSEGV), now and then.
/// This spawns directly. The child gets the three standard streams it is given and no other
/// descriptor, so a pipe made for one child is never held open by another one started meanwhile.
///
/// A stream is a `Pipe` (the child gets the end it needs; this process closes that end after the
/// start, so reading the other end ends when the child exits), a `FileHandle`
/// (`FileHandle.nullDevice` is /dev/null), or nil for this process's own stream.
package final class ChildProcess: @unchecked Sendable {
    /// The program to run.
    package var executableURL: URL?
    /// Its arguments, after its own path.
    package var arguments: [String] = []
    /// Standard input: a `Pipe`, a `FileHandle` or nil.
    package var standardInput: Any?
    /// Standard output: a `Pipe`, a `FileHandle` or nil.
    package var standardOutput: Any?
    /// Standard error: a `Pipe`, a `FileHandle` or nil.
    package var standardError: Any?

    private let lock = NSLock()
    private var pid: pid_t = 0
    private var waitStatus: Int32?

    /// A process not started yet.
    package init() {}

    /// The child's process ID (0 before ``run()``).
    package var processIdentifier: Int32 { lock.withLock { pid } }

    /// Starts the child.
    /// - Throws: ``ChildProcessError`` when there is no executable or `posix_spawn` fails.
    package func run() throws {
        guard let path = executableURL?.path else { throw ChildProcessError(program: "", errno: ENOENT) }
        let streams: [Int32] = [
            Self.descriptor(standardInput, reading: true),
            Self.descriptor(standardOutput, reading: false),
            Self.descriptor(standardError, reading: false)
        ]
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var child: pid_t = 0
        let rc = streams.withUnsafeBufferPointer { s in
            argv.withUnsafeBufferPointer { shoal_spawn(&child, path, $0.baseAddress, s.baseAddress) }
        }
        guard rc == 0 else { throw ChildProcessError(program: path, errno: rc) }
        lock.withLock { pid = child }
        closeChildEnds()
    }

    /// Whether the child has started and not yet exited (reaps it when it has).
    package var isRunning: Bool {
        lock.withLock {
            guard pid > 0 else { return false }
            reapLocked()
            return waitStatus == nil
        }
    }

    /// Sends SIGTERM while it runs.
    package func terminate() {
        if isRunning { kill(processIdentifier, SIGTERM) }
    }

    /// Blocks until the child has exited (polling every 5 ms, so that ``isRunning`` on another
    /// thread never races a blocking wait for the same child).
    package func waitUntilExit() {
        while isRunning { usleep(5_000) }
    }

    /// As Foundation's: the exit status when the child exited, the signal's number when a signal
    /// ended it; 0 while it runs.
    package var terminationStatus: Int32 {
        lock.withLock {
            guard let status = waitStatus else { return 0 }
            let signal = status & 0x7f
            return signal == 0 ? (status >> 8) & 0xff : signal
        }
    }

    /// Reaps the child if it has exited. Called with the lock held.
    private func reapLocked() {
        guard waitStatus == nil else { return }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid {
            waitStatus = status
        } else if r < 0 && errno == ECHILD {
            waitStatus = 0
        }
    }

    /// Closes this process's copies of the pipe ends the child was given.
    private func closeChildEnds() {
        if let pipe = standardInput as? Pipe { try? pipe.fileHandleForReading.close() }
        var closed = Set<ObjectIdentifier>()
        for case let pipe as Pipe in [standardOutput, standardError]
        where closed.insert(ObjectIdentifier(pipe)).inserted {
            try? pipe.fileHandleForWriting.close()
        }
    }

    /// The descriptor the child gets for a stream.
    private static func descriptor(_ stream: Any?, reading: Bool) -> Int32 {
        switch stream {
        case let pipe as Pipe:
            return reading ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
        case let handle as FileHandle:
            return handle === FileHandle.nullDevice || handle.fileDescriptor < 0
                ? SHOAL_SPAWN_NULL : handle.fileDescriptor
        default:
            return SHOAL_SPAWN_INHERIT
        }
    }
}

/// A child process that could not be started.
package struct ChildProcessError: Error, CustomStringConvertible {
    /// The program's path.
    package let program: String
    /// The `errno` value `posix_spawn` returned.
    package let errno: Int32

    package var description: String {
        "cannot start \(program.isEmpty ? "a process without a program" : program): \(String(cString: strerror(errno)))"
    }
}
