// LoopbackReplicationTests: nodes replicate over real TCP on 127.0.0.1 — a line, live changes, conflicts.

import Foundation
import Logging
import NIOCore
import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
import ShoalSync
import ShoalTrust
@testable import ShoalNet

/// A node with its store in a temporary directory and a device identity of its own, listening
/// with TLS on an ephemeral loopback port. It trusts no device until ``trustEachOther(_:)``.
struct LoopbackNode {
    let directory: String
    let store: Store
    let net: NetworkNode
    let port: Int
    let identity: DeviceIdentity
    var device: DeviceID { identity.deviceID }

    /// Makes every node trust every other.
    static func trustEachOther(_ nodes: LoopbackNode...) async {
        for a in nodes { for b in nodes where a.device != b.device { await a.net.trust(b.device) } }
    }

    static func start(
        _ name: String, assets: (any AssetProvider)? = nil, network: NetworkConfiguration = NetworkConfiguration(),
        sync: SyncConfiguration = SyncConfiguration(), identity: DeviceIdentity? = nil,
        trusting: Set<DeviceID> = [], group: (any EventLoopGroup)? = nil
    ) async throws -> LoopbackNode {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-net-\(name)-\(UInt32.random(in: 0 ... .max))"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var c = Store.Configuration()
        c.synchronous = .normal
        let store = try Store.open(directory: dir, configuration: c)
        var sc = sync
        sc.nodeName = name
        let identity = try identity ?? DeviceIdentity.generate()
        let traced = ProcessInfo.processInfo.environment["SHOAL_NET_TRACE"] != nil
        var network = network
        if traced {
            var logger = Logger(label: "shoal.net.\(name)", factory: { StreamLogHandler.standardError(label: $0) })
            logger.logLevel = .debug
            network.logger = logger
        }
        let syncNode = SyncNode(
            store: store, configuration: sc, assets: assets, signer: ShareSigner(privateKey: identity.privateKey))
        if traced {
            await syncNode.setTrace { line in FileHandle.standardError.write(Data("[\(name)] \(line)\n".utf8)) }
        }
        let net = NetworkNode(
            sync: syncNode, tls: try PeerTLS(identity: identity),
            trusting: trusting, configuration: network, group: group)
        let address = try await net.listen(host: "127.0.0.1", port: 0)
        try await net.start()
        return LoopbackNode(directory: dir, store: store, net: net, port: address.port ?? 0, identity: identity)
    }

    /// Creates `zone`, owned by this node's device, and shares it with each of `members` as `role`.
    func createSharedZone(_ zone: RecordZone.ID, with members: [LoopbackNode], role: ZoneShare.Role = .readWrite)
        async throws
    {
        try await net.sync.createZone(zone)
        for m in members { await net.deliver(try await net.sync.setMember(m.device, role: role, of: zone)) }
    }

    /// Saves a record referencing `asset` in `zone`, creating the zone first if this node lacks
    /// it: owned here and shared read-write with `members`, or open to every trusted device
    /// (`members` nil). A node serves an asset only to devices that may read a zone whose live
    /// records reference it (Spec/replication.md §3.7).
    func reference(
        _ asset: Asset, sharedWith members: [LoopbackNode]?, in zone: RecordZone.ID = RecordZone.ID(name: "files")
    ) async throws {
        if (try? await store.zone(zone)) == nil {
            if let members { try await createSharedZone(zone, with: members) } else { try await store.createZone(zone) }
        }
        var r = Record(recordType: "File", id: Record.ID(name: asset.hash.hex, zone: zone))
        r["file"] = .asset(asset)
        _ = try await store.save(r)
    }

