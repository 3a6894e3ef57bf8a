// ControlServer+Admission: how many control clients are served, and whether a request line arrived in time.

import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import Shoal
#if canImport(Glibc)
    import Glibc
#endif

/// How many clients the control socket serves.
final class ClientCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    /// Takes a place if fewer than `limit` are taken.
    func enter(limit: Int) -> Bool {
        lock.withLock {
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    /// Gives a place back.
    func leave() { lock.withLock { count -= 1 } }
}

/// Whether a client's request line arrived in time, decided once: by the reader, which finishes
/// it, or by the timer, which expires it.
final class RequestDeadline: @unchecked Sendable {
    private let lock = NSLock()
    private var decided = false

    /// True if the request arrived (or was refused) before the timer went off.
    func finish() -> Bool { decide() }
    /// True if the timer went off while the request was still being read.
    func expire() -> Bool { decide() }

    private func decide() -> Bool {
        lock.withLock {
            defer { decided = true }
            return !decided
        }
    }
}
