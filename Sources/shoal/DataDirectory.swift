// DataDirectory: where a node keeps its data, who owns it (the daemon's lock), and its control socket.

import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A node's data directory, mode 0700: `store.sqlite` (the replica and node ID), `identity/` (the
/// device key and certificate, Spec/security.md), `daemon.lock` (held by a running `shoal serve`),
/// `control.sock` (how other `shoal` commands reach that daemon).
struct DataDirectory {
    let path: String

    /// `--data`, else `$SHOAL_DATA`, else `~/.shoal`.
    static func resolve(_ option: String?) -> DataDirectory {
        if let option { return DataDirectory(path: option) }
        if let env = ProcessInfo.processInfo.environment["SHOAL_DATA"], !env.isEmpty { return DataDirectory(path: env) }
        return DataDirectory(
            path: FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".shoal").path)
    }

    var storePath: String { path + "/store.sqlite" }
    var lockPath: String { path + "/daemon.lock" }
    var socketPath: String { path + "/control.sock" }
    var exists: Bool { FileManager.default.fileExists(atPath: storePath) }

    /// Makes the directory (and missing parents) with mode 0700, or sets an existing one to
    /// 0700: it holds the device's private key and every record. `ShoalNode.open` does the same.
    func create() throws {
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard chmod(path, 0o700) == 0 else {
            throw CommandFailure(.dataDirectory, "cannot set \(path) to mode 0700: \(String(cString: strerror(errno)))")
        }
    }

    /// Takes the daemon lock; returns its descriptor, or nil when another process holds it.
    func lockForDaemon() -> Int32? {
        let fd = open(lockPath, O_RDWR | O_CREAT, 0o644)
        guard fd >= 0 else { return nil }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            return nil
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        return fd
    }

    /// Whether a daemon holds the lock right now.
    var daemonIsRunning: Bool {
        let fd = open(lockPath, O_RDWR | O_CREAT, 0o644)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return true
    }
}
