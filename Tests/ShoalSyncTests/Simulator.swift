// Simulator: many SyncNodes over a simulated network driven by one seed (delays, resets, partitions, crashes).

import Foundation
import Testing
import Synchronization
import ShoalSamples
import ShoalStore
import ShoalTrust
import ShoalWire
@testable import ShoalSync

/// A wall clock the simulation advances; every node reads it through its store's configuration.
final class SimClock: Sendable {
    let milliseconds = Mutex<UInt64>(1_800_000_000_000)
    func now() -> UInt64 { milliseconds.withLock { $0 } }
    func advance(_ ms: UInt64) { milliseconds.withLock { $0 &+= ms } }
}

/// Node IDs and incarnations from a seeded generator.
final class SimIdentifiers: Sendable {
    let rng: Mutex<SplitMix64>
    init(seed: UInt64) { rng = Mutex(SplitMix64(seed: seed ^ 0x1D5)) }
    func next() -> NodeID { rng.withLock { NodeID(high: $0.next(), low: $0.next()) } }
}

/// A deterministic simulation of `count` nodes.
///
/// One task drives everything, choosing each step from a seeded generator, so a seed always
/// replays the same run. Frames cross the simulated network as bytes: encoded with
/// ``FrameEncoder`` and read back with ``FrameReader`` in random splits, as from a socket.
final class Simulation {
    struct Node {
        let directory: String
        var store: Store
        var sync: SyncNode
        var up = true
        let skew: Int64
        /// The node's device key, when the simulation gives nodes identities: its connections
        /// then name the device at the other end and every share is checked (Spec/security.md §6).
        var signer: ShareSigner? = nil
        var device: DeviceID? { signer?.device }
    }

    /// One direction of a connection: bytes in flight and the reader at the far end.
    struct Pipe {
        var inFlight: [[UInt8]] = []
        var reader = FrameReader()
    }

    struct Link {
        let a: Int, b: Int
        let connA: ConnectionID, connB: ConnectionID
        var toB = Pipe(), toA = Pipe()
    }

    var rng: SplitMix64
    let clock: SimClock
    let ids: SimIdentifiers
    var nodes: [Node] = []
    var links: [Link] = []
    var partitions = Set<[Int]>()
    /// The pairs that may connect (a sparse topology); nil lets every pair connect.
    var topology: Set<[Int]>? = nil
    /// Bytes of frames delivered so far, as they crossed the simulated network.
    var bytesDelivered = 0
    let root: String
    let encoder = FrameEncoder()
    /// For frames that carry shares when nodes have identities: ECDSA signatures are randomized,
    /// and compressed their bytes would change a frame's length, hence the seeded pieces it is
    /// delivered in, and a seed would not replay.
    let plainEncoder = FrameEncoder(options: .init(mode: .none))
    var framesDelivered = 0
    /// Whether asset frames in flight on a link are handed over together
    /// (``SyncNode/receiveAssetFrames(_:)``), as a transport's asset lane takes every frame
    /// waiting; otherwise one at a time.
    var batchAssetFrames = false
    /// The most asset frames handed over together so far.
    var largestAssetBatch = 0
    var crashes = 0
    /// Whether the workload's writes include bulk writes (``Simulation/bulkWrite(on:zone:log:)``).
    /// Off by default, so that the seeds other tests replay keep their schedules.
    var bulkWrites = false
    /// Records saved by bulk writes so far, named `b0`, `b1`, ….
    var bulkRecords = 0
    /// Whether ``run(steps:)`` purges tombstones, retires peers and has a node join late
    /// (by default; SHOAL_SIM_PURGE=0 turns it off for every seed).
    var purging = Simulation.purges
    /// Print every node's trace lines (for debugging one seed).
    var trace = false

    func enableTrace() async {
        trace = true
        for n in nodes.indices { await nodes[n].sync.setTrace { line in print(line) } }
    }
    var log: [String] = []

    /// How every store is opened, after the simulation's defaults (`NORMAL` commits, the simulated
    /// clock, seeded identifiers): the power-loss soak opens them through its VFS.
    let storeSetup: @Sendable (inout Store.Configuration) -> Void

