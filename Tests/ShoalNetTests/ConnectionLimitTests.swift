// ConnectionLimitTests: how many connections a node accepts, in total and from one address, and which give their places up.

import Foundation
import Synchronization
import Testing
import ShoalWire
@testable import ShoalNet
#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP client that connects and sends nothing, as a connection flood does. Its descriptor
/// is closed once: closing a number twice could close a socket NIO has opened meanwhile.
final class IdleClient: Sendable {
    let fd: Int32
    private let closed = Mutex(false)

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard fd >= 0, rc == 0 else {
            if fd >= 0 { _ = Glibc.close(fd) }
            closed.withLock { $0 = true }
            throw CocoaError(.fileReadNoSuchFile)
        }
    }

    /// Whether the server closed the connection within `milliseconds` (a read sees the end).
    func closedByServer(within milliseconds: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, milliseconds) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) <= 0
    }

    func close() {
        let first = closed.withLock { c in
            defer { c = true }; return !c
        }
        if first { _ = Glibc.close(fd) }
    }

    deinit { close() }
}

@Suite(.timeLimit(.minutes(5))) struct ConnectionLimitTests {
    @Test func connectionsBeyondThePerAddressLimitAreClosedAtOnce() async throws {
        var c = NetworkConfiguration()
        c.maxConnectionsPerAddress = 2
        let node = try await LoopbackNode.start("limit", network: c)
        defer { Task { await node.stop() } }
        let first = try IdleClient(port: node.port), second = try IdleClient(port: node.port)
        defer { first.close(); second.close() }
        #expect(
            !first.closedByServer(within: 300) && !second.closedByServer(within: 300),
            "the first two are served (until the handshake timeout)")
        let third = try IdleClient(port: node.port)
        defer { third.close() }
        #expect(third.closedByServer(within: 5_000), "the third from the same address is closed at once")
        #expect(await node.net.refusedConnections == 1)
        // A place freed is a place to take.
        first.close()
        try await Task.sleep(for: .milliseconds(300))
        let fourth = try IdleClient(port: node.port)
        defer { fourth.close() }
        #expect(!fourth.closedByServer(within: 300), "a freed place is taken")
    }

    @Test func atTheTotalLimitANewConnectionTakesThePlaceOfTheOldestIdleOne() async throws {
        var c = NetworkConfiguration()
        c.maxInboundConnections = 3
        // Idle clients never start TLS: on a loaded machine the default handshake timeout (10 s)
        // could close one before the test gets to the eviction it is about.
        c.handshakeTimeout = .seconds(120)
        let node = try await LoopbackNode.start("total", network: c)
        defer { Task { await node.stop() } }
        // One after the other, each admitted before the next, so that the node sees them in this order.
        var held = [IdleClient]()
        for i in 1...3 {
            held.append(try IdleClient(port: node.port))
            #expect(await eventually { await node.net.admission.open[.silent] == i })
        }
        defer { held.forEach { $0.close() } }
        #expect(held.allSatisfy { !$0.closedByServer(within: 200) })
        let extra = try IdleClient(port: node.port)
        defer { extra.close() }
        #expect(
            await eventually(timeout: .seconds(10)) { held[0].closedByServer(within: 0) },
            "the oldest, which never started TLS, gave its place up")
        #expect(
            !extra.closedByServer(within: 300) && !held[1].closedByServer(within: 0)
                && !held[2].closedByServer(within: 0))
        #expect(await node.net.evictedConnections == 1)
        #expect(await node.net.refusedConnections == 0)
    }
}
