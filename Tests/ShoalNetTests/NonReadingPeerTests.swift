// NonReadingPeerTests: a trusted peer that asks for zones and reads nothing is held to the
// outbox bound, then closed by the unwritable timeout, while an honest peer syncs.

import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Testing
import ShoalStore
import ShoalWire
import ShoalSync
import ShoalTrust
@testable import ShoalNet

@Suite(.timeLimit(.minutes(5))) struct NonReadingPeerTests {
    /// Ten zones of 1.5 MB each (two `changes` batches of the default 1 MiB apiece).
    static let zones = (0..<10).map { RecordZone.ID(name: "z\($0)") }
    static let recordsPerZone = 15
    static let recordBytes = 100_000

    /// A record of random bytes (so compression does not shrink what waits for the socket).
    static func record(_ i: Int, in zone: RecordZone.ID, rng: inout SystemRandomNumberGenerator) -> Record {
        var r = Record(recordType: "Blob", id: Record.ID(name: "r\(i)", zone: zone))
        var data = [UInt8](repeating: 0, count: recordBytes)
        data.withUnsafeMutableBytes { raw in
            for i in stride(from: 0, to: raw.count - 7, by: 8) {
                raw.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self)
            }
        }
        r["data"] = .bytes(data)
        return r
    }

    @Test func aPeerThatReadsNothingIsHeldToTheBoundAndClosedWhileAnotherSyncs() async throws {
        var network = NetworkConfiguration()
        network.outboxBytes = 1 << 20
        network.unwritableTimeout = .seconds(2)
        let a = try await LoopbackNode.start("a", network: network)
        defer { Task { await a.stop() } }
        var rng = SystemRandomNumberGenerator()
        var subscribes = [Frame]()
        for zone in Self.zones {
            let info = try await a.store.createZone(zone)
            _ = try await a.store.modify(
                saving: (0..<Self.recordsPerZone).map { Self.record($0, in: zone, rng: &rng) }, policy: .allKeys)
            subscribes.append(
                Frame(
                    type: .subscribe,
                    payload: SubscribeMessage(zone: zone, incarnation: info.incarnation, token: nil, window: 64)
                        .encoded()))
        }
        let total = Self.zones.count * Self.recordsPerZone * Self.recordBytes

        // The trusted device that asks for every zone and then reads nothing.
        let mallory = try DeviceIdentity.generate()
        await a.net.trust(mallory.deviceID)
        let hello = Frame(
            type: .hello, payload: HelloMessage(node: NodeID.random(), name: "non-reader", zones: []).encoded())
        let client = try await NonReadingClient.connect(
            port: a.port, identity: mallory,
            send: try ([hello] + subscribes).flatMap { try FrameEncoder(options: .init(mode: .none)).encode($0) })
        defer { client.close() }

        // An honest peer dials meanwhile and syncs one zone.
        var bSync = SyncConfiguration()
        bSync.zones = .only([Self.zones[0]])
        let b = try await LoopbackNode.start("b", sync: bSync)
        defer { Task { await b.stop() } }
        await LoopbackNode.trustEachOther(a, b)
        // A node with a device key takes a zone only from its owner's share.
        await a.net.deliver(try await a.net.sync.setMember(b.device, role: .readWrite, of: Self.zones[0]))
        await b.net.addPeer(host: "127.0.0.1", port: a.port)

        // What the node holds for the non-reader, until the unwritable timeout closes it.
        var most = 0
        var served = false
        let closed = await eventually(timeout: .seconds(30)) {
            guard let bytes = await a.net.outboundBytes(of: mallory.deviceID) else { return served }
            served = true
            most = max(most, bytes)
            return false
        }
        // The bound, the batches of the one subscribe handled last (a zone's worth), and what
        // NIO may hold below the outbox (a frame and its high watermark).
        let bound = network.outboxBytes + Self.recordsPerZone * Self.recordBytes + (1 << 20) + (64 << 10)
        #expect(served, "the non-reader's connection was admitted")
        #expect(
            most <= bound,
            "the node held \(most) bytes for a peer that reads nothing (bound \(bound), zones hold \(total))")
        #expect(closed, "the connection that took no bytes was not closed by the unwritable timeout")
        #expect(
            await eventually { (try? await b.store.allRecordIDs(in: Self.zones[0]).count) == Self.recordsPerZone },
            "the honest peer synced its zone")
        #expect(await b.net.peers().first?.node == a.store.nodeID, "the honest peer's hello was answered")
    }
}