    /// `identities`: each node gets a device key, connections are authenticated as the device at
    /// the other end, and zones are owned and shared (``createSharedZone(_:on:)``). `storeSetup`
    /// changes how the stores are opened.
    init(
        seed: UInt64, nodes count: Int, configuration: SyncConfiguration = SyncConfiguration(),
        identities: Bool = false,
        storeSetup: @escaping @Sendable (inout Store.Configuration) -> Void = { _ in }
    ) async throws {
        rng = SplitMix64(seed: seed)
        ids = SimIdentifiers(seed: seed)
        self.storeSetup = storeSetup
        // Live batching reads the simulated clock: a seed replays the same batches.
        var configuration = configuration
        // SHOAL_SIM_DELTAS=0 sends changed fields whole, to tell a delta slot's fault from others.
        if ProcessInfo.processInfo.environment["SHOAL_SIM_DELTAS"] == "0" { configuration.fieldDeltas = false }
        let clock = SimClock(), origin = ContinuousClock.now, start = clock.now()
        self.clock = clock
        configuration.now = { origin + .milliseconds(Int64(clock.now() &- start)) }
        // Acknowledgements are written on that clock and awaited: a seed replays the same store.
        configuration.awaitsAcknowledgementWrites = true
        root =
            FileManager.default.temporaryDirectory.appendingPathComponent(
                "shoal-sim-\(seed)-\(UInt32.random(in: 0 ... .max))"
            ).path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        // Its own generator: keys do not shift the workload's draws.
        var keys = SplitMix64(seed: seed ^ 0x6B65_7973)
        for i in 0..<count {
            let dir = root + "/node\(i)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let skew = Int64(rng.next() % 2000) - 1000
            let store = try await Self.openStore(dir, clock: clock, skew: skew, ids: ids, setup: storeSetup)
            // Keys from the seed: a seed replays the same devices (signatures still differ, in
            // bytes only, never in length).
            var signer: ShareSigner? = nil
            while identities && signer == nil {
                var raw = [UInt8]()
                for _ in 0..<4 { raw += withUnsafeBytes(of: keys.next().littleEndian, Array.init) }
                signer = ShareSigner.seeded(raw)
            }
            nodes.append(
                Node(
                    directory: dir, store: store,
                    sync: SyncNode(store: store, configuration: configuration, signer: signer), skew: skew,
                    signer: signer))
        }
        self.configuration = configuration
    }

    let configuration: SyncConfiguration

    deinit { try? FileManager.default.removeItem(atPath: root) }

    static func openStore(
        _ dir: String, clock: SimClock, skew: Int64, ids: SimIdentifiers,
        setup: @Sendable (inout Store.Configuration) -> Void = { _ in }
    ) async throws -> Store {
        var c = Store.Configuration()
        c.newIdentifier = { ids.next() }
        c.synchronous = .normal
        c.wallClock = { UInt64(Int64(clock.now()) &+ skew) }
        setup(&c)
        return try Store.open(directory: dir, configuration: c)
    }

    /// Opens node `n`'s store again, as the simulation opens every store.
    func reopenStore(of n: Int) async throws -> Store {
        try await Self.openStore(nodes[n].directory, clock: clock, skew: nodes[n].skew, ids: ids, setup: storeSetup)
    }

    func int(_ n: Int) -> Int { n <= 0 ? 0 : Int(rng.next() % UInt64(n)) }
    func chance(_ percent: Int) -> Bool { int(100) < percent }

    /// Node `n`'s connection to node `peer` (a test that forges frames sends them on it).
    func connection(of n: Int, to peer: Int) throws -> ConnectionID {
        let link = try #require(links.first { ($0.a == n && $0.b == peer) || ($0.a == peer && $0.b == n) })
        return link.a == n ? link.connA : link.connB
    }

