// TLSTrustTests: mutual TLS on loopback — unknown devices get no byte, trust is pinned, a device keeps its node ID.

import Foundation
import NIOCore
import Testing
import ShoalStore
import ShoalWire
import ShoalSync
import ShoalTrust
@testable import ShoalNet

@Suite(.serialized, .timeLimit(.minutes(5))) struct TLSTrustTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["text"] = .string("secret \(name)")
        return r
    }

    /// A node with a zone of three records, owned by it and shared with nobody yet.
    func nodeWithRecords(_ name: String) async throws -> LoopbackNode {
        let a = try await LoopbackNode.start(name)
        try await a.createSharedZone(Self.notes, with: [])
        for i in 0..<3 { _ = try await a.store.save(note("n\(i)")) }
        return a
    }

    /// A hello frame, as a node would send it first, claiming `node`.
    static func hello(_ node: NodeID) -> [UInt8] {
        (try? FrameEncoder(options: .init(mode: .none)).encode(
            Frame(type: .hello, payload: HelloMessage(node: node, name: "test", zones: []).encoded()))) ?? []
    }

    @Test func anUnknownDeviceGetsNoByteAndIsPending() async throws {
        let a = try await nodeWithRecords("a")
        defer { Task { await a.stop() } }
        let stranger = try DeviceIdentity.generate()
        // It completes TLS, sends a valid hello and reads until the node closes.
        let result = try await TLSTestClient.exchange(
            port: a.port, identity: stranger, send: Self.hello(NodeID.random()))
        #expect(result.handshakeCompleted, "refused after the TLS handshake, not during it")
        #expect(result.closedByPeer, "the node closed the connection")
        #expect(result.received.isEmpty, "an unknown device received \(result.received.count) application bytes")
        // The engine notes the device as it refuses the connection, which the client may see
        // closed first when the whole suite loads the machine.
        #expect(await eventually { await a.net.pendingDevices().isEmpty == false })
        let pending = await a.net.pendingDevices()
        #expect(pending.map(\.device) == [stranger.deviceID])
        #expect(pending.first?.address == "127.0.0.1:\(result.localPort)")
        #expect(pending.first?.count == 1)
        #expect(await a.net.connectionCount == 0)
    }

    @Test func aPlaintextClientIsRefused() async throws {
        let a = try await nodeWithRecords("a")
        defer { Task { await a.stop() } }
        // A valid Shoal hello, in the clear: TLS expects a ClientHello, so at most an alert comes back.
        let got = try await RawClient.exchange(port: a.port, send: Self.hello(NodeID.random()))
        var reader = FrameReader()
        #expect(((try? reader.frames(in: got)) ?? []).isEmpty, "a frame crossed a connection without TLS")
        #expect(!got.contains(where: { $0 == UInt8(ascii: "s") }) || got.count < 16, "no record text in what came back")
        #expect(await a.net.connectionCount == 0)
        #expect(await a.net.pendingDevices().isEmpty, "no certificate, so no device to list")
    }

    /// `a` with three notes and `b`, trusting each other, `b` dialling `a`; returns once `b` is
    /// asked to dial (the caller waits for the notes and stops both).
    func trustedPair() async throws -> (a: LoopbackNode, b: LoopbackNode) {
        let a = try await nodeWithRecords("a")
        let b = try await LoopbackNode.start("b")
        await LoopbackNode.trustEachOther(a, b)
        await a.net.deliver(try await a.net.sync.setMember(b.device, role: .readWrite, of: Self.notes))
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        return (a, b)
    }

    @Test func aTrustedPairReplicatesOverTLS() async throws {
        let (a, b) = try await trustedPair()
        defer {
            Task {
                await a.stop(); await b.stop()
            }
        }
        #expect(await eventually { (try? await b.store.allRecordIDs(in: Self.notes).count) == 3 })
        let peer = try #require(await b.net.peers().first)
        #expect(peer.device == a.device, "b knows a by the device ID of its certificate")
        #expect(peer.node == a.store.nodeID)
        #expect(await a.net.pendingDevices().isEmpty)
        #expect(await b.net.pendingDevices().isEmpty)
    }

    @Test func aDialledDeviceThatIsNotTrustedIsClosed() async throws {
        let a = try await nodeWithRecords("a")
        let b = try await LoopbackNode.start("b")
        defer {
            Task {
                await a.stop(); await b.stop()
            }
        }
        // a trusts b, but b does not trust a: b closes what it dialled before any frame.
        await a.net.trust(b.device)
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { await b.net.pendingDevices().first?.device == a.device })
        #expect(await b.net.pendingDevices().first?.address == "127.0.0.1:\(a.port)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(
            (try? await b.store.allRecordIDs(in: Self.notes)) == nil,
            "b received nothing from a device it does not trust")
        #expect(await b.net.peers().first?.isConnected == false)
    }

    @Test func distrustClosesALiveConnectionAtOnce() async throws {
        let (a, b) = try await trustedPair()
        defer {
            Task {
                await a.stop(); await b.stop()
            }
        }
        #expect(await eventually { (try? await b.store.allRecordIDs(in: Self.notes).count) == 3 })
        #expect(await a.net.connectionCount == 1)

        await a.net.distrust(b.device)
        #expect(
            await eventually { await a.net.connectionCount == 0 },
            "the connection outlived the distrust")
        // b redials (100 ms, then backing off) and is refused each time, after TLS.
        #expect(await eventually { await a.net.pendingDevices().first?.device == b.device })
        _ = try await a.store.save(note("after"))
        try await Task.sleep(for: .milliseconds(500))
        #expect(
            (try? await b.store.record(for: Record.ID(name: "after", zone: Self.notes))) == nil,
            "a change reached a distrusted device")
        #expect(await a.net.connectionCount == 0)
        // b keeps redialling: in TLS 1.3 its side of the handshake ends before a has checked
        // b's certificate, so for a moment after each dial b holds a connection a then closes.
        #expect(await eventually { await b.net.peers().first?.isConnected == false })
    }

    @Test func aDeviceThatPresentsAnotherNodesIDIsRefused() async throws {
        let a = try await nodeWithRecords("a")
        let b = try await LoopbackNode.start("b")
        defer {
            Task {
                await a.stop(); await b.stop()
            }
        }
        let mallory = try DeviceIdentity.generate()
        await LoopbackNode.trustEachOther(a, b)
        await a.net.deliver(try await a.net.sync.setMember(b.device, role: .readOnly, of: Self.notes))
        await a.net.trust(mallory.deviceID)
        // b connects first: its device is bound to its node ID.
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { (try? await b.store.allRecordIDs(in: Self.notes).count) == 3 })

        /// What `a` answers mallory's hello claiming `node`: the error frame's code, if any.
        func refusal(claiming node: NodeID, timeout: Duration = .seconds(90)) async throws -> (
            String?, TLSTestClient.Result
        ) {
            let r = try await TLSTestClient.exchange(
                port: a.port, identity: mallory, send: Self.hello(node), timeout: timeout)
            var reader = FrameReader()
            let frames = (try? reader.frames(in: r.received)) ?? []
            let error = frames.first { $0.type == .error }.flatMap { try? ErrorMessage(decoding: $0.payload) }
            return (error?.code, r)
        }
        // A trusted device claiming b's node ID, or a's own: refused, with a permission error.
        let (asB, r1) = try await refusal(claiming: b.store.nodeID)
        #expect(asB == "permissionFailure" && r1.closedByPeer)
        let (asA, r2) = try await refusal(claiming: a.store.nodeID)
        #expect(asA == "permissionFailure" && r2.closedByPeer)
        // b's own connection is untouched (the refused ones are gone once the engine has seen them close).
        #expect(await eventually { await a.net.connectionCount == 1 })
        #expect(await b.net.peers().first?.isConnected == true)

        // Mallory's first hello with an ID of its own binds it ...
        let own = NodeID.random()
        let (first, r3) = try await refusal(claiming: own, timeout: .seconds(2))
        #expect(first == nil && !r3.closedByPeer, "a device's first hello with a fresh node ID is accepted")
        // ... and a later hello with another is refused.
        let (second, r4) = try await refusal(claiming: NodeID.random())
        #expect(second == "permissionFailure" && r4.closedByPeer)
        // The bindings survive in the store (a new NetworkNode on it would read them).
        #expect(try await a.store.boundNode(of: mallory.deviceID) == own)
    }
}
