// HostileBenchmark: what peers that misbehave cost a node over loopback TLS — a peer that reads
// nothing, records near the size limit, thousands of idle connections, a flood of them from many addresses.

import CMallocCounter
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Shoal
import ShoalSamples
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

/// `shoal-bench hostile`: a node's memory and its honest peers' service while other connections
/// misbehave (Benchmarks/README.md, `hostile`). Lines: `hostile case=<name> key=value …`.
///
/// Every node runs in this process, so memory is the process's resident set (`VmRSS`), sampled
/// every 5 ms. Sizes can be set by environment variables: `SHOAL_BENCH_HOSTILE_ZONES` (100) and
/// `SHOAL_BENCH_HOSTILE_ZONE_MB` (2) for `non-reader`, `SHOAL_BENCH_HOSTILE_BIG_RECORDS` (2,000)
/// for `big-records`, `SHOAL_BENCH_HOSTILE_CONNECTIONS` (2,000) for `connections`,
/// `SHOAL_BENCH_HOSTILE_FLOOD_SECONDS` (20), `SHOAL_BENCH_HOSTILE_FLOOD_SIGNED` (20,000) and
/// `SHOAL_BENCH_HOSTILE_FLOOD_KINDS` (all) for `member-flood`, `SHOAL_BENCH_HOSTILE_FLOOD_PER_ADDRESS`
/// (5) for `idle-tcp-flood`; `SHOAL_BENCH_HOSTILE_CASES` picks cases
/// (`non-reader,connections,big-records,member-flood,idle-tcp-flood`).
enum HostileBenchmark: BenchmarkSuite {
    static let name = "hostile"
    static let summary =
        "misbehaving peers over loopback TLS: non-reader, big-records, connections, member-flood, idle-tcp-flood"

    static func run() throws { try runBlocking { try await runAsync() } }

