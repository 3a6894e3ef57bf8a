// DuplicateConnectionRuleTests: of two connections between the same devices, the dialled one goes once the accepted one answers.

import Foundation
import NIOPosix
import Testing
import ShoalStore
import ShoalSync
import ShoalTrust
import ShoalWire
@testable import ShoalNet

@Suite struct DuplicateConnectionRuleTests {
    static let notes = RecordZone.ID(name: "notes")
    let small: DeviceID
    let large: DeviceID

    init() throws {
        small = try #require(DeviceID(bytes: [UInt8](repeating: 1, count: 32)))
        large = try #require(DeviceID(bytes: [UInt8](repeating: 2, count: 32)))
    }

    typealias Facts = DuplicateConnections.Connection

    static func id(_ n: UInt64) -> ConnectionID { ConnectionID(rawValue: n) }

    @Test func theSmallerDeviceNeverActs() {
        let now = Date()
        let both = [
            Facts(id: Self.id(1), dialed: true, discovery: false, established: true, lastFrame: now),
            Facts(id: Self.id(2), dialed: false, discovery: false, established: true, lastFrame: now)
        ]
        #expect(DuplicateConnections.decide(own: small, device: large, connections: both, now: now) == .keep)
        #expect(
            DuplicateConnections.decide(own: large, device: small, connections: both, now: now)
                == .close([Self.id(1)]))
    }

    @Test func theDialledConnectionsGoWhenTheAcceptedOneAnsweredMomentsAgo() {
        let now = Date()
        let connections = [
            Facts(id: Self.id(7), dialed: true, discovery: false, established: true, lastFrame: now),
            Facts(id: Self.id(3), dialed: true, discovery: false, established: true, lastFrame: nil),
            Facts(id: Self.id(5), dialed: false, discovery: false, established: true, lastFrame: now - 9)
        ]
        #expect(
            DuplicateConnections.decide(own: large, device: small, connections: connections, now: now)
                == .close([Self.id(3), Self.id(7)]))
    }

    /// However long ago the accepted connection opened: what counts is that it answers. A
    /// connection quiet for longer than the window may be dead, so the decision waits for its
    /// next frame instead of closing a dialled connection that may be its replacement.
    @Test func aQuietAcceptedConnectionMustAnswerFirst() {
        let now = Date()
        var connections = [
            Facts(id: Self.id(1), dialed: true, discovery: false, established: true, lastFrame: now),
            Facts(id: Self.id(2), dialed: false, discovery: false, established: true, lastFrame: now - 30)
        ]
        #expect(
            DuplicateConnections.decide(own: large, device: small, connections: connections, now: now)
                == .awaitAcceptedFrame)
        connections[1].lastFrame = now
        #expect(
            DuplicateConnections.decide(own: large, device: small, connections: connections, now: now)
                == .close([Self.id(1)]))
    }

    @Test func connectionsNotYetEstablishedAndDiscoveryDialsAreLeftAlone() {
        let now = Date()
        let pending = [
            Facts(id: Self.id(1), dialed: true, discovery: false, established: false, lastFrame: now),
            Facts(id: Self.id(2), dialed: false, discovery: false, established: true, lastFrame: now)
        ]
        #expect(DuplicateConnections.decide(own: large, device: small, connections: pending, now: now) == .keep)
        let notAccepted = [
            Facts(id: Self.id(1), dialed: true, discovery: false, established: true, lastFrame: now),
            Facts(id: Self.id(2), dialed: false, discovery: false, established: false, lastFrame: now)
        ]
        #expect(
            DuplicateConnections.decide(own: large, device: small, connections: notAccepted, now: now)
                == .keep)
        let discovery = [
            Facts(id: Self.id(1), dialed: true, discovery: true, established: true, lastFrame: now),
            Facts(id: Self.id(2), dialed: false, discovery: false, established: true, lastFrame: now)
        ]
        #expect(
            DuplicateConnections.decide(own: large, device: small, connections: discovery, now: now) == .keep)
    }

    /// The larger device's dial reaches the smaller one only 12 s after the smaller one's dial
    /// was accepted (a slow path: a loaded machine, a congested link). Both connections are then
    /// established, the accepted one long after it opened; once it answers, the dialled one goes,
    /// and a change travels once.
    @Test(.timeLimit(.minutes(5))) func aDialThatArrivesLateStillLeavesOneConnection() async throws {
        let first = try DeviceIdentity.generate(), second = try DeviceIdentity.generate()
        let (larger, smaller) = first.deviceID > second.deviceID ? (first, second) : (second, first)
        var slow = NetworkConfiguration()
        slow.handshakeTimeout = .seconds(60)
        let a = try await LoopbackNode.start("a", network: slow, identity: larger)
        let b = try await LoopbackNode.start("b", identity: smaller)
        let proxy = try await DelayingProxy.start(
            to: b.port, delay: .seconds(12), group: MultiThreadedEventLoopGroup.singleton)
        defer {
            Task {
                await proxy.stop(); await a.stop(); await b.stop()
            }
        }
        await LoopbackNode.trustEachOther(a, b)
        try await a.createSharedZone(Self.notes, with: [b])
        for i in 0..<3 { _ = try await a.store.save(Self.note("n\(i)")) }
        let viaProxy = "127.0.0.1:\(proxy.port)"
        await a.net.addPeer(host: "127.0.0.1", port: proxy.port)
        #expect(await eventually(timeout: .seconds(10)) { await a.net.connectionCount == 0 })
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { (try? await b.store.allRecordIDs(in: Self.notes).count) == 3 })
        // The late dial is established (its hello names b's node) ...
        #expect(
            await eventually {
                await a.net.peers().first { $0.address == viaProxy }?.node == b.store.nodeID
            }, "a's dial through the slow path was never established")
        // ... and then closed: one connection each.
        let one = await eventually {
            let (ca, cb) = (await a.net.connectionCount, await b.net.connectionCount)
            return ca == 1 && cb == 1
        }
        let counts = (await a.net.connectionCount, await b.net.connectionCount)
        #expect(one, "a holds \(counts.0) connections, b \(counts.1)")
        #expect(await a.net.peers().first { $0.address == viaProxy }?.isConnected == false)
        let before = await b.net.sync.statistics.recordsReceived
        _ = try await a.store.save(Self.note("once"))
        #expect(
            await eventually {
                (try? await b.store.record(for: Record.ID(name: "once", zone: Self.notes))) != nil
            })
        try await Task.sleep(for: .milliseconds(300))
        let received = await b.net.sync.statistics.recordsReceived - before
        #expect(received == 1, "the change arrived \(received) times")
    }

    static func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: notes))
        r["text"] = .string(name)
        return r
    }
}
