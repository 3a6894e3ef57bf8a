// IdleFlood: idle TCP connections from many loopback addresses that never start TLS, each reopened as soon as it closes.

import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

/// A connection flood as a stranger mounts it against a node's listener: `perAddress` plain TCP
/// connections from each of the loopback addresses 127.0.0.2 … 127.0.0.(1 + `addresses`), which
/// send nothing; every one the node closes (or refuses) is opened again at once from the same
/// address, by a thread of its own, so the node's places stay taken. Only 127.0.0.0/8 is used.
///
/// Bounded: the thread stops at ``stop()``, after `deadline`, or after `maxReopens` reopened
/// connections, whichever comes first.
final class IdleFlood: Sendable {
    /// What the flood has done so far.
    struct Counts: Sendable {
        /// Connections established now (from the client's side: some may wait in the node's backlog).
        var connected = 0
        /// Connections opened again after the node closed them, or after a connect failed.
        var reopened = 0
    }

    private let counts = Mutex(Counts())
    private let running = Mutex(true)
    private let finished = DispatchSemaphore(value: 0)

    /// The first source address: 127.0.0.2 (127.0.0.1 is the honest peer's).
    static let firstHost: UInt32 = 0x7F00_0002

    init(port: Int, addresses: Int, perAddress: Int, deadline: Duration = .seconds(60), maxReopens: Int = 2_000_000) {
        // 127.0.0.2 … 127.0.0.201 at most: loopback only.
        let addresses = min(max(1, addresses), 200)
        let thread = Thread { [self] in
            run(
                port: port, addresses: addresses, perAddress: perAddress, until: ContinuousClock.now + deadline,
                maxReopens: maxReopens)
            finished.signal()
        }
        thread.start()
    }

    /// The counts now.
    var now: Counts { counts.withLock { $0 } }

    /// Stops the flood and closes its connections; returns once they are closed.
    func stop() {
        let first = running.withLock { r in
            defer { r = false }; return r
        }
        if first { finished.wait() }
    }

    deinit { stop() }

    /// One connection of the flood: its descriptor, its source address, whether it is connected.
    private struct Socket {
        var fd: Int32
        let host: UInt32
        var connected: Bool
    }

    private func run(
        port: Int, addresses: Int, perAddress: Int, until deadline: ContinuousClock.Instant, maxReopens: Int
    ) {
        var sockets = [Socket]()
        for a in 0..<addresses {
            for _ in 0..<perAddress {
                let host = Self.firstHost + UInt32(a)
                sockets.append(Socket(fd: Self.open(from: host, to: port), host: host, connected: false))
            }
        }
        var polls = [pollfd](repeating: pollfd(), count: sockets.count)
        var reopened = 0
        var byte = [UInt8](repeating: 0, count: 512)
        // Bounded in time and in count: at most one pass per millisecond would be far fewer than this.
        var passes = 0
        while running.withLock({ $0 }), ContinuousClock.now < deadline, reopened < maxReopens, passes < 10_000_000 {
            passes += 1
            for i in sockets.indices where sockets[i].fd < 0 {
                sockets[i].fd = Self.open(from: sockets[i].host, to: port)
                reopened += 1
            }
            for i in sockets.indices {
                polls[i] = pollfd(fd: sockets[i].fd, events: Int16(sockets[i].connected ? POLLIN : POLLOUT), revents: 0)
            }
            guard poll(&polls, nfds_t(polls.count), 5) > 0 else { continue }
            for i in sockets.indices where polls[i].revents != 0 {
                let events = Int32(polls[i].revents)
                var reopen = events & (POLLHUP | POLLERR | POLLNVAL) != 0
                if !reopen, !sockets[i].connected, events & POLLOUT != 0 {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(sockets[i].fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    if error == 0 { sockets[i].connected = true } else { reopen = true }
                } else if !reopen, events & POLLIN != 0 {
                    // The node never sends to a client that has not started TLS: this is the end.
                    reopen = byte.withUnsafeMutableBytes { recv(sockets[i].fd, $0.baseAddress, $0.count, 0) } <= 0
                }
                if reopen {
                    _ = Glibc.close(sockets[i].fd)
                    sockets[i].fd = Self.open(from: sockets[i].host, to: port)
                    sockets[i].connected = false
                    reopened += 1
                }
            }
            let connected = sockets.reduce(0) { $0 + ($1.connected ? 1 : 0) }
            counts.withLock { $0 = Counts(connected: connected, reopened: reopened) }
        }
        for s in sockets { _ = Glibc.close(s.fd) }
        counts.withLock { $0.connected = 0 }
    }

    /// A non-blocking TCP socket from `host` (port chosen at connect) connecting to
    /// 127.0.0.1:`port`; -1 when no socket could be made (the loop then reopens it).
    private static func open(from host: UInt32, to port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var one: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        // IP_BIND_ADDRESS_NO_PORT (24): the port is picked at connect, per destination.
        setsockopt(fd, Int32(IPPROTO_IP), 24, &one, size)
        // TCP keepalive probes after a second, which carry no byte the node reads: a
        // connection the kernel completed on this side but dropped on the node's (its accept
        // queue was full) is found dead within seconds and opened again, as a real flood would.
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, size)
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, &one, size)
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &one, size)
        var two: Int32 = 2
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPCNT, &two, size)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = host.bigEndian
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        remote.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let addressSize = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, addressSize) }
        }
        guard bound == 0 else { _ = Glibc.close(fd); return -1 }
        _ = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, addressSize) }
        }
        return fd
    }
}