    func stop() async {
        await net.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Waits (bounded) until `condition` holds; false on timeout.
///
/// The bound is 240 s, far above what a passing run needs alone and above the longest a passing
/// run has taken inside a full `swift test`: every suite starts at once on two cores, and each
/// hop of a node's engine waits behind the jobs of every other test, so a test that takes 0.3 s
/// alone (`StreamCompressionTCPTests`) took 86 s in a full run, and failed a bound of 90 s in CI.
/// The bound limits only how long a failure takes.
func eventually(timeout: Duration = .seconds(240), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

@Suite(.serialized) struct LoopbackReplicationTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String, _ text: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["text"] = .string(text)
        return r
    }

    @Test func lineOfThreeConvergesOverTCP() async throws {
        let a = try await LoopbackNode.start("a"), b = try await LoopbackNode.start("b"),
            c = try await LoopbackNode.start("c")
        defer {
            Task {
                await a.stop(); await b.stop(); await c.stop()
            }
        }
        await LoopbackNode.trustEachOther(a, b, c)
        try await a.createSharedZone(Self.notes, with: [b, c])
        for i in 0..<50 { _ = try await a.store.save(note("a\(i)", "from a \(i)")) }
        // A line: B dials A, C dials B. A change reaches C only through B.
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        await c.net.addPeer(host: "127.0.0.1", port: b.port)
        #expect(try await eventually { (try? await c.store.allRecordIDs(in: Self.notes).count) == 50 })
        // Live changes both ways after catch-up.
        _ = try await c.store.save(note("c1", "from c"))
        _ = try await a.store.save(note("a-live", "live from a"))
        #expect(
            try await eventually {
                let fromC = try? await a.store.record(for: Record.ID(name: "c1", zone: Self.notes))
                let fromA = try? await c.store.record(for: Record.ID(name: "a-live", zone: Self.notes))
                return fromC != nil && fromA != nil
            })
        // Concurrent edits of one record on both ends converge to the same bytes everywhere.
        var ea = try await a.store.record(for: Record.ID(name: "a1", zone: Self.notes))
        var ec = try await c.store.record(for: Record.ID(name: "a1", zone: Self.notes))
        ea["text"] = .string("edited on a"); ea["tagA"] = .bool(true)
        ec["text"] = .string("edited on c"); ec["tagC"] = .bool(true)
        _ = try await a.store.save(ea)
        _ = try await c.store.save(ec)
        #expect(
            try await eventually {
                let da = try await a.store.digest(of: Self.notes), db = try await b.store.digest(of: Self.notes),
                    dc = try await c.store.digest(of: Self.notes)
                return da == db && db == dc && da.recordCount == 52
            })
        let merged = try await b.store.record(for: Record.ID(name: "a1", zone: Self.notes))
        #expect(merged["tagA"] == .bool(true) && merged["tagC"] == .bool(true), "fields changed on one side only merge")
    }

    @Test func malformedBytesCloseOnlyThatConnection() async throws {
        let a = try await LoopbackNode.start("a")
        defer { Task { await a.stop() } }
        try await a.createSharedZone(Self.notes, with: [])
        _ = try await a.store.save(note("kept", "still here"))
        // A raw TCP client sends garbage where a TLS handshake belongs: TLS refuses it (an alert
        // at most, never a frame) and the connection closes.
        let got = try await RawClient.exchange(port: a.port, send: Array("GET / HTTP/1.1\r\n\r\n".utf8))
        var reader = FrameReader()
        #expect(((try? reader.frames(in: got)) ?? []).isEmpty, "no frame crosses a connection without TLS")
        #expect(
            try await a.store.record(for: Record.ID(name: "kept", zone: Self.notes))["text"] == .string("still here"))
        // The node still serves a well-behaved peer afterwards.
        let b = try await LoopbackNode.start("b")
        defer { Task { await b.stop() } }
        await LoopbackNode.trustEachOther(a, b)
        await a.net.deliver(try await a.net.sync.setMember(b.device, role: .readOnly, of: Self.notes))
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(try await eventually { (try? await b.store.allRecordIDs(in: Self.notes).count) == 1 })
    }
}
