// NetworkNode: a node's TLS transport on SwiftNIO — listener, dialer with backoff, trusted devices, routing, live push.

public import NIOCore
import NIOPosix
import Foundation
import Logging
import ShoalLanes
import ShoalStore
public import ShoalSync
public import ShoalWire

/// Runs a ``SyncNode`` over mutual TLS 1.3: accepts peers, dials peers (and redials them with
/// exponential backoff and jitter), admits only trusted devices, moves frames between the sockets
/// and the node, and tells the node about every commit to the store so live changes flow to
/// subscribed peers.
///
/// Every connection starts with a TLS handshake in which both sides present their device's
/// self-signed certificate (``PeerTLS``). After it, and before this node sends any frame, the
/// peer's device ID must be one of the trusted ones (``trust(_:)``); otherwise the connection
/// closes and the device is listed in ``pendingDevices()``. A trusted device's hello must then
/// carry the node ID bound to it (Spec/security.md).
///
/// ```swift
/// let net = NetworkNode(sync: SyncNode(store: store), tls: tls, trusting: [peerDevice])
/// let address = try await net.listen(host: "127.0.0.1", port: 7400)
/// await net.addPeer(host: "127.0.0.1", port: 7401)
/// try await net.start()
/// ```
public actor NetworkNode {
    /// The replication engine.
    public let sync: SyncNode
    /// The transport settings.
    public let configuration: NetworkConfiguration
    /// Bytes moved over this node's sockets.
    public nonisolated let traffic = TrafficCounter()
    let group: any EventLoopGroup
    /// The places for accepted connections (``NetworkConfiguration/maxInboundConnections``).
    let admission: InboundAdmission

    /// Connections closed on acceptance since the node started, because a limit was reached:
    /// ``NetworkConfiguration/maxConnectionsPerAddress`` for their address, or
    /// ``NetworkConfiguration/maxInboundConnections`` with every place held by a trusted device.
    public var refusedConnections: Int { admission.refused }

    /// Accepted connections closed since the node started to give their places to newer ones:
    /// at ``NetworkConfiguration/maxInboundConnections``, a new connection takes the place of one
    /// that has not shown a trusted device (Spec/replication.md §2).
    public var evictedConnections: Int { admission.evicted }

    struct Connection {
        let writer: NIOAsyncChannelOutboundWriter<Frame>
        let channel: any Channel
        let dialed: String?
        /// The peer's device, from its TLS certificate.
        let device: DeviceID
        /// Its way out: the chunk bytes held above the socket (``ChunkYieldHandler``) and the
        /// record frames waiting for it (``Outbox``).
        let gate: OutboundGate
        /// The asset requests from this connection, which its serving lane answers.
        let requests: AssetFrameQueue
        /// Its frames with the engine (``InboundBudget``).
        let inbound: InboundBudget
        /// When its last frame arrived.
        let received: ReceiveClock
    }

    var connections: [ConnectionID: Connection] = [:]
    var tasks: [Task<Void, Never>] = []
    /// Each listening socket's loop over the connections it accepts.
    var acceptLoops: [Task<Void, Never>] = []

    /// Everything the node must react to, handled one at a time by one engine task, in order —
    /// as the simulator drives SyncNode. Handling events concurrently would let a batch built
    /// later reach the socket first, or an acknowledgement be overwritten mid-batch.
    enum Event: Sendable {
        /// A connection whose TLS handshake gave this device; the engine admits it (answering its
        /// ID) or refuses it (nil).
        case open(
            NIOAsyncChannelOutboundWriter<Frame>, any Channel, String?, DeviceID, ConnectionHandlers,
            CheckedContinuation<ConnectionID?, Never>)
        /// A frame read from a connection, decoded ahead when it is a `changes` batch; once
        /// handled, its cost goes back to the connection's budget, when it took one.
        case frame(ConnectionID, Frame, SyncNode.DecodedChanges?, InboundBudget?)
        /// A request the connection's ``Outbox`` held back until it had room; once handled, the
        /// outbox may release the next.
        case parked(ConnectionID, Frame)
        /// The connection's outbox fell back to its bound: what its subscriptions were held back
        /// from sending goes now.
        case drained(ConnectionID)
        case closed(ConnectionID)
        case zoneChanged(RecordZone.ID)
        /// News held to travel with later commits is due (``SyncNode/heldNewsDeadline``).
        case heldNews
        /// Acknowledgements held back are due to be written
        /// (``SyncNode/heldAcknowledgementsDeadline``).
        case heldAcknowledgements
        case zonesChanged(restart: Bool)
        case timeout(ConnectionID, String)
        case fetchAsset(Asset)
    }

    let events: AsyncStream<Event>
    let eventSink: AsyncStream<Event>.Continuation
    /// Each connection's serving lane: a task that answers its asset requests in order, beside
    /// the engine, so reading and sending chunks never delays record batches, and a peer that
    /// stops reading holds only its own (Spec/replication.md §3.7). Started when the connection
    /// opens; it ends when the connection's request queue is finished, at its close.
    var servingLanes: [ConnectionID: Task<Void, Never>] = [:]
    /// The send rate (``NetworkConfiguration/assetSendRate``) the serving lanes share; nil when
    /// unlimited.
    let sendPacer: SharedRatePacer?
    /// Asset manifests and chunks arriving, handled in order by another task (the fetching lane):
    /// storing and verifying them and the final check of a whole asset never delay record batches,
    /// and a wait to keep to ``NetworkConfiguration/assetReceiveRate`` never delays serving.
    let assetChunks: AssetFrameQueue
    /// Where the asset lanes (fetching and serving) run: the process's lane threads, which the
    /// asset store's hashing and I/O use too (ShoalLanes' `LaneExecutor`), off the cooperative pool.
    let lanes = LaneExecutor()
    var engineStarted = false
    /// The wake-up that sends held news when it is due, and when it fires.
    var newsTimer: Wake? = nil
    /// The wake-up that writes held acknowledgements when they are due, and when it fires.
    var acknowledgementsTimer: Wake? = nil
    var servers: [any Channel] = []
    var peerStates: [String: PeerState] = [:]
    var dialers: [String: Task<Void, Never>] = [:]
    var stopped = false
    /// This node's certificate and TLS contexts.
    public let tls: PeerTLS
    /// The devices whose connections are accepted.
    var trusted: Set<DeviceID> {
        // Their accepted connections keep their places once TLS has shown them.
        didSet { admission.trust(trusted) }
    }
    /// The devices refused since this node started (``pendingDevices()``).
    var pending: [DeviceID: PendingDevice] = [:]
    /// The node ID bound to each device seen, and back (the store keeps them: ``bind(_:to:)``).
    var nodeOfDevice: [DeviceID: NodeID] = [:]
    var deviceOfNode: [NodeID: DeviceID] = [:]
    /// The connections whose peer's hello was accepted; ``serve(_:dialed:)`` takes its own out
    /// when it ends.
    var established: Set<ConnectionID> = []
    /// Devices with both a dialled and an accepted connection whose accepted one was quiet when
    /// the second was established: the next frame it reads decides (``duplicatesClosing``).
    var awaitingProof: Set<DeviceID> = []
    /// Local discovery's socket, while it runs (`NetworkNode+Discovery.swift`).
    var discovery: LocalDiscovery?
    /// The devices local discovery heard, and the addresses it dials (nobody else asked for them).
    var discovered: DiscoveredDevices
    var discoveryDials: Set<PeerAddress> = []
    /// Trusted devices not dialled yet because the other side dials first, and since when.
    var discoveryDeferred: [DeviceID: Date] = [:]
    /// When the last frame arrived from each trusted device on a connection that has closed
    /// since (``lastSeen(of:)``; open connections keep their own).
    var lastFrames: [DeviceID: Date] = [:]
    /// When each trusted device's last announcement arrived through local discovery.
    var lastAnnouncements: [DeviceID: Date] = [:]
    /// The discovered addresses of trusted devices: verified, candidates, and the rate limits on
    /// what announcements make this node do (Spec/discovery.md §4.1).
    var addressBook: DiscoveryAddressBook
    /// The probe planned or running for each device heard at other addresses while connected.
    var probes: [DeviceID: Task<Void, Never>] = [:]
    /// Probes of connected devices heard at other addresses (Spec/discovery.md §4.1) that a
    /// connection answered, and those none did (its connections were then closed).
    package internal(set) var probesAnswered = 0, probesUnanswered = 0

    /// What this node knows of one dialled peer address.
    public struct PeerState: Sendable, Hashable {
        /// `host:port`.
        public var address: String
        /// Whether a connection is open now.
        public var isConnected: Bool
        /// The peer's node ID, once a hello arrived.
        public var node: NodeID?
        /// The peer's device ID, once a TLS handshake completed.
        public var device: DeviceID?
        /// Failed dials since the last success.
        public var failures: Int
        /// The last error, for `shoal status`.
        public var lastError: String?
    }

    /// Creates a transport for `sync` that presents `tls`'s certificate and accepts the devices in
    /// `trusting`, on NIO's shared event loops unless `group` is given.
    public init(
        sync: SyncNode, tls: PeerTLS, trusting: Set<DeviceID> = [],
        configuration: NetworkConfiguration = NetworkConfiguration(),
        group: (any EventLoopGroup)? = nil
    ) {
        self.sync = sync
        self.tls = tls
        self.trusted = trusting
        self.configuration = configuration
        self.group = group ?? MultiThreadedEventLoopGroup.singleton
        admission = InboundAdmission(
            maxTotal: configuration.maxInboundConnections, maxPerAddress: configuration.maxConnectionsPerAddress,
            trusting: trusting, logger: configuration.logger)
        assetChunks = AssetFrameQueue(limit: configuration.assetQueueBytes)
        sendPacer = configuration.assetSendRate > 0 ? SharedRatePacer(bytesPerSecond: configuration.assetSendRate) : nil
        (events, eventSink) = AsyncStream<Event>.makeStream()
        discovered = DiscoveredDevices(limit: configuration.discovery.maxDiscoveredDevices)
        addressBook = DiscoveryAddressBook(policy: .init(configuration.discovery))
    }

    deinit {
        // The lanes hold the queues, not the node: ending them ends the lanes.
        assetChunks.finish()
        for c in connections.values { c.requests.finish() }
    }

    /// Starts the engine task once.
    func startEngine() {
        guard !engineStarted else { return }
        engineStarted = true
        let events = self.events
        tasks.append(
            Task { [weak self] in
                for await event in events {
                    guard let self else { return }
                    await self.handle(event)
                }
            })
        // On the lane threads (LaneExecutor), not the cooperative pool the engine uses, and below
        // the engine's priority.
        let rate = configuration.assetReceiveRate
        tasks.append(
            Task(executorPreference: lanes, priority: .utility) { [weak self, assetChunks] in
                await Self.runAssetLane(
                    assetChunks, pacer: rate > 0 ? SharedRatePacer(bytesPerSecond: rate) : nil,
                    node: { [weak self] in self }
                ) { _ in 0 }
            })
    }

    /// Starts the serving lane of connection `id`, answering the requests in `requests`.
    func startServing(_ id: ConnectionID, _ requests: AssetFrameQueue) {
        servingLanes[id] = Task(executorPreference: lanes, priority: .utility) { [weak self, sendPacer] in
            await Self.runAssetLane(requests, pacer: sendPacer, node: { [weak self] in self }, sent: Self.chunkBytes)
        }
    }

    /// The asset chunk bytes in `outputs` (what a serving lane counts against the send rate).
    static func chunkBytes(_ outputs: [ConnectionID: [SyncOutput]]) -> Int {
        outputs.values.joined().reduce(0) { n, o in
            if case .send(let f) = o, f.type == .assetChunk { n + f.payload.count } else { n }
        }
    }

    /// Hands `frames` to the node and sends what it answers. Unpaced, every frame waiting is
    /// handled together (``SyncNode/receiveAssetFrames(_:)``: one hop to the node, the chunk
    /// store and the socket per batch, not per frame). With a `pacer`, frames are handled one at
    /// a time and their answers sent one at a time, each followed by the wait that keeps the asset
    /// bytes received (the frame's payload) plus those sent (`sent` of the answer) under its rate,
    /// which other lanes may share. Holds the node only while it handles frames: a node dropped
    /// without ``shutdown()`` still goes, and its queues end with it.
    static func runAssetLane(
        _ frames: AssetFrameQueue, pacer: SharedRatePacer?, node: () -> NetworkNode?,
        sent: ([ConnectionID: [SyncOutput]]) -> Int
    ) async {
        while let batch = await frames.take() {
            guard let node = node() else { return }
            let open = await node.fromOpenConnections(batch)
            guard pacer != nil else {
                await node.send(await node.sync.receiveAssetFrames(open))
                continue
            }
            /// Charges `bytes` and waits when the rate asks for it.
            func pace(_ bytes: Int) async {
                guard bytes > 0, let wait = pacer?.pause(after: bytes, at: .now), wait > .zero else { return }
                node.traffic.assetPaused(wait)
                // Cancelled at shutdown: the loop ends when the queue does.
                try? await Task.sleep(for: wait)
            }
            for item in open {
                let out = await node.sync.receiveAssetFrames([item])
                // Answers go out one frame at a time, each followed by its wait: a request for a
                // run of chunks is served at the rate, not in a burst.
                for (id, list) in out.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                    for o in list {
                        await node.send([id: [o]])
                        await pace(sent([id: [o]]))
                    }
                }
                await pace(item.1.type == .assetChunk ? item.1.payload.count : 0)
            }
        }
    }

    /// The frames of `items` whose connection is still open.
    func fromOpenConnections(_ items: [AssetFrameQueue.Item]) -> [(ConnectionID, Frame)] {
        items.compactMap { connections[$0.connection] != nil ? ($0.connection, $0.frame) : nil }
    }

    func handle(_ event: Event) async {
        switch event {
        case let .open(writer, channel, dialed, device, handlers, reply):
            await open(
                writer: writer, channel: channel, dialed: dialed, device: device, handlers: handlers, reply: reply)
        case let .frame(id, frame, decoded, budget):
            defer { budget?.give(frame.heldCost) }
            await receive(frame, on: id, decoded: decoded)
            if frame.type == .acknowledgement { await wakeForHeldAcknowledgements() }
        case let .parked(id, frame):
            await handle(.frame(id, frame, nil, nil))
            connections[id]?.gate.records.handled()
        case let .closed(id):
            await connectionClosed(id)
        case let .zoneChanged(zone):
            // Connections with more than their bound waiting get the news once they drain.
            let held = Set(connections.filter { $0.value.gate.records.isOverLimit }.keys)
            await send(await sync.zoneChanged(zone, holding: held))
            await wakeForHeldNews()
        case .heldNews:
            newsTimer = nil
            let held = Set(connections.filter { $0.value.gate.records.isOverLimit }.keys)
            await send(await sync.sendHeldNews(holding: held))
            await wakeForHeldNews()
        case .heldAcknowledgements:
            acknowledgementsTimer = nil
            await sync.writeHeldAcknowledgements()
            await wakeForHeldAcknowledgements()
        case let .drained(id):
            // Zone by zone, until the connection is over its bound again (its next drain goes
            // on) or nothing is held back.
            while let c = connections[id], !c.gate.records.isOverLimit {
                let (out, more) = await sync.resumeServing(id)
                await send(out)
                if !more { break }
            }
        case let .zonesChanged(restart):
            if restart {
                await send(await sync.restartConnections(reason: "a zone was deleted or replaced on this node"))
            } else {
                await send(await sync.announceZones())
            }
        case let .fetchAsset(asset):
            await send(await sync.fetchAsset(asset))
        case let .timeout(id, reason):
            if await sync.peer(of: id) == nil { close(id, reason: reason) }
        }
    }

    /// Opens a connection whose TLS handshake showed `device` (`dialed`: the address this node
    /// dialled, nil for an accepted one) and answers `reply` with its ID, or nil when the device
    /// is not trusted. The trust check comes after the TLS handshake and before this node sends
    /// its hello or any other frame (until then TrustGate lets no byte out); a device not
    /// trusted is refused here and listed as pending.
    func open(
        writer: NIOAsyncChannelOutboundWriter<Frame>, channel: any Channel, dialed: String?, device: DeviceID,
        handlers: ConnectionHandlers, reply: CheckedContinuation<ConnectionID?, Never>
    ) async {
        if let dialed { peerStates[dialed]?.device = device }
        guard admits(device, remote: dialed ?? Self.address(of: channel)) else {
            if let dialed { peerStates[dialed]?.lastError = "device \(device) is not trusted (shoal peer add)" }
            return reply.resume(returning: nil)
        }
        let (id, first) = await sync.open(device: device)
        // Checked again: trust may have been withdrawn while the node opened the session.
        guard trusted.contains(device) else {
            await sync.closed(id)
            return reply.resume(returning: nil)
        }
        // Named before the hello goes out: from then on the event loop moves this
        // connection's asset frames to the lanes itself.
        handlers.binding.connection = id
        connections[id] = Connection(
            writer: writer, channel: channel, dialed: dialed, device: device, gate: handlers.gate,
            requests: handlers.requests,
            inbound: handlers.inbound, received: handlers.received)
        startServing(id, handlers.requests)
        configuration.logger.debug(
            "connection opened",
            metadata: [
                "connection": "\(id)", "remote": "\(Self.address(of: channel))", "device": "\(device.short)",
                "dialed": "\(dialed != nil)"
            ])
        if let dialed { peerStates[dialed]?.isConnected = true }
        try? await channel.eventLoop.submit { try channel.pipeline.syncOperations.handler(type: TrustGate.self).open() }
            .get()
        reply.resume(returning: id)
        await send([id: first])
    }

    /// Hands `frame`, received on connection `id`, to the engine and sends what it answers. A
    /// trusted device speaks only as the node ID bound to it: a hello is checked against the
    /// binding first, and one this check cannot read is refused here too (fail closed), as the
    /// session would refuse it. An established hello marks a dialled peer connected.
    func receive(_ frame: Frame, on id: ConnectionID, decoded: SyncNode.DecodedChanges?) async {
        guard let device = connections[id]?.device else { return }
        if frame.type == .hello {
            let hello: HelloMessage
            do {
                hello = try HelloMessage(decoding: frame.payload, limits: await sync.configuration.limits)
            } catch {
                return await send([
                    id: [
                        .close(
                            ErrorMessage(
                                code: ShoalError.Code.invalidArguments.name,
                                message: "malformed payload from the peer: \(error)"))
                    ]
                ])
            }
            if let refusal = await bind(hello.node, to: device) {
                return await send([
                    id: [.close(ErrorMessage(code: ShoalError.Code.permissionFailure.name, message: refusal))]
                ])
            }
        }
        let out = await sync.receive(frame, on: id, decoded: decoded)
        if frame.type == .hello, let peer = await sync.peer(of: id) {
            established.insert(id)
            if let dialed = connections[id]?.dialed {
                peerStates[dialed]?.node = peer
                peerStates[dialed]?.failures = 0
                peerStates[dialed]?.lastError = nil
                discoveryDialVerified(dialed, device: device)
            }
            configuration.logger.info(
                "peer connected",
                metadata: [
                    "peer": "\(peer.short)", "connection": "\(id)",
                    "remote": "\(connections[id]?.channel.remoteAddress.map { "\($0)" } ?? "?")"
                ])
            if let closing = duplicatesClosing(device: device, peer: peer, out: out) { return await send(closing) }
        } else if frame.type == .error, let e = try? ErrorMessage(decoding: frame.payload) {
            configuration.logger.warning(
                "peer reported an error",
                metadata: ["connection": "\(id)", "code": "\(e.code)", "error": "\(e.message)"])
        }
        // A frame on the quiet accepted connection shows it alive: the dialled ones go.
        if awaitingProof.contains(device), connections[id]?.dialed == nil,
            let closing = duplicatesClosing(device: device, peer: nil, out: out)
        {
            return await send(closing)
        }
        await send(out)
    }

    /// The frames that close the duplicates of the connections to `device` (node `peer`), with
    /// `out`, what the engine answered, or nil when there are none (``DuplicateConnections``).
    /// Asked when a connection to `device` is established, and again at each frame an accepted
    /// connection reads while the decision waits for one (`awaitingProof`).
    func duplicatesClosing(device: DeviceID, peer: NodeID?, out: [ConnectionID: [SyncOutput]]) -> [ConnectionID:
        [SyncOutput]]?
    {
        let now = Date()
        let facts = connections.filter { $0.value.device == device }.map { id, c in
            DuplicateConnections.Connection(
                id: id, dialed: c.dialed != nil, discovery: c.dialed.map(isDiscoveryDial) ?? false,
                established: established.contains(id), lastFrame: c.received.last)
        }
        switch DuplicateConnections.decide(own: tls.deviceID, device: device, connections: facts, now: now) {
        case .keep:
            awaitingProof.remove(device)
            return nil
        case .awaitAcceptedFrame:
            awaitingProof.insert(device)
            return nil
        case .close(let duplicates):
            awaitingProof.remove(device)
            var closing = out
            for d in duplicates {
                configuration.logger.debug(
                    "closing a duplicate connection",
                    metadata: ["peer": "\(peer?.short ?? device.short)", "connection": "\(d)"])
                closing[d, default: []] += [
                    .send(
                        Frame(
                            type: .goodbye,
                            payload: GoodbyeMessage(reason: "a connection between these devices is open already")
                                .encoded())), .close(nil)
                ]
            }
            return closing
        }
    }

    /// Forgets connection `id`, which closed: its peer's state, its serving lane, and what the
    /// engine held for it (its transfers move to other connections).
    func connectionClosed(_ id: ConnectionID) async {
        if let dialed = connections[id]?.dialed { peerStates[dialed]?.isConnected = false }
        if connections[id] != nil {
            let peer = await sync.peer(of: id)?.short ?? "-"
            configuration.logger.info("connection closed", metadata: ["connection": "\(id)", "peer": "\(peer)"])
        }
        if let c = connections[id], trusted.contains(c.device), let last = c.received.last,
            lastFrames[c.device].map({ $0 < last }) ?? true
        {
            lastFrames[c.device] = last
        }
        connections[id]?.requests.finish()
        let device = connections[id]?.device
        connections[id] = nil
        if let device, awaitingProof.contains(device),
            !connections.contains(where: { $0.value.device == device && $0.value.dialed == nil })
        {
            awaitingProof.remove(device)
        }
        servingLanes[id] = nil
        await send(await sync.closed(id))
        await send(await sync.resumeAssetTransfers())
    }

    /// Makes sure the engine hears `heldNews` when the earliest held news is due (news is held
    /// only when a commit arrives, so this follows `zoneChanged` and `heldNews` events).
    func wakeForHeldNews() async {
        newsTimer = wake(newsTimer, at: await sync.heldNewsDeadline, with: .heldNews)
    }

    /// Makes sure the engine writes held acknowledgements when the earliest is due (one is held
    /// only when an acknowledgement arrives, so this follows those and `heldAcknowledgements`).
    func wakeForHeldAcknowledgements() async {
        acknowledgementsTimer = wake(
            acknowledgementsTimer, at: await sync.heldAcknowledgementsDeadline, with: .heldAcknowledgements)
    }

    /// A task that yields an event to the engine at a time, and that time.
    typealias Wake = (task: Task<Void, Never>, at: ContinuousClock.Instant)

    /// `timer`, or, when nothing is due before `due`, a wake-up yielding `event` at `due` in its place.
    func wake(_ timer: Wake?, at due: ContinuousClock.Instant?, with event: Event) -> Wake? {
        guard let due else { return timer }
        if let timer, timer.at <= due { return timer }
        timer?.task.cancel()
        let sink = eventSink
        let task = Task {
            do { try await Task.sleep(until: due, clock: .continuous) } catch { return }
            sink.yield(event)
        }
        return (task, due)
    }

    // MARK: Listening and dialling

    /// Listens on `host:port` (port 0 picks a free one) and returns the bound address.
    /// - Throws: NIO's error when the address cannot be bound (in use, not local, …).
    @discardableResult
    public func listen(host: String, port: Int) async throws -> SocketAddress {
        let configuration = self.configuration
        let limits = await sync.configuration.limits
        let traffic = self.traffic
        let chunks = assetChunks
        let tls = self.tls
        let admission = self.admission
        let server = try await ServerBootstrap(group: group)
            // Room to queue a burst of connections (a flood, or peers all redialling after an
            // outage) until each is admitted or refused: past the backlog, the kernel drops a
            // connection's packets and its client retries only after a second or more.
            .serverChannelOption(.backlog, value: Self.listenBacklog)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    // Over a limit: closed before TLS. At the total limit, a connection that has
                    // not shown a trusted device gives its place up instead (InboundAdmission).
                    let address = channel.remoteAddress?.ipAddress ?? "unknown"
                    switch admission.admit(channel, from: address) {
                    case .refused(let reason):
                        configuration.logger.debug(
                            "refused a connection", metadata: ["remote": "\(address)", "reason": "\(reason)"])
                        channel.close(promise: nil)
                        throw InboundRefused(reason: reason)
                    case .admitted(let evicting):
                        if let evicting { TrustGate.evict(evicting) }
                    }
                    let accepted = AcceptedChannel(
                        try Self.configure(
                            channel, configuration, limits, traffic, chunks: chunks, tls: tls,
                            admission: admission))
                    channel.closeFuture.whenComplete { _ in
                        admission.release(channel)
                        // Closed before the accept loop took it (evicted, or dropped by NIO as the
                        // listener closed): ended here, as its async channel must be.
                        if accepted.claim() { Task { await Self.discard(accepted.channel) } }
                    }
                    return accepted
                }
            }
        servers.append(server.channel)
        guard let address = server.channel.localAddress else {
            throw ChannelError.unknownLocalAddress
        }
        // Not cancelled at shutdown: closing the server ends it, after it has handed on every
        // connection already accepted. A cancelled loop would drop those, and an accepted
        // connection's async channel traps when it goes without executeThenClose. Detached from
        // the node's actor: accepting a flood's connections must not queue behind the engine.
        acceptLoops.append(
            Task.detached { [weak self] in
                try? await server.executeThenClose { inbound in
                    try await withThrowingDiscardingTaskGroup { group in
                        for try await accepted in inbound {
                            // Closed already (evicted): its close ended it.
                            guard accepted.claim() else { continue }
                            let child = accepted.channel
                            group.addTask {
                                // A connection's async channel must end through executeThenClose (its
                                // writer traps if dropped unfinished): also when the node is gone.
                                if let node = self {
                                    await node.serveAccepted(child)
                                } else {
                                    await Self.discard(child)
                                }
                            }
                        }
                    }
                }
            })
        return address
    }

    /// Connections the kernel queues for a listening socket before the node accepts them (the
    /// system caps it: `net.core.somaxconn`).
    static let listenBacklog: Int32 = 1024

    /// Dials `host:port` now and whenever the connection ends, until ``shutdown()``.
    ///
    /// With the `device` expected there, the address is not dialled while that device is
    /// connected another way (it dialled this node): one connection per pair is enough, and two
    /// would carry every change twice. When both dial each other at once, the one with the
    /// larger device ID waits a moment first, as discovery does (Spec/discovery.md §4).
    public func addPeer(host: String, port: Int, device: DeviceID? = nil) {
        let key = "\(host):\(port)"
        // Asked for by someone else too now: discovery must not stop it when the device moves.
        discoveryDials.remove(PeerAddress(host: host, port: port))
        guard peerStates[key] == nil else {
            if let device, peerStates[key]?.device == nil { peerStates[key]?.device = device }
            return
        }
        peerStates[key] = PeerState(
            address: key, isConnected: false, node: nil, device: device, failures: 0, lastError: nil)
        dialers[key] = Task { [weak self] in await self?.dialLoop(host: host, port: port) }
    }

    /// Whether the address `key` ("host:port", as ``addPeer(host:port:device:)`` names it) is
    /// dialled for discovery.
    func isDiscoveryDial(_ key: String) -> Bool {
        discoveryDials.contains { "\($0.host):\($0.port)" == key }
    }

    /// Stops dialling `host:port` (an open connection to it stays until it ends).
    public func removePeer(host: String, port: Int) {
        let key = "\(host):\(port)"
        peerStates[key] = nil
        dialers.removeValue(forKey: key)?.cancel()
    }

    func dialLoop(host: String, port: Int) async {
        let key = "\(host):\(port)"
        var delay = configuration.reconnectDelay
        var rng = SystemRandomNumberGenerator()
        if let device = peerStates[key]?.device, tls.deviceID > device {
            try? await Task.sleep(for: .milliseconds(500))
        }
        while !stopped && !Task.isCancelled && peerStates[key] != nil {
            // The device dialled us: its connection serves both ways; look again later. Addresses
            // discovery dials follow its own rule (dialDiscovered), which also redials at once a
            // device that moved while its old connection lingers.
            if let device = peerStates[key]?.device, !isDiscoveryDial(key),
                connections.values.contains(where: { $0.device == device && $0.dialed == nil })
            {
                try? await Task.sleep(for: configuration.reconnectDelay)
                continue
            }
            do {
                let configuration = self.configuration
                let limits = await sync.configuration.limits
                let traffic = self.traffic
                let chunks = assetChunks
                let tls = self.tls
                let channel = try await ClientBootstrap(group: group)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .connectTimeout(.seconds(5))
                    .connect(host: host, port: port) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try Self.configure(
                                channel, configuration, limits, traffic, chunks: chunks, tls: tls, admission: nil)
                        }
                    }
                // A connection refused by TLS or by trust backs off like a failed dial.
                peerStates[key]?.lastError = nil
                let served = await serve(channel, dialed: key)
                if served.established {
                    delay = configuration.reconnectDelay
                } else {
                    dialFailed(
                        key, "peer refused or ended the connection",
                        peerStates[key]?.lastError
                            ?? "the peer closed the connection before its hello: does it trust this device (\(tls.deviceID))?"
                    )
                    // Mutual TLS showing the device discovery expects there proves the address,
                    // whatever ended the session; anything else counts against it.
                    let showed = served.device.map { discoveryDialShowed(key, $0) } ?? false
                    if !showed, discoveryDialFailed(key, .notTheDevice) { return }
                }
            } catch {
                dialFailed(key, "could not reach peer", "\(error)")
                if discoveryDialFailed(key, .unreachable) { return }
            }
            if stopped || peerStates[key] == nil { return }
            // Exponential backoff with ±25 % jitter.
            let jitter = Double.random(in: 0.75...1.25, using: &rng)
            configuration.logger.debug("redialling", metadata: ["peer": "\(key)", "after": "\(delay * jitter)"])
            try? await Task.sleep(for: delay * jitter)
            delay = min(delay * 2, configuration.maxReconnectDelay)
        }
    }

    /// Counts a failed dial of `key` and logs it: the first failure and then every power of two,
    /// so a peer down for a day is not a flood.
    func dialFailed(_ key: String, _ what: String, _ error: String) {
        peerStates[key]?.failures += 1
        peerStates[key]?.lastError = error
        let failures = peerStates[key]?.failures ?? 0
        configuration.logger.log(
            level: failures & (failures &- 1) == 0 ? .notice : .debug, "\(what)",
            metadata: ["peer": "\(key)", "error": "\(error)", "failures": "\(failures)"])
    }

    /// Sets up a new connection's pipeline (on its event loop): for an accepted connection, the
    /// handler that tells `admission` of its first bytes and, once TLS has shown its device,
    /// whether it keeps its place; TLS (a client's for a dialled connection, when `admission`
    /// is nil), the gate that holds application bytes until the device is trusted (closing the
    /// connection if the handshake takes longer than the handshake timeout), idle timers, frame
    /// encoding and decoding, asset requests to a queue of the connection's own and chunks to
    /// `chunks` (the fetching lane's), record frames held while the socket takes no more
    /// (``OutboxHandler``), chunks held back for records.
    static func configure(
        _ channel: any Channel, _ configuration: NetworkConfiguration, _ limits: WireLimits, _ traffic: TrafficCounter,
        chunks: AssetFrameQueue, tls: PeerTLS, admission: InboundAdmission?
    ) throws -> NIOAsyncChannel<Frame, Frame> {
        let ops = channel.pipeline.syncOperations
        let gate = TrustGate(handshake: channel.eventLoop.makePromise(of: DeviceID.self))
        if let admission {
            try ops.addHandler(InboundFirstBytesHandler(admission: admission))
            // Run on the event loop as TLS completes: a trusted device's place is kept from then on.
            gate.handshake.futureResult.whenSuccess { device in admission.shown(device, by: channel) }
        }
        try ops.addHandler(tls.handler(dialing: admission == nil, gate: gate))
        try ops.addHandler(gate)
        let bound = NIOLoopBound(gate, eventLoop: channel.eventLoop)
        let timeout = channel.eventLoop.scheduleTask(in: TimeAmount(configuration.handshakeTimeout)) {
            bound.value.timeOut()
        }
        gate.handshake.futureResult.whenComplete { _ in timeout.cancel() }
        try ops.addHandler(
            IdleStateHandler(
                readTimeout: TimeAmount(configuration.idleTimeout), writeTimeout: TimeAmount(configuration.pingInterval)
            ))
        let peer = HelloCompression()
        try ops.addHandler(
            FrameEncodingHandler(
                options: configuration.frames, stream: configuration.streamCompression, traffic: traffic, peer: peer))
        try ops.addHandler(
            FrameDecodingHandler(
                limits: limits, traffic: traffic, peer: peer,
                frameTimeout: TimeAmount(configuration.frameCompletionTimeout)))
        try ops.addHandler(
            AssetFrameRouter(requests: AssetFrameQueue(limit: configuration.assetQueueBytes), chunks: chunks))
        try OutboundQueue.configure(channel)
        try ops.addHandler(
            OutboxHandler(
                outbox: Outbox(limit: configuration.outboxBytes),
                unwritableTimeout: TimeAmount(configuration.unwritableTimeout), logger: configuration.logger))
        try ops.addHandler(ChunkYieldHandler(gate: ChunkGate()))
        try ops.addHandler(KeepaliveHandler(hellos: peer))
        return try NIOAsyncChannel<Frame, Frame>(wrappingChannelSynchronously: channel)
    }

    // MARK: Serving one connection

    /// Closes a connection no one will serve. Through `executeThenClose`, which finishes the
    /// channel's writer: a writer dropped unfinished traps (NIOAsyncWriter's deinit check).
    static func discard(_ channel: NIOAsyncChannel<Frame, Frame>) async {
        try? await channel.executeThenClose { _, _ in }
    }

    /// How a dialled connection ended (``serve(_:dialed:)``).
    struct Served {
        /// Whether the session was established: false when TLS failed, the device is not
        /// trusted, or no hello from the peer was accepted (the peer refused this device, or
        /// closed the connection), so that a dialler backs off rather than redials at once.
        var established: Bool
        /// The device mutual TLS showed on this connection; nil when the handshake failed.
        var device: DeviceID?
    }

    /// Serves one connection until it ends: waits for its TLS handshake, has the engine admit its
    /// device, then passes its frames on. Returns how it ended.
    func serve(_ channel: NIOAsyncChannel<Frame, Frame>, dialed: String?) async -> Served {
        switch await Self.handshake(channel, remote: dialed, configuration) {
        case .success(let (handlers, device)):
            return Served(
                established: await serve(channel, dialed: dialed, handlers: handlers, device: device), device: device)
        case .failure(let error):
            if let dialed { peerStates[dialed]?.lastError = "\(error)" }
            return Served(established: false, device: nil)
        }
    }

    /// Serves a connection accepted by a listener: its TLS handshake away from the node's actor,
    /// so the connections of a flood that never complete TLS (Spec/replication.md §2) cost the
    /// engine nothing, then the rest as ``serve(_:dialed:)`` does.
    nonisolated func serveAccepted(_ channel: NIOAsyncChannel<Frame, Frame>) async {
        guard case .success(let (handlers, device)) = await Self.handshake(channel, remote: nil, configuration) else {
            return
        }
        _ = await serve(channel, dialed: nil, handlers: handlers, device: device)
    }

    /// Waits for the TLS handshake of `channel` (dialled to `remote`, or accepted when nil) and
    /// returns its handlers and the peer's device; when it fails, logs why, closes the channel
    /// and returns the error.
    static func handshake(
        _ channel: NIOAsyncChannel<Frame, Frame>, remote dialed: String?,
        _ configuration: NetworkConfiguration
    ) async -> Result<(ConnectionHandlers, DeviceID), any Error> {
        let raw = channel.channel
        let inboundBytes = configuration.inboundBytes
        // The handlers ``configure`` added; gone only if the channel closed before this ran.
        let found: (ConnectionHandlers, EventLoopFuture<DeviceID>)
        do {
            found = try await raw.eventLoop.submit({
                let ops = raw.pipeline.syncOperations
                let router = try ops.handler(type: AssetFrameRouter.self)
                let outbox = try ops.handler(type: OutboxHandler.self)
                let gate = OutboundGate(
                    chunks: try ops.handler(type: ChunkYieldHandler.self).gate, records: outbox.outbox,
                    handler: NIOLoopBound(outbox, eventLoop: raw.eventLoop))
                return (
                    ConnectionHandlers(
                        gate: gate, binding: router.binding, requests: router.requests,
                        inbound: InboundBudget(limit: inboundBytes),
                        received: try ops.handler(type: KeepaliveHandler.self).received),
                    try ops.handler(type: TrustGate.self).handshake.futureResult
                )
            }).get()
        } catch {
            await discard(channel)
            return .failure(error)
        }
        do {
            return .success((found.0, try await found.1.get()))
        } catch {
            // An evicted connection is counted (evictedConnections) and logged when eviction starts, not each time.
            let evicted = (error as? TrustGate.Refused)?.evicted == true
            configuration.logger.log(
                level: evicted ? .debug : .info, "TLS handshake failed",
                metadata: ["remote": "\(dialed ?? address(of: raw))", "error": "\(error)"])
            await discard(channel)
            return .failure(error)
        }
    }

    /// Serves `channel`, whose TLS handshake gave `device`, until it ends; returns whether the
    /// session was established (``serve(_:dialed:)``).
    func serve(
        _ channel: NIOAsyncChannel<Frame, Frame>, dialed: String?, handlers: ConnectionHandlers, device: DeviceID
    ) async -> Bool {
        startEngine()
        let raw = channel.channel
        let sink = eventSink
        let handshakeTimeout = configuration.handshakeTimeout
        var admitted: ConnectionID? = nil
        try? await channel.executeThenClose { inbound, outbound in
            guard
                let id = await withCheckedContinuation({ reply in
                    // The engine has stopped (shutdown): nobody will answer, so refuse here.
                    if case .terminated = sink.yield(.open(outbound, raw, dialed, device, handlers, reply)) {
                        reply.resume(returning: nil)
                    }
                })
            else { return }
            admitted = id
            let handshake = Task {
                try? await Task.sleep(for: handshakeTimeout)
                if !Task.isCancelled { sink.yield(.timeout(id, "no hello within \(handshakeTimeout)")) }
            }
            defer {
                handshake.cancel()
                sink.yield(.closed(id))
            }
            try await Self.readFrames(
                inbound, of: id, decodingWith: sync, to: sink, requests: handlers.requests, chunks: assetChunks,
                outbox: handlers.gate.records, budget: handlers.inbound)
        }
        guard let admitted else { return false }
        return established.remove(admitted) != nil
    }

    /// Passes a connection's frames to the engine, decoding `changes` and `live-changes` batches
    /// first (and rebuilding their writer-log entries, ``SyncNode/decodeAhead(_:on:)``), so the
    /// engine applies one batch while the next is decoded. What waits for the engine is bounded by the
    /// connection's `budget` (``NetworkConfiguration/inboundBytes``), not by the peer keeping to
    /// its window. Not isolated to the node: a decode here never holds the actor the engine
    /// needs. Asset frames normally never get here (``AssetFrameRouter`` moves them to their
    /// lanes on the event loop); those that arrive before the node has named the connection do,
    /// and go to their lanes from here. Requests that make the node serve more (`subscribe`,
    /// `acknowledgement`, `ping`) go through the connection's `outbox`, which holds them while
    /// the frames waiting for this peer's socket are over its limit.
    @concurrent static func readFrames(
        _ inbound: NIOAsyncChannelInboundStream<Frame>, of id: ConnectionID, decodingWith sync: SyncNode,
        to sink: AsyncStream<Event>.Continuation,
        requests: AssetFrameQueue, chunks: AssetFrameQueue, outbox: Outbox,
        budget: InboundBudget
    ) async throws {
        outbox.start { frame in
            sink.yield(.parked(id, frame))
        } drained: {
            sink.yield(.drained(id))
        }
        for try await frame in inbound {
            // A push waits while this connection has too much waiting for the lane
            // (NetworkConfiguration.assetQueueBytes): reading stops, and TCP slows the peer.
            if frame.type == .assetRequest {
                await requests.push(frame, from: id)
            } else if frame.type == .assetChunk {
                await chunks.push(frame, from: id)
            } else if Outbox.holdsBack(frame) {
                // Too many held: reading stops, and TCP slows the peer.
                if !outbox.offer(frame) { await outbox.waitForParkingRoom() }
            } else {
                // Taken before decoding: while this connection has its bound with the engine,
                // reading stops here, and TCP slows the peer.
                await budget.take(frame.heldCost)
                sink.yield(.frame(id, frame, sync.decodeAhead(frame, on: id), budget))
            }
        }
    }

    /// Sends a node's outputs on the connections they name, without waiting for any socket.
    ///
    /// Record and control frames go to the connection's ``OutboxHandler`` in order
    /// (``OutboundGate/send(_:thenClose:)``): it passes them on as the socket takes them, so the
    /// engine, which serves every connection from one task, never waits for one slow peer, and a
    /// peer that reads nothing stops being served more (``Outbox``). A `close` output sends the
    /// `error` frame, if any, after them and then closes; outputs after it are dropped.
    ///
    /// Asset frames (`asset-request`, `asset-chunk`) go to the channel directly
    /// (``write(_:around:)``) rather than behind the records, so a record change never waits for
    /// an asset lane's hop (Spec/replication.md §3.7). Chunks may already be overtaken by any
    /// other frame, asset requests included (``ChunkYieldHandler``); chunks among themselves,
    /// requests among themselves and other frames among themselves keep their order.
    func send(_ outputs: [ConnectionID: [SyncOutput]]) async {
        await deliver(outputs)
    }

    /// Sends what the engine returned from a call made outside this node's events (sharing a
    /// zone, say): frames to the connections still open, goodbyes and closes included.
    public func deliver(_ outputs: [ConnectionID: [SyncOutput]]) async {
        for (id, list) in outputs.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            guard let c = connections[id] else { continue }
            var frames = [Frame]()
            var assetFrames = [Frame]()
            var closing = false
            for o in list {
                switch o {
                case .send(let frame):
                    if frame.type == .assetChunk || frame.type == .assetRequest {
                        assetFrames.append(frame)
                    } else {
                        frames.append(frame)
                    }
                case .close(let error):
                    if let error {
                        configuration.logger.warning(
                            "closing connection",
                            metadata: ["connection": "\(id)", "code": "\(error.code)", "error": "\(error.message)"])
                        frames.append(Frame(type: .error, payload: error.encoded()))
                    }
                    closing = true
                }
                if closing { break }
            }
            // Asset frames first: those before a close still go before it (the channel's event
            // loop runs both hand-overs in this order).
            if !assetFrames.isEmpty { Self.write(assetFrames, around: c.channel) }
            if !frames.isEmpty || closing { c.gate.send(frames, thenClose: closing) }
            // The serving lane: once the chunks held above this connection's socket pass the
            // limit, the next request waits (a peer that does not read cannot pile them up).
            // Only the lanes send chunks: the engine never waits here.
            if list.contains(where: { if case .send(let f) = $0 { f.type == .assetChunk } else { false } }) {
                await c.gate.chunks.waitForRoom()
            }
        }
    }

    /// Writes `frames` to `channel` on its event loop, in order, and flushes them: one task on
    /// the loop, which no other caller can hold up. A closed channel drops them (the peer asks
    /// again, or the fetch moves on, Spec/replication.md §3.7).
    static func write(_ frames: [Frame], around channel: any Channel) {
        channel.eventLoop.execute {
            for f in frames { channel.write(f, promise: nil) }
            channel.flush()
        }
    }

    /// Says goodbye on connection `id` and closes it once the goodbye has gone, without waiting
    /// for that (a connection that takes nothing more is closed by its unwritable timeout).
    func close(_ id: ConnectionID, reason: String) {
        guard let c = connections[id] else { return }
        c.gate.send([Frame(type: .goodbye, payload: GoodbyeMessage(reason: reason).encoded())], thenClose: true)
    }

    /// The most bytes of `device`'s frames this node has held read but not yet handled at once,
    /// over its open connections (each bounded by ``NetworkConfiguration/inboundBytes``); nil
    /// when it has none open.
    package func inboundPeakBytes(of device: DeviceID) -> Int? {
        let open = connections.values.filter { $0.device == device }
        return open.isEmpty ? nil : open.map(\.inbound.peakBytes).max()
    }

    /// The bytes this node holds for `device`'s open connections above their sockets: record
    /// and control frames waiting in their outboxes, chunks held back, and what NIO has buffered
    /// below (its write buffer, before TLS and the kernel); nil when it has none open.
    package func outboundBytes(of device: DeviceID) async -> Int? {
        let open = connections.values.filter { $0.device == device }
        guard !open.isEmpty else { return nil }
        var total = 0
        for c in open {
            total &+= c.gate.records.queuedBytes &+ c.gate.chunks.heldBytes
            let channel = c.channel
            total &+=
                (try? await channel.eventLoop.submit { try channel.syncOptions?.getOption(.bufferedWritableBytes) ?? 0 }
                    .get()) ?? 0
        }
        return total
    }

    // MARK: Live changes

    /// Follows the store's commits (local saves and batches from any peer) and passes them on:
    /// changed zones to idle subscriptions, created or deleted zones to every peer; and runs the
    /// ``PurgeSchedule`` every ``NetworkConfiguration/tombstonePurgeInterval``.
    /// - Throws: `ShoalError` if the store cannot save its replication subscription.
    public func start() async throws {
        let store = await sync.store
        try await store.saveSubscription(Subscription(id: Self.subscriptionID, kind: .database(nil)))
        var announced = await store.zoneAnnouncements()
        let notifications = await store.notifications()
        let sink = eventSink
        startEngine()
        tasks.append(
            Task {
                for await n in notifications where n.subscriptionID == Self.subscriptionID {
                    let now = await store.zoneAnnouncements()
                    if now != announced {
                        let before = Dictionary(uniqueKeysWithValues: announced.map { ($0.zone, $0) })
                        let restart = now.contains { a in
                            before[a.zone].map { !$0.isDeleted && ($0.incarnation != a.incarnation || a.isDeleted) }
                                ?? false
                        }
                        announced = now
                        sink.yield(.zonesChanged(restart: restart))
                    }
                    for zone in n.zones.sorted() { sink.yield(.zoneChanged(zone)) }
                }
            })
        if let every = configuration.tombstonePurgeInterval {
            let schedule = PurgeSchedule(
                interval: every, retention: configuration.tombstoneRetention, logger: configuration.logger)
            let sync = self.sync
            tasks.append(Task { await schedule.run(on: sync) })
        }
    }

    static let subscriptionID = "shoal.replication"

    /// Fetches `asset` from connected peers — manifest, then chunks through a window of
    /// ``SyncConfiguration/assetWindow``, each verified — and returns once it is held here.
    /// A connection lost mid-way resumes on another peer from the first missing chunk; with no
    /// peer connected the fetch waits for one.
    /// - Throws: `AssetFetchError` `assetNotAvailable` when every connected peer lacks it or
    ///   sent bytes that did not verify; `assetUnsupported` without an asset store.
    public func fetchAsset(_ asset: Asset) async throws {
        startEngine()
        eventSink.yield(.fetchAsset(asset))
        try await sync.waitForAsset(asset)
    }

    /// Every dialled peer's state.
    public func peers() -> [PeerState] { peerStates.values.sorted { $0.address < $1.address } }

    /// The number of open connections (dialled and accepted).
    public var connectionCount: Int { connections.count }

    /// The devices with an open connection, dialled or accepted.
    public var connectedDevices: Set<DeviceID> { Set(connections.values.map(\.device)) }

    /// When `device` was last heard from since this node started: the last frame that arrived
    /// from it on any connection, open or closed, and its last announcement through local
    /// discovery. Kept for trusted devices only (forgotten when one is no longer trusted).
    public func lastSeen(of device: DeviceID) -> DeviceLastSeen {
        var frame = lastFrames[device]
        for c in connections.values where c.device == device {
            if let last = c.received.last, frame.map({ $0 < last }) ?? true { frame = last }
        }
        return DeviceLastSeen(frame: frame, announcement: lastAnnouncements[device])
    }

    /// Says goodbye on every connection, stops listening and dialling, and writes what peers
    /// acknowledged that the engine still held back (``SyncNode/writeAllHeldAcknowledgements()``).
    public func shutdown() async {
        stopped = true
        await stopDiscovery()
        eventSink.finish()
        assetChunks.finish()
        for c in connections.values {
            c.requests.finish()
            c.inbound.close()
        }
        // A goodbye where the socket takes it, then every connection closed together: one whose
        // peer reads nothing costs TLS's close wait (at most a few seconds) once, not once each.
        for (id, _) in connections { close(id, reason: "the node is shutting down") }
        let closing = connections.values.map { $0.channel.close() }
        for c in closing { try? await c.get() }
        for s in servers { try? await s.close() }
        for t in tasks { t.cancel() }
        for t in dialers.values { t.cancel() }
        for t in servingLanes.values { t.cancel() }
        for t in probes.values { t.cancel() }
        probes = [:]
        newsTimer?.task.cancel()
        newsTimer = nil
        acknowledgementsTimer?.task.cancel()
        acknowledgementsTimer = nil
        // Every connection is closed: no acknowledgement comes after these.
        await sync.writeAllHeldAcknowledgements()
        tasks = []
        acceptLoops = []
        dialers = [:]
        servingLanes = [:]
        servers = []
    }
}