    /// The error a node closed `conn` with in `out`, if it did.
    static func closeError(_ out: [ConnectionID: [SyncOutput]], _ conn: ConnectionID) -> ErrorMessage? {
        out[conn, default: []].lazy.compactMap { if case .close(let e) = $0 { e } else { nil } }.first
    }

    /// Creates `zone` on node `owner`, owned by it and shared read-write with every other node
    /// (with identities), or open to all (without).
    func createSharedZone(_ zone: RecordZone.ID, on owner: Int) async throws {
        _ = try await nodes[owner].sync.createZone(zone)
        for n in nodes.indices where n != owner {
            guard let d = nodes[n].device else { continue }
            _ = try await nodes[owner].sync.setMember(d, role: .readWrite, of: zone)
        }
    }

    // MARK: Network

    func pairKey(_ a: Int, _ b: Int) -> [Int] { [min(a, b), max(a, b)] }

    /// Cuts the link between nodes `a` and `b` and keeps them apart.
    func separate(_ a: Int, _ b: Int) async {
        partitions.insert(pairKey(a, b))
        while let i = links.firstIndex(where: { pairKey($0.a, $0.b) == pairKey(a, b) }) { await reset(i) }
    }
    func connected(_ a: Int, _ b: Int) -> Bool { links.contains { pairKey($0.a, $0.b) == pairKey(a, b) } }

    /// Opens a connection between two up, unpartitioned nodes; a second one beside an open one
    /// only when `duplicate` (as when two nodes dial each other).
    func connect(_ a: Int, _ b: Int, duplicate: Bool = false) async throws {
        guard a != b, nodes[a].up, nodes[b].up, !partitions.contains(pairKey(a, b)), duplicate || !connected(a, b),
            topology?.contains(pairKey(a, b)) ?? true
        else { return }
        let (ca, outA) = await nodes[a].sync.open(device: nodes[b].device)
        let (cb, outB) = await nodes[b].sync.open(device: nodes[a].device)
        links.append(Link(a: a, b: b, connA: ca, connB: cb))
        let i = links.count - 1
        try await deliverOutputs(outA, link: i, fromA: true)
        try await deliverOutputs(outB, link: i, fromA: false)
    }

    /// Breaks link `i` (a connection reset): bytes in flight are lost.
    func reset(_ i: Int) async {
        let l = links.remove(at: i)
        // What the ends say to their other peers (their upstreams changed) goes out too.
        let fromA = await nodes[l.a].sync.closed(l.connA)
        let fromB = await nodes[l.b].sync.closed(l.connB)
        try? await route(fromA, from: l.a)
        try? await route(fromB, from: l.b)
    }

    func deliverOutputs(_ outputs: [SyncOutput], link i: Int, fromA: Bool) async throws {
        for o in outputs {
            guard i < links.count else { return }
            switch o {
            case .send(let frame):
                // Shares and writer log checkpoints carry ECDSA signatures, which are randomized:
                // compressed, their frames' sizes (and so how they are cut into pieces) would
                // differ from run to run.
                let carriesShares =
                    (frame.type == .hello || frame.type == .zones || frame.type == .changes
                        || frame.type == .liveChanges)
                    && nodes.first?.signer != nil
                let bytes = try (carriesShares ? plainEncoder : encoder).encode(frame)
                if fromA { links[i].toB.inFlight.append(bytes) } else { links[i].toA.inFlight.append(bytes) }
            case .close(let error):
                if let error { log.append("node \(fromA ? links[i].a : links[i].b) closed a link: \(error)") }
                await reset(i)
                return
            }
        }
    }

    /// Delivers the oldest bytes in flight on link `i`, towards B first; false when none are.
    func step(link i: Int) async throws -> Bool {
        guard i < links.count else { return false }
        if !links[i].toB.inFlight.isEmpty { try await deliver(link: i, toB: true); return true }
        if !links[i].toA.inFlight.isEmpty { try await deliver(link: i, toB: false); return true }
        return false
    }

