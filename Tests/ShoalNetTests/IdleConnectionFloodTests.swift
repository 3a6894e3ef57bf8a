// IdleConnectionFloodTests: a trusted peer gets in within seconds while strangers from 64 addresses hold every place with idle connections.

import Foundation
import NIOCore
import NIOPosix
import Testing
import ShoalStore
import ShoalWire
import ShoalSync
import ShoalTrust
@testable import ShoalNet

@Suite(.serialized, .timeLimit(.minutes(5))) struct IdleConnectionFloodTests {
    static let notes = RecordZone.ID(name: "notes")
    /// Event loops of the suite's own, as a daemon has: the suites running beside this one share
    /// NIO's, and would make the node slow to accept whatever it does with the flood. Kept for
    /// the process's life, as NIO's own are.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)

    func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["text"] = .string("note \(name)")
        return r
    }

    /// Small limits, so the flood's churn is quick: 64 addresses, two connections each, for 32 places.
    @Test func aTrustedPeerReconnectsWithinSecondsDuringAFloodOfIdleConnections() async throws {
        var network = NetworkConfiguration()
        network.maxInboundConnections = 32
        network.maxConnectionsPerAddress = 4
        try await floodThenReconnect(network, perAddress: 2)
    }

    /// The default limits (256 places, 16 per address): 64 addresses, five connections each.
    @Test func aTrustedPeerReconnectsWithinSecondsAtTheDefaultLimits() async throws {
        try await floodThenReconnect(NetworkConfiguration(), perAddress: 5)
    }

    /// `a` holds a zone shared with `b`, which dials it and syncs, and restarts once (the
    /// reconnect alone); then strangers from 64 loopback addresses open idle connections to
    /// `a`, more than its places, and reopen each one `a` closes within milliseconds. `b`'s
    /// connection, which has shown a trusted device, stays; `b` restarts, and its new connection
    /// must get in and replicate a record saved on `a` during the flood within 5 s — plus what
    /// the same reconnect took without the flood, which is a fraction of a second alone, and
    /// more when the suites beside this one keep both cores busy.
    func floodThenReconnect(_ network: NetworkConfiguration, perAddress: Int) async throws {
        let group = Self.group
        let a = try await LoopbackNode.start("flood-a", network: network, group: group)
        var b = try await LoopbackNode.start("flood-b", group: group)
        defer {
            let b = b
            Task {
                await a.stop(); await b.stop()
            }
        }
        await LoopbackNode.trustEachOther(a, b)
        try await a.createSharedZone(Self.notes, with: [b])
        _ = try await a.store.save(note("before"))
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        // Setting up is not what is measured: the usual bound, as the suites beside this one may
        // keep both cores busy.
        #expect(await eventually { (try? await b.store.allRecordIDs(in: Self.notes).count) == 1 })

        /// Saves `name` on `a`, restarts `b`, and returns how long `b` took to hold it (at most `bound`).
        func reconnect(_ name: String, within bound: Duration) async throws -> (Bool, Duration) {
            _ = try await a.store.save(note(name))
            b = try await b.restarted(group: group)
            await b.net.trust(a.device)
            let t0 = ContinuousClock.now
            await b.net.addPeer(host: "127.0.0.1", port: a.port)
            let replicated = await eventually(timeout: bound) {
                (try? await b.store.record(for: Record.ID(name: name, zone: Self.notes))) != nil
            }
            return (replicated, ContinuousClock.now - t0)
        }
        let (alone, aloneTime) = try await reconnect("alone", within: .seconds(90))
        #expect(alone)

        let flood = IdleFlood(port: a.port, addresses: 64, perAddress: perAddress, deadline: .seconds(30))
        defer { flood.stop() }
        let strangers = 64 * perAddress
        let full = await eventually(timeout: .seconds(20)) {
            flood.now.connected >= network.maxInboundConnections && flood.now.reopened > 0
        }
        #expect(full, "the flood did not fill the node's \(network.maxInboundConnections) places: \(flood.now)")
        try await Task.sleep(for: .milliseconds(500))
        #expect(
            await a.net.connectedDevices.contains(b.device), "the trusted device's connection was closed by the flood")
        #expect(await a.net.admission.open[.trusted] == 1, "the trusted device's connection keeps its place")

        // b restarts during the flood: its connection goes, the flood takes the place, and b dials again.
        let bound = .seconds(5) + aloneTime
        let (replicated, elapsed) = try await reconnect("during", within: bound)
        let churn = flood.now
        flood.stop()
        let state =
            "evicted \(await a.net.evictedConnections), open \(await a.net.admission.open), b's dials \(await b.net.peers())"
        #expect(
            replicated && elapsed <= bound + .milliseconds(100),
            """
            the restarted trusted peer did not replicate within 5 s (plus \(aloneTime), the reconnect without the flood) \
            during the flood (\(strangers) idle connections for \(network.maxInboundConnections) places; \(churn); \(state))
            """)
        // The places the flood lost went to its newer connections; none was refused (the trusted
        // device never held them all, and no address reached its own limit).
        #expect(
            await a.net.evictedConnections > 0, "the flood kept reopening the connections the node closed: \(churn)")
        #expect(await a.net.refusedConnections == 0)
    }
}

extension LoopbackNode {
    /// This node after a restart: its transport shut down and a new one, over the same store
    /// and device identity (so the same node ID), listening on a new port. It trusts no device
    /// yet.
    func restarted(network: NetworkConfiguration = NetworkConfiguration(), group: (any EventLoopGroup)? = nil)
        async throws -> LoopbackNode
    {
        await net.shutdown()
        var sc = SyncConfiguration()
        sc.nodeName = "restarted"
        let net = NetworkNode(
            sync: SyncNode(store: store, configuration: sc, signer: ShareSigner(privateKey: identity.privateKey)),
            tls: try PeerTLS(identity: identity), configuration: network, group: group)
        let address = try await net.listen(host: "127.0.0.1", port: 0)
        try await net.start()
        return LoopbackNode(directory: directory, store: store, net: net, port: address.port ?? 0, identity: identity)
    }
}