extension NonReadingPeerTests {
    /// The non-reader subscribes to ten empty zones, and then 1.5 MB is written to each: the
    /// news of a zone goes to it only while it has room, so the node holds about one zone's
    /// batches beyond its bound instead of every zone's.
    @Test func aPeerThatReadsNothingIsNotSentEveryChangeOfEveryZone() async throws {
        var network = NetworkConfiguration()
        network.outboxBytes = 1 << 20
        // The connection stays open however long the suite's load makes the steps below: the
        // non-reader sends nothing after its subscriptions, which the idle timeout would end
        // after 45 s, and then takes nothing, which the unwritable one would (the other tests
        // of this suite cover both).
        network.idleTimeout = .seconds(600)
        network.unwritableTimeout = .seconds(600)
        let a = try await LoopbackNode.start("a", network: network)
        defer { Task { await a.stop() } }
        var subscribes = [Frame]()
        for zone in Self.zones {
            let info = try await a.store.createZone(zone)
            subscribes.append(
                Frame(
                    type: .subscribe,
                    payload: SubscribeMessage(zone: zone, incarnation: info.incarnation, token: nil, window: 64)
                        .encoded()))
        }
        let mallory = try DeviceIdentity.generate()
        await a.net.trust(mallory.deviceID)
        let node = NodeID.random()
        let hello = Frame(type: .hello, payload: HelloMessage(node: node, name: "non-reader", zones: []).encoded())
        let client = try await NonReadingClient.connect(
            port: a.port, identity: mallory,
            send: try ([hello] + subscribes).flatMap { try FrameEncoder(options: .init(mode: .none)).encode($0) })
        defer { client.close() }
        // Every subscription answered (caught up on an empty zone) before anything is written:
        // within moments alone, and within the default bound under the whole suite's load.
        #expect(
            await eventually {
                await a.net.sync.replication().filter { $0.peer == node && $0.sending && $0.sentCaughtUp }.count
                    == Self.zones.count
            })

        var rng = SystemRandomNumberGenerator()
        for zone in Self.zones {
            _ = try await a.store.modify(
                saving: (0..<Self.recordsPerZone).map { Self.record($0, in: zone, rng: &rng) }, policy: .allKeys)
        }
        let total = Self.zones.count * Self.recordsPerZone * Self.recordBytes
        // Every change has reached the engine once the last zone's news is handled; sample what
        // waits for the peer meanwhile and for a while after: 2 s, and on a loaded machine until
        // the engine has filled the outbox past its bound (at most 60 s).
        var most = 0
        let start = ContinuousClock.now
        while ContinuousClock.now < start + .seconds(2)
            || (most <= network.outboxBytes && ContinuousClock.now < start + .seconds(60))
        {
            most = max(most, await a.net.outboundBytes(of: mallory.deviceID) ?? 0)
            try await Task.sleep(for: .milliseconds(20))
        }
        let bound = network.outboxBytes + Self.recordsPerZone * Self.recordBytes + (1 << 20) + (64 << 10)
        #expect(most > network.outboxBytes, "the peer was served until its outbox passed the bound")
        #expect(
            most <= bound,
            "the node held \(most) bytes for a peer that reads nothing (bound \(bound), the zones' changes are \(total))"
        )
    }

    /// What a connection over its bound was held back from is sent once it drains: a reading
    /// peer behind a small outbox still gets every change of every zone.
    @Test func changesHeldBackWhileTheOutboxIsFullGoOnceItDrains() async throws {
        var network = NetworkConfiguration()
        network.outboxBytes = 1
        let a = try await LoopbackNode.start("a", network: network)
        defer { Task { await a.stop() } }
        let b = try await LoopbackNode.start("b")
        defer { Task { await b.stop() } }
        for zone in Self.zones { try await a.createSharedZone(zone, with: [b]) }
        await LoopbackNode.trustEachOther(a, b)
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(
            await eventually {
                Set((try? await b.store.zones().map(\.id)) ?? []) == Set(Self.zones)
            })
        #expect(
            await eventually {
                await a.net.sync.replication().filter { $0.sending && $0.sentCaughtUp }.count == Self.zones.count
            })
        // One commit: the news of every zone reaches the engine at once, and all but the first
        // find the connection over its bound.
        var rng = SystemRandomNumberGenerator()
        _ = try await a.store.modify(
            saving: Self.zones.flatMap { zone in (0..<Self.recordsPerZone).map { Self.record($0, in: zone, rng: &rng) }
            }, policy: .allKeys)
        var counts = [Int]()
        let all = await eventually {
            counts = []
            for zone in Self.zones { counts.append((try? await b.store.allRecordIDs(in: zone).count) ?? 0) }
            return counts.allSatisfy { $0 == Self.recordsPerZone }
        }
        #expect(all, "records of each zone on the peer: \(counts)")
    }
}

/// A TLS client with a device identity of its own that sends `bytes` once the handshake completes
/// and reads nothing after it (its receive buffer is small, so little of what the node sends fits).
struct NonReadingClient {
    let channel: any Channel

    static func connect(port: Int, identity: DeviceIdentity, send bytes: [UInt8]) async throws -> NonReadingClient {
        let context = try TLSTestClient.context(identity)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelOption(.socketOption(.so_rcvbuf), value: 16 << 10)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let ops = channel.pipeline.syncOperations
                    try ops.addHandler(
                        NIOSSLClientHandler(
                            context: context, serverHostname: nil,
                            customVerificationCallback: { _, p in p.succeed(.certificateVerified) }))
                    try ops.addHandler(StopReading(send: bytes))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return NonReadingClient(channel: channel)
    }

    func close() { channel.close(promise: nil) }

    /// Sends its bytes after the handshake, then turns reading off.
    final class StopReading: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let send: [UInt8]

        init(send: [UInt8]) { self.send = send }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted = event as? TLSUserEvent {
                try? context.channel.syncOptions?.setOption(.autoRead, value: false)
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: send)), promise: nil)
            }
            context.fireUserInboundEventTriggered(event)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }
}