    /// Delivers the oldest bytes in flight on one direction of link `i`, in random pieces.
    func deliver(link i: Int, toB: Bool) async throws {
        var pipe = toB ? links[i].toB : links[i].toA
        guard !pipe.inFlight.isEmpty else { return }
        var frames = [Frame]()
        func isAsset(_ f: Frame) -> Bool { f.type == .assetChunk || f.type == .assetRequest }
        repeat {
            let bytes = pipe.inFlight.removeFirst()
            bytesDelivered += bytes.count
            var at = 0
            while at < bytes.count {
                let n = min(bytes.count - at, 1 + int(bytes.count))
                frames += try pipe.reader.frames(in: Array(bytes[at..<at + n]))
                at += n
            }
            // Batching: more asset frames behind these join them (up to the first other frame).
        } while batchAssetFrames && !pipe.inFlight.isEmpty && frames.allSatisfy(isAsset)
        if toB { links[i].toB = pipe } else { links[i].toA = pipe }
        let (receiver, conn) = toB ? (links[i].b, links[i].connB) : (links[i].a, links[i].connA)
        // Decoded ahead as a transport's read loop does, before the frames before them are
        // handled: a batch read against a reference that handling then moves is decoded again.
        let ahead = frames.map { nodes[receiver].sync.decodeAhead($0, on: conn) }
        var k = 0
        while k < frames.count {
            guard links.contains(where: { $0.connA == conn || $0.connB == conn }) else { return }
            var end = k + 1
            while batchAssetFrames, isAsset(frames[k]), end < frames.count, isAsset(frames[end]) { end += 1 }
            framesDelivered += end - k
            if isAsset(frames[k]) { largestAssetBatch = max(largestAssetBatch, end - k) }
            let out =
                end - k > 1 || (batchAssetFrames && isAsset(frames[k]))
                ? await nodes[receiver].sync.receiveAssetFrames(frames[k..<end].map { (conn, $0) })
                : await nodes[receiver].sync.receive(frames[k], on: conn, decoded: ahead[k])
            try await route(out, from: receiver)
            if frames[k].type == .changes || frames[k].type == .liveChanges { try await notifyChanges(node: receiver) }
            k = end
        }
    }

    /// Lets the simulated clock pass the live batching delay and sends every node's held news, as
    /// a transport's timer would (``SyncNode/sendHeldNews()``); whether anything was sent.
    @discardableResult
    func sendHeldNews() async throws -> Bool {
        var any = false
        for n in nodes.indices where nodes[n].up {
            guard let due = await nodes[n].sync.heldNewsDeadline else { continue }
            let now = configuration.now()
            if due > now { clock.advance(UInt64((due - now) / .milliseconds(1)) + 1) }
            let out = await nodes[n].sync.sendHeldNews()
            any = any || !out.isEmpty
            try await route(out, from: n)
        }
        return any
    }

    /// Writes every node's held acknowledgements that are due on the simulated clock, as a
    /// transport's timer would (``SyncNode/writeHeldAcknowledgements()``); with `waiting`, first
    /// lets the clock pass the earliest deadline, so none stays held.
    func writeHeldAcknowledgements(waiting: Bool = false) async {
        for n in nodes.indices where nodes[n].up {
            if waiting, let due = await nodes[n].sync.heldAcknowledgementsDeadline {
                let now = configuration.now()
                if due > now { clock.advance(UInt64((due - now) / .milliseconds(1)) + 1) }
            }
            await nodes[n].sync.writeHeldAcknowledgements()
        }
    }

    /// Tells a node's idle subscriptions that its zones changed.
    func notifyChanges(node n: Int) async throws {
        for z in await nodes[n].store.zones() {
            try await route(await nodes[n].sync.zoneChanged(z.id), from: n)
        }
    }

