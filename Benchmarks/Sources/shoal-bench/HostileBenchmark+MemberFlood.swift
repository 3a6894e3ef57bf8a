// HostileBenchmark+MemberFlood: a trusted device that is a member of none of a node's zones
// floods it with zone announcements over loopback TLS while a real owner shares zones with it.

import Crypto
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Shoal
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

extension HostileBenchmark {
    /// The kinds of announcement the flooding device sends: `SHOAL_BENCH_HOSTILE_FLOOD_KINDS`, a
    /// comma-separated list (default all five).
    static var floodKinds: Set<MemberFloodPlan.Kind> {
        let all = Set(MemberFloodPlan.Kind.allCases)
        guard let list = ProcessInfo.processInfo.environment["SHOAL_BENCH_HOSTILE_FLOOD_KINDS"] else { return all }
        return Set(list.split(separator: ",").compactMap { MemberFloodPlan.Kind(rawValue: String($0)) })
    }

    /// A device node A trusts, member of none of its zones, announces zones over mutual TLS as
    /// fast as A reads them for `SHOAL_BENCH_HOSTILE_FLOOD_SECONDS` (20), reconnecting whenever A
    /// closes the connection; meanwhile owner O shares a new zone with A every second and writes
    /// a record in it. Measures A's memory and how long each of O's records takes to reach A.
    static func memberFlood() async throws {
        let seconds = setting("SHOAL_BENCH_HOSTILE_FLOOD_SECONDS", 20)
        let signed = setting("SHOAL_BENCH_HOSTILE_FLOOD_SIGNED", 20_000)
        let (a, aDir) = try await temporaryNode("flood-a")
        let (o, oDir) = try await temporaryNode("flood-owner")
        let (device, deviceDir) = try await temporaryNode("flood-device")
        defer { for d in [aDir, oDir, deviceDir] { try? FileManager.default.removeItem(atPath: d) } }
        // Only the flooding device's identity is used: its frames are written by hand.
        await device.shutdown()
        try await a.trustDevice(device.deviceID)
        try await a.trustDevice(o.deviceID)
        try await o.trustDevice(a.deviceID)
        let port = try await a.listen(host: "127.0.0.1", port: 0)
        await o.connect(to: "127.0.0.1", port: port)
        let t0 = ContinuousClock.now
        while await o.peers().first?.node == nil {
            if ContinuousClock.now - t0 > .seconds(60) {
                throw BenchError("the owner's hello was not answered in 60 s")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let plan = try MemberFloodPlan(
            directory: deviceDir, device: device.deviceID, target: a.deviceID, signed: signed, kinds: floodKinds)
        printNote(
            "member-flood: \(seconds) s; kinds \(plan.kinds.map(\.rawValue).sorted().joined(separator: ",")); \(plan.summary)"
        )

        settleMemory()
        let baseline = residentBytes()
        let diskBefore = directoryBytes(aDir)
        let statsBefore = await a.sync.statistics
        let cpuBefore = cpuSeconds()
        let peak = PeakSampler()
        let start = ContinuousClock.now
        let flood = Task { try await floodConnections(plan, port: port, seconds: seconds) }
        let shares = try await ownerShares(owner: o, node: a, from: start, count: seconds - 1)
        let sent = try await flood.value
        let wall = Harness.seconds(ContinuousClock.now - start)
        peak.stop()
        let cpu = cpuSeconds() - cpuBefore
        let growth = peak.most - baseline
        let stats = await a.sync.statistics
        let zonesHeld = await a.zones().count
        let disk = directoryBytes(aDir) - diskBefore
        await o.shutdown()
        await a.shutdown()
        let delays = shares.delays.sorted()
        let median = delays.isEmpty ? .nan : delays[delays.count / 2] * 1000, most = (delays.last ?? .nan) * 1000
        print(
            "hostile case=member-flood seconds=\(seconds) zones_announced=\(sent.zones) reconnects=\(max(0, sent.connections - 1)) closed_by_node=\(sent.closedByNode) flood_mb=\(fixed(Double(sent.bytes) / 1e6, 1)) node_rss_growth_mb=\(fixed(Double(growth) / 1e6, 1)) owner_share_delay_ms=\(fixed(median, 1))/\(fixed(most, 1)) owner_shares=\(delays.count)/\(shares.attempted) node_zones=\(zonesHeld) node_disk_growth_mb=\(fixed(Double(disk) / 1e6, 1)) shares_ignored=\(stats.sharesIgnored - statsBefore.sharesIgnored) process_cpu_percent=\(fixed(cpu / wall * 100, 0))"
        )
    }

    /// Owner O shares a new zone holding one record with node A once a second, `count` times,
    /// from `start`; returns, per share that arrived in 30 s, the seconds from the share to A
    /// holding the record.
    static func ownerShares(owner o: ShoalNode, node a: ShoalNode, from start: ContinuousClock.Instant, count: Int)
        async throws -> (delays: [Double], attempted: Int)
    {
        var delays = [Double]()
        var attempted = 0
        for i in 0..<max(0, count) {
            try await Task.sleep(until: start + .seconds(i + 1), clock: .continuous)
            let zone = RecordZone.ID(name: "owner-\(i)")
            try await o.createZone(zone)
            var record = Record(recordType: "Note", id: Record.ID(name: "note", zone: zone))
            record["text"] = .string("written by the owner before it shared zone \(i)")
            _ = try await o.save(record)
            attempted += 1
            let t0 = ContinuousClock.now
            try await o.shareZone(zone, with: a.deviceID, role: .readOnly)
            while ContinuousClock.now - t0 < .seconds(30) {
                if (try? await a.record(for: record.id)) != nil {
                    delays.append(Harness.seconds(ContinuousClock.now - t0))
                    break
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        return (delays, attempted)
    }

    /// Connects as the flooding device again and again until `seconds` have passed: each
    /// connection sends its frames as fast as the node reads them until the node closes it, or
    /// the deadline.
    static func floodConnections(_ plan: MemberFloodPlan, port: Int, seconds: Int) async throws
        -> MemberFloodCounters.Totals
    {
        let counters = MemberFloodCounters()
        let deadline = ContinuousClock.now + .seconds(seconds)
        let nioDeadline = NIODeadline.now() + .seconds(Int64(seconds))
        let context = try plan.tlsContext()
        var connection = 0, failures = 0
        while ContinuousClock.now < deadline, connection < 100_000, failures < 1_000 {
            do {
                let channel = try await MemberFloodHandler.connect(
                    port: port, context: context, plan: plan,
                    counters: counters, deadline: nioDeadline)
                connection += 1
                try await channel.closeFuture.get()
            } catch {
                failures += 1
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        var totals = counters.totals
        totals.connections = connection
        return totals
    }

    /// Bytes of the files under `path`.
    static func directoryBytes(_ path: String) -> Int {
        guard let files = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total = 0
        for case let file as String in files {
            total += ((try? FileManager.default.attributesOfItem(atPath: path + "/" + file))?[.size] as? Int) ?? 0
        }
        return total
    }

    /// CPU time the process has used, user and system, in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
            usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// What the flooding device sends, encoded once before the measurement: `zones` frames of each
/// kind, every zone name 255 bytes long.
struct MemberFloodPlan: Sendable {
    enum Kind: String, CaseIterable, Sendable {
        /// Deleted zones, no share: nothing for the node to create.
        case deleted
        /// Live zones without a share ("open"): a node with a device key creates none.
        case open
        /// Live zones the device owns, shared with the node and signed with the device's key:
        /// the node creates them up to `maxZonesPerOwner`, then closes the connection.
        case owned
        /// Deleted zones the device owns, shared with the node and signed.
        case ownedDeleted = "owned-deleted"
        /// Live zones shared with the node under another key, with signatures that do not
        /// verify: past `SyncNode.maxBadShares` the node closes the connection.
        case badSignature = "bad-signature"
    }

    /// One frame's bytes (header and payload) and how many zones it names.
    struct Message: Sendable {
        var bytes: ByteBuffer
        var zones: Int
    }

    /// Zones in one frame of unsigned announcements (a payload of about 3.7 MB, under the
    /// default 4 MiB limit).
    static let unsignedPerFrame = 13_000
    /// Signed announcements in one frame (about 1.5 MB).
    static let signedPerFrame = 2_000
    /// Live owned zones in one frame, in eight frames: the fifth passes `maxZonesPerOwner`.
    static let ownedPerFrame = 250
    /// Frames of unsigned deleted zones, each naming other zones.
    static let deletedFrames = 4
    /// Rounds of (deleted, open, owned-deleted) in a block, before its owned and bad frames.
    static let rounds = 4

    let kinds: Set<Kind>
    let directory: String
    let hello: Message
    let deleted: [Message]
    let open: [Message]
    let owned: [Message]
    let ownedDeleted: [Message]
    let bad: [Message]

    init(directory: String, device: DeviceID, target: DeviceID, signed: Int, kinds: Set<Kind>) throws {
        self.kinds = kinds
        self.directory = directory
        let key = try P256.Signing.PrivateKey(
            pemRepresentation: String(contentsOfFile: directory + "/identity/device-key.pem", encoding: .utf8))
        let der = Array(key.publicKey.derRepresentation)
        guard DeviceID(bytes: SHA256.hash(data: der)) == device else {
            throw BenchError("the flooding device's key does not give its device ID")
        }
        let member = [ZoneShare.Member(device: target, role: .readOnly)]

        func name(_ prefix: String, _ i: Int) -> RecordZone.ID {
            let head = "\(prefix)-\(i)-"
            return RecordZone.ID(name: head + String(repeating: "x", count: 255 - head.utf8.count))
        }
        func signedShare(_ zone: RecordZone.ID, deleted: Bool, with key: P256.Signing.PrivateKey) throws -> ZoneShare {
            var share = ZoneShare(
                zone: zone, incarnation: NodeID.random(), serial: 1, isDeleted: deleted,
                ownerKey: Array(key.publicKey.derRepresentation), members: member)
            share.signature = Array(try key.signature(for: share.signedBytes).rawRepresentation)
            return share
        }
        func encode(_ announcements: [ZoneAnnouncement], per: Int) throws -> [Message] {
            try stride(from: 0, to: announcements.count, by: per).map { at in
                let slice = announcements[at..<min(announcements.count, at + per)].sorted { $0.zone < $1.zone }
                return try Self.message(
                    Frame(type: .zones, payload: ZonesMessage(zones: slice).encoded()), zones: slice.count)
            }
        }

        hello = try Self.message(
            Frame(
                type: .hello, payload: HelloMessage(node: NodeID.random(), name: "member-flood", zones: []).encoded()),
            zones: 0)
        deleted =
            !kinds.contains(.deleted)
            ? []
            : try encode(
                (0..<Self.deletedFrames * Self.unsignedPerFrame).map {
                    ZoneAnnouncement(zone: name("deleted", $0), incarnation: NodeID.random(), isDeleted: true)
                }, per: Self.unsignedPerFrame)
        open =
            !kinds.contains(.open)
            ? []
            : try encode(
                (0..<Self.unsignedPerFrame).map {
                    ZoneAnnouncement(zone: name("open", $0), incarnation: NodeID.random())
                }, per: Self.unsignedPerFrame)
        owned =
            !kinds.contains(.owned)
            ? []
            : try encode(
                (0..<8 * Self.ownedPerFrame).map {
                    ZoneAnnouncement(share: try signedShare(name("owned", $0), deleted: false, with: key))
                }, per: Self.ownedPerFrame)
        ownedDeleted =
            !kinds.contains(.ownedDeleted)
            ? []
            : try encode(
                (0..<signed).map {
                    ZoneAnnouncement(share: try signedShare(name("owned-deleted", $0), deleted: true, with: key))
                }, per: Self.signedPerFrame)
        // Shares under a key of their own whose signatures are random bytes.
        let other = P256.Signing.PrivateKey()
        bad =
            !kinds.contains(.badSignature)
            ? []
            : try encode(
                (0..<16).map {
                    var share = try signedShare(name("bad", $0), deleted: false, with: other)
                    share.signature = (0..<ZoneShare.signatureBytes).map { _ in UInt8.random(in: 0 ... .max) }
                    return ZoneAnnouncement(share: share)
                }, per: 16)
    }

    static func message(_ frame: Frame, zones: Int) throws -> Message {
        Message(bytes: ByteBuffer(bytes: try FrameEncoder(options: .init(mode: .none)).encode(frame)), zones: zones)
    }

    /// The next block a connection sends after its hello, and again after that while it stays
    /// open: `rounds` rounds of deleted, open and owned-deleted zones, then one frame of owned
    /// zones and the bad shares. `counters` numbers the rounds and owned frames over every
    /// connection, so each round sends the next frames of each kind in turn.
    func block(_ counters: MemberFloodCounters) -> [Message] {
        var out = [Message]()
        for _ in 0..<Self.rounds {
            let round = counters.nextRound()
            if !deleted.isEmpty { out.append(deleted[round % deleted.count]) }
            if !open.isEmpty { out.append(open[round % open.count]) }
            if !ownedDeleted.isEmpty { out.append(ownedDeleted[round % ownedDeleted.count]) }
        }
        if !owned.isEmpty { out.append(owned[counters.nextOwned() % owned.count]) }
        return out + bad
    }

    var summary: String {
        let all = [deleted, open, owned, ownedDeleted, bad]
        return
            "\(all.reduce(0) { $0 + $1.count }) frames of \(fixed(Double(all.joined().reduce(0) { $0 + $1.bytes.readableBytes }) / 1e6, 1)) MB encoded"
    }

    /// The TLS context of the flooding device: its certificate and key, any server certificate.
    func tlsContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv13
        configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(directory + "/identity/device-cert.pem").map
        { .certificate($0) }
        configuration.privateKey = .privateKey(
            try NIOSSLPrivateKey(file: directory + "/identity/device-key.pem", format: .pem))
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates([])
        return try NIOSSLContext(configuration: configuration)
    }
}

/// What the flooding connections wrote (counted when the write completed) and how they ended.
final class MemberFloodCounters: Sendable {
    struct Totals {
        var zones = 0
        var bytes = 0
        var closedByNode = 0
        var connections = 0
        var rounds = 0
        var ownedFrames = 0
    }

    private let state = Mutex(Totals())

    func wrote(_ message: MemberFloodPlan.Message) {
        state.withLock {
            $0.zones += message.zones; $0.bytes += message.bytes.readableBytes
        }
    }

    func closedByNode() { state.withLock { $0.closedByNode += 1 } }

    /// The number of the next round of deleted, open and owned-deleted frames.
    func nextRound() -> Int {
        state.withLock {
            $0.rounds += 1; return $0.rounds - 1
        }
    }

    /// The number of the next frame of owned zones.
    func nextOwned() -> Int {
        state.withLock {
            $0.ownedFrames += 1; return $0.ownedFrames - 1
        }
    }

    var totals: Totals { state.withLock { $0 } }
}

/// Writes its hello once the TLS handshake completes, then its plan's blocks one after another,
/// one frame at a time while the channel is writable, and discards what the node sends.
final class MemberFloodHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let plan: MemberFloodPlan
    let counters: MemberFloodCounters
    let deadline: NIODeadline
    /// Frames to send before the next block is taken from the plan.
    var queue: [MemberFloodPlan.Message]
    var handshaken = false
    var closingByClient = false

    init(plan: MemberFloodPlan, counters: MemberFloodCounters, deadline: NIODeadline) {
        self.plan = plan
        self.counters = counters
        self.deadline = deadline
        queue = [plan.hello]
    }

    static func connect(
        port: Int, context: NIOSSLContext, plan: MemberFloodPlan, counters: MemberFloodCounters,
        deadline: NIODeadline
    ) async throws -> any Channel {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let ops = channel.pipeline.syncOperations
                    try ops.addHandler(
                        NIOSSLClientHandler(
                            context: context, serverHostname: nil,
                            customVerificationCallback: { _, p in p.succeed(.certificateVerified) }))
                    try ops.addHandler(MemberFloodHandler(plan: plan, counters: counters, deadline: deadline))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        context.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent {
            handshaken = true
            pump(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        pump(context: context)
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func channelInactive(context: ChannelHandlerContext) {
        if !closingByClient, NIODeadline.now() < deadline { counters.closedByNode() }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Writes the next frames while the channel takes them, until the deadline. A plan with
    /// nothing to send after the hello gives the node five seconds, then closes the connection.
    func pump(context: ChannelHandlerContext) {
        guard handshaken else { return }
        while context.channel.isWritable, NIODeadline.now() < deadline {
            if queue.isEmpty { queue = plan.block(counters).reversed() }
            guard let message = queue.popLast() else {
                let channel = context.channel
                let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: .seconds(5)) {
                    handler.value.closingByClient = true
                    channel.close(promise: nil)
                }
                handshaken = false
                return
            }
            let promise = context.eventLoop.makePromise(of: Void.self)
            let counters = self.counters
            promise.futureResult.whenSuccess { counters.wrote(message) }
            context.writeAndFlush(wrapOutboundOut(message.bytes), promise: promise)
        }
    }
}