    static func setting(_ key: String, _ fallback: Int) -> Int {
        ProcessInfo.processInfo.environment[key].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } ?? fallback
    }

    /// The cases to run: `SHOAL_BENCH_HOSTILE_CASES`, a comma-separated list (default all five).
    static var cases: Set<String> {
        let all: Set = ["non-reader", "connections", "big-records", "member-flood", "idle-tcp-flood"]
        guard let list = ProcessInfo.processInfo.environment["SHOAL_BENCH_HOSTILE_CASES"] else { return all }
        return all.intersection(list.split(separator: ",").map(String.init))
    }

    static func runAsync() async throws {
        raiseDescriptorLimit()
        let cases = self.cases
        if cases.contains("non-reader") { try await nonReader() }
        if cases.contains("connections") { try await connections() }
        if cases.contains("big-records") { try await bigRecords() }
        if cases.contains("member-flood") { try await memberFlood() }
        if cases.contains("idle-tcp-flood") { try await idleTCPFlood() }
    }

    // MARK: non-reader

    /// A trusted device sends `hello` and a `subscribe` for each of the node's zones, then reads
    /// nothing; meanwhile an honest peer dials and syncs one zone.
    static func nonReader() async throws {
        let zoneCount = setting("SHOAL_BENCH_HOSTILE_ZONES", 100), zoneMB = setting("SHOAL_BENCH_HOSTILE_ZONE_MB", 2)
        let recordBytes = 100_000, perZone = zoneMB * 1_000_000 / recordBytes
        let (a, aDir) = try await temporaryNode("nonreader-a")
        defer { try? FileManager.default.removeItem(atPath: aDir) }
        let zones = (0..<zoneCount).map { RecordZone.ID(name: "z\($0)") }
        var rng = SplitMix64(seed: 11)
        var subscribes = [Frame]()
        for zone in zones {
            let info = try await a.createZone(zone)
            try await a.store.modify(
                saving: (0..<perZone).map { blob($0, in: zone, bytes: recordBytes, rng: &rng) }, policy: .allKeys)
            subscribes.append(
                Frame(
                    type: .subscribe,
                    payload: SubscribeMessage(zone: zone, incarnation: info.incarnation, token: nil, window: 64)
                        .encoded()))
        }
        printNote("non-reader: \(zoneCount) zones of \(perZone) records of \(recordBytes) random bytes")
        let (mallory, malloryDir) = try await temporaryNode("nonreader-client")
        defer { try? FileManager.default.removeItem(atPath: malloryDir) }
        try await a.trustDevice(mallory.deviceID)
        // A member of every zone (read-only: it only asks), so its subscribes are served.
        for zone in zones { try await a.shareZone(zone, with: mallory.deviceID, role: .readOnly) }
        let port = try await a.listen(host: "127.0.0.1", port: 0)
        let hello = Frame(
            type: .hello, payload: HelloMessage(node: NodeID.random(), name: "non-reader", zones: []).encoded())
        let bytes = try ([hello] + subscribes).flatMap { try FrameEncoder(options: .init(mode: .none)).encode($0) }

        settleMemory()
        let baseline = residentBytes()
        let peak = PeakSampler()
        let sentBefore = await a.traffic().bytesSent
        let client = try await NonReadingClient.connect(port: port, directory: malloryDir, send: bytes)
        // Until the node has sent what it will: nothing more left it for half a second.
        var last = -1
        var quiet = ContinuousClock.now
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(20) {
            let sent = await a.traffic().bytesSent
            if sent != last {
                last = sent; quiet = .now
            } else if ContinuousClock.now - quiet > .milliseconds(500), ContinuousClock.now - start > .seconds(2) {
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let growth = peak.most - baseline

        // The honest peer, while the non-reader still holds its connection.
        var bSync = SyncConfiguration()
        bSync.zones = .only([zones[0]])
        let (b, bDir) = try await temporaryNode("nonreader-b", sync: bSync)
        defer { try? FileManager.default.removeItem(atPath: bDir) }
        try await a.trustDevice(b.deviceID)
        try await b.trustDevice(a.deviceID)
        try await a.shareZone(zones[0], with: b.deviceID, role: .readOnly)
        let t0 = ContinuousClock.now
        await b.connect(to: "127.0.0.1", port: port)
        while await b.peers().first?.node == nil {
            if ContinuousClock.now - t0 > .seconds(60) {
                throw BenchError("the honest peer's hello was not answered in 60 s")
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        let helloSeconds = Harness.seconds(ContinuousClock.now - t0)
        while (try? await b.store.allRecordIDs(in: zones[0]).count) != perZone {
            if ContinuousClock.now - t0 > .seconds(120) {
                throw BenchError("the honest peer did not sync its zone in 120 s")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let syncSeconds = Harness.seconds(ContinuousClock.now - t0)
        let sent = await a.traffic().bytesSent - sentBefore
        peak.stop()
        client.close()
        await a.shutdown(); await b.shutdown()
        print(
            "hostile case=non-reader subscribes=\(zoneCount) zone_mb=\(zoneMB) node_rss_growth_mb=\(fixed(Double(growth) / 1e6, 1)) other_peer_hello_ms=\(fixed(helloSeconds * 1000, 1)) other_peer_sync_ms=\(fixed(syncSeconds * 1000, 1)) node_sent_mb=\(fixed(Double(sent) / 1e6, 1)) requested_mb=\(zoneCount * zoneMB)"
        )
    }

    // MARK: big-records

    /// A new peer syncs records of 900 KiB (close to the 1 MiB record limit, one per batch).
    static func bigRecords() async throws {
        let n = setting("SHOAL_BENCH_HOSTILE_BIG_RECORDS", 2_000), size = 900 << 10
        let zone = RecordZone.ID(name: "big")
        let (a, aDir) = try await temporaryNode("big-a")
        let (b, bDir) = try await temporaryNode("big-b")
        defer { try? FileManager.default.removeItem(atPath: aDir); try? FileManager.default.removeItem(atPath: bDir) }
        try await a.createZone(zone)
        var rng = SplitMix64(seed: 13)
        for start in stride(from: 0, to: n, by: 16) {
            try await a.store.modify(
                saving: (start..<min(n, start + 16)).map { blob($0, in: zone, bytes: size, rng: &rng) },
                policy: .allKeys)
        }
        try await a.trustDevice(b.deviceID)
        try await b.trustDevice(a.deviceID)
        try await a.shareZone(zone, with: b.deviceID, role: .readOnly)
        let port = try await a.listen(host: "127.0.0.1", port: 0)
        settleMemory()
        let baseline = residentBytes()
        let peak = PeakSampler()
        let t0 = ContinuousClock.now
        await b.connect(to: "127.0.0.1", port: port)
        while await b.sync.statistics.recordsReceived < n {
            if ContinuousClock.now - t0 > .seconds(1800) {
                throw BenchError("the big records did not sync in 30 minutes")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let seconds = Harness.seconds(ContinuousClock.now - t0)
        peak.stop()
        guard try await a.digest(of: zone) == (try await b.digest(of: zone)) else {
            throw BenchError("digests differ after the big records")
        }
        await a.shutdown(); await b.shutdown()
        print(
            "hostile case=big-records records=\(n) record_kib=900 peak_rss_mb=\(fixed(Double(peak.most) / 1e6, 1)) baseline_rss_mb=\(fixed(Double(baseline) / 1e6, 1)) records_per_s=\(fixed(Double(n) / seconds, 1)) mb_per_s=\(fixed(Double(n * size) / seconds / 1e6, 1))"
        )
    }

    // MARK: connections

    /// Thousands of TCP connections that never start TLS, then an honest peer's sync.
    static func connections() async throws {
        let count = setting("SHOAL_BENCH_HOSTILE_CONNECTIONS", 2_000)
        var network = NetworkConfiguration()
        // Raised from 256 and 16 so every connection is held, and the handshake timeout from
        // 10 s so none is closed while the honest peers sync.
        network.maxInboundConnections = count + 64
        network.maxConnectionsPerAddress = count + 64
        network.handshakeTimeout = .seconds(600)
        let zone = RecordZone.ID(name: "small")
        let (a, aDir) = try await temporaryNode("conn-a", network: network)
        defer { try? FileManager.default.removeItem(atPath: aDir) }
        try await a.createZone(zone)
        var rng = SplitMix64(seed: 17)
        try await a.store.modify(
            saving: (0..<1_000).map { blob($0, in: zone, bytes: 200, rng: &rng) }, policy: .allKeys)
        let port = try await a.listen(host: "127.0.0.1", port: 0)

        /// A fresh peer's sync of the zone, in seconds.
        func honestSync(_ label: String) async throws -> Double {
            let (b, bDir) = try await temporaryNode(label)
            defer { try? FileManager.default.removeItem(atPath: bDir) }
            try await a.trustDevice(b.deviceID)
            try await b.trustDevice(a.deviceID)
            try await a.shareZone(zone, with: b.deviceID, role: .readOnly)
            let t0 = ContinuousClock.now
            await b.connect(to: "127.0.0.1", port: port)
            while (try? await b.store.allRecordIDs(in: zone).count) != 1_000 {
                if ContinuousClock.now - t0 > .seconds(120) { throw BenchError("\(label) did not sync in 120 s") }
                try await Task.sleep(for: .milliseconds(2))
            }
            let s = Harness.seconds(ContinuousClock.now - t0)
            await b.shutdown()
            return s
        }

        let idle = try await honestSync("conn-idle")
        settleMemory()
        let baseline = residentBytes()
        var sockets = [Int32]()
        defer { for fd in sockets { _ = Glibc.close(fd) } }
        for _ in 0..<count {
            guard let fd = connectTCP(port: port) else { break }
            sockets.append(fd)
        }
        try await Task.sleep(for: .seconds(1))
        let perConnection = Double(residentBytes() - baseline) / Double(max(1, sockets.count))
        let loaded = try await honestSync("conn-loaded")
        await a.shutdown()
        print(
            "hostile case=connections connections=\(sockets.count) kind=tcp-before-tls max_inbound=\(network.maxInboundConnections) per_address=\(network.maxConnectionsPerAddress) honest_sync_ms=\(fixed(loaded * 1000, 1)) honest_sync_alone_ms=\(fixed(idle * 1000, 1)) rss_per_connection_kb=\(fixed(perConnection / 1024, 1))"
        )
    }

    // MARK: idle-tcp-flood

    /// Strangers from 64 loopback addresses hold every place of a node at its default limits with
    /// TCP connections that never start TLS, and reopen each one the node closes at once; a
    /// trusted peer that synced before the flood restarts (goes offline and online) during it
    /// and must get in and sync a record saved meanwhile.
    static func idleTCPFlood() async throws {
        let addresses = 64, perAddress = setting("SHOAL_BENCH_HOSTILE_FLOOD_PER_ADDRESS", 5)
        let network = NetworkConfiguration()
        let zone = RecordZone.ID(name: "flood")
        let (a, aDir) = try await temporaryNode("flood-a", network: network)
        let (b, bDir) = try await temporaryNode("flood-b")
        defer { try? FileManager.default.removeItem(atPath: aDir); try? FileManager.default.removeItem(atPath: bDir) }
        try await a.createZone(zone)
        var rng = SplitMix64(seed: 19)
        try await a.store.modify(saving: (0..<100).map { blob($0, in: zone, bytes: 200, rng: &rng) }, policy: .allKeys)
        try await a.trustDevice(b.deviceID)
        try await b.trustDevice(a.deviceID)
        try await a.shareZone(zone, with: b.deviceID, role: .readWrite)
        let port = try await a.listen(host: "127.0.0.1", port: 0)
        await b.connect(to: "127.0.0.1", port: port)
        var saved = 0

        /// Saves a record on `a`, restarts `b` and returns the seconds until `b` holds the record.
        func reconnect() async throws -> Double {
            saved += 1
            let id = Record.ID(name: "saved-\(saved)", zone: zone)
            _ = try await a.save(Record(recordType: "Note", id: id))
            await b.goOffline()
            let t0 = ContinuousClock.now
            try await b.goOnline()
            while (try? await b.record(for: id)) == nil {
                if ContinuousClock.now - t0 > .seconds(120) {
                    throw BenchError("the trusted peer did not reconnect and sync in 120 s")
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            return Harness.seconds(ContinuousClock.now - t0)
        }

        while (try? await b.store.allRecordIDs(in: zone).count) != 100 {
            try await Task.sleep(for: .milliseconds(5))
        }
        let alone = try await reconnect()
        let before = await a.inboundConnectionsClosed()
        let flood = IdleFlood(port: port, addresses: addresses, perAddress: perAddress, deadline: .seconds(300))
        defer { flood.stop() }
        let t0 = ContinuousClock.now
        while flood.now.connected < network.maxInboundConnections || flood.now.reopened == 0 {
            if ContinuousClock.now - t0 > .seconds(30) {
                throw BenchError("the flood did not fill the node's places in 30 s: \(flood.now)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        // A second of flood before the restart: the places change hands at the flood's pace.
        let settle = flood.now.reopened
        try await Task.sleep(for: .seconds(1))
        let perSecond = flood.now.reopened - settle
        let kept = await a.connectedDevices().contains(b.deviceID)
        let loaded = try await reconnect()
        let after = await a.inboundConnectionsClosed()
        flood.stop()
        await a.shutdown(); await b.shutdown()
        print(
            "hostile case=idle-tcp-flood addresses=\(addresses) connections=\(addresses * perAddress) max_inbound=\(network.maxInboundConnections) per_address=\(network.maxConnectionsPerAddress) honest_reconnect_ms=\(fixed(loaded * 1000, 1)) honest_reconnect_alone_ms=\(fixed(alone * 1000, 1)) trusted_kept=\(kept) stranger_reopens_per_s=\(perSecond) evicted=\(after.evicted - before.evicted) refused=\(after.refused - before.refused)"
        )
    }

    // MARK: Support

    static func temporaryNode(
        _ label: String, network: NetworkConfiguration = NetworkConfiguration(),
        sync: SyncConfiguration = SyncConfiguration()
    ) async throws -> (ShoalNode, String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-bench-\(label)-\(UInt32.random(in: 0 ... .max))"
        ).path
        return (try await ShoalNode.open(directory: dir, sync: sync, network: network), dir)
    }

    /// A record holding `bytes` random bytes (random, so compression does not shrink it).
    static func blob(_ i: Int, in zone: RecordZone.ID, bytes: Int, rng: inout SplitMix64) -> Record {
        var data = [UInt8](repeating: 0, count: bytes)
        data.withUnsafeMutableBytes { raw in
            var i = 0
            while i + 8 <= raw.count { raw.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self); i += 8 }
            while i < raw.count { raw[i] = UInt8(truncatingIfNeeded: rng.next()); i += 1 }
        }
        var r = Record(recordType: "Blob", id: Record.ID(name: "r\(i)", zone: zone))
        r["data"] = .bytes(data)
        return r
    }

    /// The process's resident set, from `/proc/self/status` (0 where there is none).
    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kb = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return kb * 1024
    }

    /// Hands freed memory back to the system before a baseline, so the growth measured is the
    /// case's own and not what setting it up left in malloc's free lists.
    static func settleMemory() { shoal_bench_malloc_trim() }

    /// Raises the soft limit on open descriptors to the hard one (2,000 connections need as many
    /// on each side).
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// A TCP connection to 127.0.0.1:`port` that sends nothing; nil if it cannot be made.
    static func connectTCP(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else { _ = Glibc.close(fd); return nil }
        return fd
    }
}

/// The largest resident set seen while it runs, sampled every 5 ms on a thread of its own.
final class PeakSampler: Sendable {
    private let state = Mutex((most: 0, running: true))

    init() {
        state.withLock { $0.most = HostileBenchmark.residentBytes() }
        let thread = Thread { [self] in
            while state.withLock({ $0.running }) {
                let now = HostileBenchmark.residentBytes()
                state.withLock { $0.most = max($0.most, now) }
                usleep(5_000)
            }
        }
        thread.start()
    }

    var most: Int { state.withLock { $0.most } }

    func stop() { state.withLock { $0.running = false } }
}

/// A TLS client with the device identity kept in a node's data directory: it sends its bytes
/// once the handshake completes and reads nothing after it (with a small receive buffer).
struct NonReadingClient {
    let channel: any Channel

    static func connect(port: Int, directory: String, send bytes: [UInt8]) async throws -> NonReadingClient {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv13
        configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(directory + "/identity/device-cert.pem").map
        { .certificate($0) }
        configuration.privateKey = .privateKey(
            try NIOSSLPrivateKey(file: directory + "/identity/device-key.pem", format: .pem))
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates([])
        let context = try NIOSSLContext(configuration: configuration)
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