    /// Sends a node's outputs on the links of the connections they name.
    func route(_ out: [ConnectionID: [SyncOutput]], from n: Int) async throws {
        for (conn, outputs) in out.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            guard
                let li = links.firstIndex(where: { ($0.a == n && $0.connA == conn) || ($0.b == n && $0.connB == conn) })
            else { continue }
            try await deliverOutputs(outputs, link: li, fromA: links[li].a == n)
        }
    }

    /// Tells every established peer of node `n` about its zones (after a zone was created or deleted).
    func announceZones(node n: Int) async throws {
        try await route(await nodes[n].sync.announceZones(), from: n)
    }

    /// Simulates kill -9 and restart: connections drop, the store is reopened from disk.
    func crash(_ n: Int) async throws {
        crashes += 1
        while let i = links.firstIndex(where: { $0.a == n || $0.b == n }) { await reset(i) }
        nodes[n].up = false
        let store = try await reopenStore(of: n)
        nodes[n].store = store
        nodes[n].sync = SyncNode(store: store, configuration: configuration, signer: nodes[n].signer)
        if trace { await nodes[n].sync.setTrace { print($0) }; print("CRASH node \(n) \(store.nodeID.short)") }
        nodes[n].up = true
    }

    /// Pending deliveries: (link, toB).
    var pending: [(Int, Bool)] {
        links.indices.flatMap { i -> [(Int, Bool)] in
            (links[i].toB.inFlight.isEmpty ? [] : [(i, true)]) + (links[i].toA.inFlight.isEmpty ? [] : [(i, false)])
        }
    }

    /// Delivers in rounds until the network is quiet: each round delivers, on every link and
    /// direction, the writes in flight when the round began (what they cause waits for the next
    /// round), so the count is the longest chain of messages the healing needed. Links in
    /// `topology` (or every pair) that closed are opened again between rounds. Nil past `maxRounds`.
    func runRoundsUntilQuiet(maxRounds: Int = 10_000) async throws -> Int? {
        var rounds = 0
        while rounds < maxRounds {
            // A link is named by its first node and that node's connection (IDs are per node).
            var waiting = links.flatMap { l in
                [(l.a, l.connA, true, l.toB.inFlight.count), (l.a, l.connA, false, l.toA.inFlight.count)]
            }.filter { $0.3 > 0 }
            if waiting.isEmpty, try await sendHeldNews() { continue }
            if waiting.isEmpty {
                await writeHeldAcknowledgements(waiting: true)
                let before = links.count
                for a in nodes.indices { for b in nodes.indices where a < b { try await connect(a, b) } }
                if links.count == before { return rounds }
                waiting = links.flatMap { l in
                    [(l.a, l.connA, true, l.toB.inFlight.count), (l.a, l.connA, false, l.toA.inFlight.count)]
                }.filter { $0.3 > 0 }
            }
            for (a, conn, toB, count) in waiting {
                for _ in 0..<count {
                    guard let i = links.firstIndex(where: { $0.a == a && $0.connA == conn }) else { break }
                    try await deliver(link: i, toB: toB)
                }
            }
            rounds += 1
        }
        return nil
    }

    /// Delivers everything until the network is quiet, in a seeded order (bounded); connections
    /// closed on purpose (a goodbye after zones changed) are re-opened, as a transport would.
    func runUntilQuiet(maxSteps: Int = 200_000, reconnect: Bool = true) async throws -> Bool {
        var steps = 0
        while true {
            if pending.isEmpty {
                if try await sendHeldNews() { continue }
                await writeHeldAcknowledgements(waiting: true)
                guard reconnect else { return true }
                let before = links.count
                for a in nodes.indices { for b in nodes.indices where a < b { try await connect(a, b) } }
                if links.count == before { return true }
                continue
            }
            let p = pending
            let (i, toB) = p[int(p.count)]
            try await deliver(link: i, toB: toB)
            clock.advance(UInt64(int(3)))
            steps += 1
            if steps > maxSteps { return false }
        }
    }

    /// The full state of a zone on node `n`: every record, tombstones included, by name.
    func state(of zone: RecordZone.ID, on n: Int) async throws -> [String: [UInt8]] {
        var out = [String: [UInt8]]()
        var token: ChangeToken? = nil
        while true {
            let page = try await nodes[n].store.changes(in: zone, since: token, limit: 1000)
            for r in page.records { out[r.id.name] = r.encoded() }
            token = page.token
            if !page.moreComing { break }
        }
        return out
    }
}
