// SyncNode: a node's replication engine — runs every connection's session against the store.

public import ShoalWire
public import ShoalStore
public import ShoalTrust
import Dispatch
import Synchronization
package import Logging

/// Replicates a ``Store``'s zones with peers, over any transport.
///
/// The transport (ShoalNet's TCP, or a simulator in tests) calls ``open()`` for each new
/// connection and sends the frames it returns, feeds every frame received with
/// ``receive(_:on:)`` — one at a time per connection, in order — and reports the end of a
/// connection with ``closed(_:)``. When the store commits a change (a local save, or a batch from
/// another peer), the owner calls ``zoneChanged(_:)`` so idle subscriptions send it on.
/// Every call returns what to send; the node never touches a socket itself (Spec/replication.md §4).
public actor SyncNode {
    /// The replica.
    public let store: Store
    /// The configuration.
    public let configuration: SyncConfiguration
    /// This node's ID (the store's).
    public nonisolated let nodeID: NodeID
    /// The device key this node signs its zones' shares with; nil: it owns no shares and every
    /// zone it creates is open to every trusted device (Spec/security.md §6).
    public let signer: ShareSigner?
    /// The zones' shares held, read from the store on first use.
    let shares: ZoneShares
    /// The asset transfers, beside the record engine (``AssetExchange``).
    let exchange: AssetExchange
    /// Each inbound subscription's vector reference, by connection and number, for the
    /// transport's read loops to decode `live-changes` ahead (``decodeAhead(_:on:)``).
    nonisolated let liveReferences = LiveReferences()
    /// Frames for other connections produced while handling one connection's frame.
    var extraOutputs: [ConnectionID: [SyncOutput]] = [:]

    var sessions: [ConnectionID: SyncSession] = [:]
    var nextConnection: UInt64 = 1
    /// Knowledge per zone, cached from the store (Spec/replication.md §1.1).
    var knowledgeCache: [RecordZone.ID: VersionVector] = [:]
    /// A zone's incarnation changed here or a zone was deleted: every connection must restart.
    var restartPending = false
    /// When each peer's acknowledgements reach the store, and those held until their second is
    /// up (``recordAcknowledgement(peer:zone:knowledge:)``).
    var acknowledgements: AcknowledgementThrottle
    /// A zone was created here from a peer's announcement: tell every peer.
    var announcePending = false
    /// Subscriptions whose next subscribe states no knowledge, so the peer sends whole
    /// versions: a sparse record could not be rebuilt here.
    var wholeVersionsNeeded: Set<PeerZone> = []
    /// Full resyncs in progress: the names received so far. Persisted as a marker
    /// (``SyncStateKey/resync(peer:zone:)``) so a resync cut short restarts whole.
    var resyncs: [PeerZone: Set<String>] = [:]
    /// Where the engine logs: ``SyncConfiguration/logger``, unless a test traces the engine
    /// (``setTrace(_:)``). At `trace` level it writes a line for every batch, knowledge adoption
    /// and refusal (tests print them to explain a failure); at `info` and above only what an
    /// operator needs.
    package var logger: Logger
    /// Sends every trace line of the engine to `lines` (the simulator and the tests print them),
    /// or stops tracing (nil).
    package func setTrace(_ lines: (@Sendable (String) -> Void)?) {
        guard let lines else {
            logger = configuration.logger
            return
        }
        var traced = Logger(label: "shoal.sync") { _ in LineLogHandler(lines) }
        traced.logLevel = .trace
        logger = traced
    }

    /// Counters since the node was created, for status displays and progress.
    public struct Statistics: Sendable, Hashable {
        /// Record versions received in batches (applied, or no-ops when already known).
        public var recordsReceived = 0
        /// Batches received and applied.
        public var batchesReceived = 0
        /// Record versions sent.
        public var recordsSent = 0
        /// Batches sent.
        public var batchesSent = 0
        /// Payload bytes of the batches received.
        public var bytesReceived = 0
        /// Record versions received sparse (rebuilt on the stored version; included in
        /// ``recordsReceived``).
        public var sparseRecordsReceived = 0
        /// Times a sparse record could not be rebuilt and the subscription asked for whole versions.
        public var wholeVersionRequests = 0
        /// `live-changes` batches the transport decoded ahead, while the batch before them was
        /// applied, against the vector reference the subscription held when they were applied.
        public var batchesDecodedAhead = 0
        /// Sparse records rebuilt on the version before the stored one, after this node's own
        /// write since had replaced a slot the sender left out (Spec/replication.md §3.5.1).
        public var sparseRecordsRebuiltOnPrevious = 0
        /// Fields sent as an edit of the value the subscriber holds (delta slots), and the
        /// payload bytes they saved against sending those fields whole.
        public var fieldDeltasSent = 0
        /// Payload bytes the delta slots sent saved, against sending their fields whole.
        public var fieldDeltaBytesSaved = 0
        /// Delta slots applied to a value this node held.
        public var fieldDeltasApplied = 0
        /// Records asked for whole (`want-whole`) because a sparse record of theirs could not be
        /// rebuilt here, without reconnecting (Spec/replication.md §3.10).
        public var recordsWantedWhole = 0
        /// Records a peer asked this node for whole, and that it sent.
        public var recordsSentWhole = 0
        /// Full resyncs completed after an expired token (Spec/replication.md §3.5.2).
        public var resyncsCompleted = 0
        /// Local records deleted by those resyncs: deleted on the peer, tombstone since purged.
        public var resyncDeletions = 0
        /// Caught-up knowledge not adopted because it did not cover the zone's purge horizon
        /// here: the server had not seen every deletion purged here (Spec/replication.md §3.5.3).
        public var knowledgeHeldBackForHorizon = 0
        /// Tombstones this node purged through ``SyncNode/purgeTombstones(retention:)``.
        public var tombstonesPurged = 0
        /// Zone tombstones (deleted zones) the same passes purged (Spec/replication.md §4.1).
        public var zoneTombstonesPurged = 0
        /// Assets fetched and verified.
        public var assetsFetched = 0
        /// Asset fetches that ended with an error.
        public var assetFetchesFailed = 0
        /// Asset chunks sent to peers.
        public var assetChunksSent = 0
        /// Asset chunks received and verified.
        public var assetChunksReceived = 0
        /// Asset manifests and chunks answered `unavailable` because their frame would have
        /// been larger than the asking peer's max frame payload.
        public var assetPartsTooLargeForPeer = 0
        /// `changes` batches refused whole for what they claimed: a write of this node it never
        /// made, or a timestamp beyond the allowed clock drift (Spec/replication.md §3.8).
        public var refusedBatches = 0
        /// `subscribe` and `acknowledgement` messages refused for the knowledge they stated
        /// (Spec/replication.md §3.8).
        public var refusedKnowledge = 0
        /// Caught-up batches whose knowledge claimed writes the zone does not show, adopted
        /// only up to what it shows (Spec/replication.md §3.8).
        public var unshownKnowledgeDropped = 0
        /// Frames refused because the connection's device may not do what they ask with their
        /// zone: changes from a read-only member, a subscribe from a device that is not a
        /// member (Spec/security.md §6.2).
        public var refusedForPermission = 0
        /// Shares in peers' announcements that were not adopted: a signature that does not
        /// verify, another owner than the zone's, or one that does not list this device.
        public var sharesIgnored = 0
        /// Announcements of a shared zone's deletion or incarnation that came without its
        /// owner's share, ignored (Spec/security.md §6.3).
        public var unsignedZoneChangesIgnored = 0
        /// Versions not sent to a subscriber because the peers that wrote them deliver them to it
        /// themselves (its upstreams, Spec/replication.md §3.9).
        public var versionsLeftToUpstreams = 0
        /// Subscriptions read again from the subscriber's knowledge because an upstream it had
        /// versions left to was lost.
        public var upstreamRewinds = 0
        /// Zones a peer's announcement would have created past their owner's limit
        /// (``SyncConfiguration/maxZonesPerOwner``), left out (Spec/replication.md §3.3).
        public var zonesRefusedForOwnerLimit = 0
        /// Entries of other writers' logs verified against their devices' checkpoints and kept
        /// (Spec/authenticated-writes.md §5).
        public var writerEntriesVerified = 0
        /// Entries of a peer's own log taken from that peer on its authenticated connection's
        /// word and kept implied, their chain checked when first needed
        /// (Spec/authenticated-writes.md §5.1).
        public var writerEntriesTaken = 0
        /// Writer log ranges sent, and the checkpoints this node signed for its own log.
        public var writerRangesSent = 0
    }

    /// Counters since the node was created.
    public internal(set) var statistics = Statistics()

    /// One peer's share of ``Statistics``: the record versions and payload bytes of the batches
    /// exchanged with it, over every connection since the node was created.
    public struct PeerStatistics: Sendable, Hashable {
        /// Record versions received from the peer.
        public var recordsReceived = 0
        /// Payload bytes of the batches received from the peer.
        public var bytesReceived = 0
        /// Record versions sent to the peer.
        public var recordsSent = 0
        /// Payload bytes of the batches sent to the peer.
        public var bytesSent = 0
    }

    /// ``PeerStatistics`` by peer, one entry per peer a batch went to or came from.
    public internal(set) var peerStatistics: [NodeID: PeerStatistics] = [:]

    /// The last error each peer caused or reported, by peer.
    public func lastErrors() -> [NodeID: String] {
        var out = [NodeID: String]()
        for s in sessions.values { if let p = s.peer?.node, let e = s.lastError { out[p] = e } }
        return out
    }

    /// Where replication of one zone with one connected peer stands, both ways.
    public struct ZoneReplication: Sendable, Hashable {
        /// The peer.
        public var peer: NodeID
        /// The zone.
        public var zone: RecordZone.ID
        /// Whether this node follows the peer's changes of the zone (a live subscription).
        public var receiving: Bool
        /// Whether the peer's last batch said it had nothing newer for us.
        public var receivedCaughtUp: Bool
        /// Record versions received from the peer for the zone on this connection.
        public var recordsReceived: Int
        /// During a catch-up: about how many versions it brings in all (the peer's count of what
        /// was left, plus what had arrived); nil once caught up or when the peer did not say.
        public var recordsExpected: Int?
        /// Whether the peer follows this node's changes of the zone.
        public var sending: Bool
        /// Batches sent to the peer that it has not acknowledged yet.
        public var unacknowledgedBatches: Int
        /// Whether everything this node knows of the zone was sent and the peer went idle.
        public var sentCaughtUp: Bool
    }

    /// Replication state per connected peer and zone, for status displays.
    public func replication() -> [ZoneReplication] {
        var out = [ZoneReplication]()
        for s in sessions.values {
            guard let peer = s.peer?.node, s.phase == .established else { continue }
            for zone in Set(s.inbound.keys).union(s.outbound.keys).sorted() {
                let i = s.inbound[zone], o = s.outbound[zone]
                out.append(
                    ZoneReplication(
                        peer: peer, zone: zone, receiving: i != nil, receivedCaughtUp: i?.caughtUp ?? false,
                        recordsReceived: i?.records ?? 0, recordsExpected: i?.expected, sending: o != nil,
                        unacknowledgedBatches: Int(o?.unacknowledged ?? 0), sentCaughtUp: o?.reading == .caughtUp))
            }
        }
        return out.sorted { ($0.peer, $0.zone) < ($1.peer, $1.zone) }
    }

    /// The protocol versions this node speaks.
    public static let versions: ClosedRange<UInt64> = 1...1

    /// Capability bits this node announces in its hello (Spec/replication.md §3.2): bit 0, it
    /// accepts sparse records in `changes`; bit 1, it answers asset requests (it has an asset store).
    public var capabilities: UInt64 {
        Capability.sparseRecords | (assets != nil ? Capability.assets : 0)
            | (configuration.skipsUpstreams ? Capability.upstreams : 0)
            | Capability.liveChanges | (configuration.fieldDeltas ? Capability.fieldDeltas : 0)
            | Capability.vectorsAgainstStated
            | Capability.numbersInSubscribe
            | (signer != nil && configuration.authenticatesWrites ? Capability.authenticatedWrites : 0)
    }

    /// Capability bits of the hello message.
    enum Capability {
        static let sparseRecords: UInt64 = 1
        static let assets: UInt64 = 2
        /// Understands `upstreams` (Spec/replication.md §3.9).
        static let upstreams: UInt64 = 4
        // Bit 3 (8), compression 3, is the transport's: ShoalNet sets it in the hellos it frames
        // (`HelloMessage.streamCompressionCapability`, Spec/wire-format.md §14.3).
        /// Reads `live-changes` and subscription numbers in `changes` (Spec/replication.md §3.5.4).
        static let liveChanges: UInt64 = 16
        /// Reads delta slots in sparse records and answers `want-whole` (Spec/replication.md
        /// §3.5.1, §3.10).
        static let fieldDeltas: UInt64 = 32
        /// Reads `live-changes` whose knowledge and sparse base are written against the knowledge
        /// the subscription stated (flags bit 3, Spec/replication.md §3.5.4).
        static let vectorsAgainstStated: UInt64 = 64
        /// Takes a subscription's number in `subscribe`, and then may send its first batch as
        /// `live-changes` (Spec/replication.md §3.4, §3.5.4).
        static let numbersInSubscribe: UInt64 = 128
        /// Sends and checks writer log sections: its batches prove every write they carry
        /// (Spec/authenticated-writes.md §4).
        static let authenticatedWrites: UInt64 = 256
    }

    /// Creates a node replicating `store`, serving and fetching assets through `assets` if given,
    /// signing the shares of the zones it owns with `signer`.
    public init(
        store: Store, configuration: SyncConfiguration = SyncConfiguration(), assets: (any AssetProvider)? = nil,
        signer: ShareSigner? = nil
    ) {
        self.logger = configuration.logger
        self.store = store
        self.configuration = configuration
        acknowledgements = AcknowledgementThrottle(
            interval: configuration.writesAcknowledgementsInline ? .zero : .seconds(1))
        self.nodeID = store.nodeID
        self.exchange = AssetExchange(provider: assets)
        self.shares = ZoneShares(store: store, limits: configuration.limits)
        self.signer = signer
    }

    // MARK: Connections

    /// Registers a new connection and returns its ID and the frames to send first (the hello).
    ///
    /// `device` is the authenticated device at the other end (from the TLS handshake): every
    /// zone it learns of, reads or writes is checked against the zone's share (Spec/security.md
    /// §6). Nil for a transport that authenticates nobody (in-memory tests and simulations): such
    /// a connection may do everything, as a zone's owner may.
    public func open(device: DeviceID? = nil) async -> (ConnectionID, [SyncOutput]) {
        let id = ConnectionID(rawValue: nextConnection)
        nextConnection &+= 1
        var session = SyncSession()
        session.device = device
        sessions[id] = session
        let hello = await hello(for: id)
        sessions[id]?.announced = hello.zones
        return (id, [.send(Frame(type: .hello, payload: hello.encoded()))])
    }

    /// Forgets a connection (closed by either side or broken). Its subscriptions end; the peer
    /// resubscribes from its stored position when it reconnects.
    ///
    /// Asset fetches that were asking this peer are parked; ``resumeAssetTransfers()`` moves them
    /// to another connected peer (the next hello does too), from the first missing chunk.
    ///
    /// - Returns: what the other connections send now: the peer was an upstream of zones they
    ///   serve this node, so their servers hear the smaller set (Spec/replication.md §3.9).
    @discardableResult
    public func closed(_ id: ConnectionID) -> [ConnectionID: [SyncOutput]] {
        let lost = sessions[id]?.inbound.filter { $0.value.isUpstream }.map(\.key) ?? []
        sessions[id] = nil
        liveReferences.forget(id)
        exchange.closed(id)
        var out = [ConnectionID: [SyncOutput]]()
        for zone in lost.sorted() {
            for (c, more) in announceUpstreams(of: zone) { out[c, default: []] += more }
        }
        return out
    }

    /// The peer of a connection, once its hello arrived.
    public func peer(of id: ConnectionID) -> NodeID? { sessions[id]?.peer?.node }

    /// The live connections and their peers.
    public func connections() -> [(ConnectionID, NodeID?)] {
        sessions.map { ($0.key, $0.value.peer?.node) }.sorted { $0.0.rawValue < $1.0.rawValue }
    }

    /// The zones this node announces: every zone it has held, live or deleted, that it replicates.
    func announcedZones() async -> [ZoneAnnouncement] {
        await store.zoneAnnouncements().filter { configuration.zones.allows($0.zone) }
    }

    func hello(for id: ConnectionID) async -> HelloMessage {
        let zones = await announcedZones(for: id)
        return HelloMessage(
            minimumVersion: Self.versions.lowerBound, maximumVersion: Self.versions.upperBound, node: nodeID,
            name: configuration.nodeName, capabilities: capabilities, dictionaries: [BuiltInDictionaries.recordsID],
            maxFramePayloadBytes: UInt64(configuration.limits.maxFramePayloadBytes), zones: zones)
    }

    /// Handles one frame received on `id` and returns what to send, per connection: usually only
    /// on `id`, but a change of a zone's incarnation restarts every connection (Spec/replication.md §4).
    public func receive(_ frame: Frame, on id: ConnectionID) async -> [ConnectionID: [SyncOutput]] {
        await receive(frame, on: id, decoded: nil)
    }

    /// Frees `value` on a background thread. A batch of 2,000 decoded records is some 20,000
    /// allocations; freeing them where the batch was applied held the engine ~0.7 ms per batch
    /// before it could take the next one (`shoal-bench sync`, initial-sync).
    nonisolated static func releaseLater<T: Sendable>(_ value: consuming T) {
        let box = ReleaseBox(value)
        DispatchQueue.global(qos: .utility).async { box.clear() }
    }

    /// ``receive(_:on:)`` with the frame's ``decodeAhead(_:on:)`` result, when the transport made it.
    package func receive(_ frame: Frame, on id: ConnectionID, decoded: DecodedChanges?) async -> [ConnectionID:
        [SyncOutput]]
    {
        await settle(await handle(frame, on: id, decoded: decoded), on: id)
    }

    /// What a call that handled frames from `id` and answered `out` sends: `out`, the outputs for
    /// other connections that handling set aside, or a restart or announcement it made due.
    func settle(_ out: [SyncOutput], on id: ConnectionID) async -> [ConnectionID: [SyncOutput]] {
        // Taken at once: a concurrent call (the asset lane runs beside the record engine) adds
        // its own extras, which it or this call sends — never both, never neither.
        let extras = extraOutputs
        extraOutputs = [:]
        if restartPending {
            restartPending = false
            announcePending = false
            return restartAll(reason: "zones changed on node \(nodeID.short); reconnect to exchange them again")
        }
        var result: [ConnectionID: [SyncOutput]] = out.isEmpty ? [:] : [id: out]
        for (c, more) in extras { result[c, default: []] += more }
        if announcePending {
            // A zone created here from a peer's announcement: every peer (this one included)
            // learns we hold it now, and subscribes to it.
            announcePending = false
            for (c, more) in await announceZones() { result[c, default: []] += more }
        }
        return result
    }

    /// Says goodbye on every connection (the transport reconnects; hellos carry the new zones).
    func restartAll(reason: String) -> [ConnectionID: [SyncOutput]] {
        var result = [ConnectionID: [SyncOutput]]()
        for id in sessions.keys {
            result[id] = [.send(Frame(type: .goodbye, payload: GoodbyeMessage(reason: reason).encoded())), .close(nil)]
            sessions[id]?.phase = .closed
        }
        return result
    }

    func handle(_ frame: Frame, on id: ConnectionID, decoded: DecodedChanges? = nil) async -> [SyncOutput] {
        guard let session = sessions[id], session.phase != .closed else { return [] }
        do throws(SyncFailure) {
            if session.phase == .awaitingHello {
                guard frame.type == .hello else {
                    throw SyncFailure(.protocolViolation, "the first frame must be hello, got \(frame.type)")
                }
                return try await handleHello(frame, on: id)
            }
            switch frame.type {
            case .changes: return try await handleChanges(frame, on: id, decoded: decoded)
            case .liveChanges: return try await handleLiveChanges(frame, on: id, decoded: decoded)
            case .acknowledgement: return try await handleAcknowledgement(frame, on: id)
            case .subscribe: return try await handleSubscribe(frame, on: id)
            case .upstreams: return try await handleUpstreams(frame, on: id)
            case .wantWhole: return try await handleWantWhole(frame, on: id)
            case .assetRequest: return try await handleAssetRequest(frame, on: id)
            case .assetChunk:
                var all = try await handleAssetChunk(frame, on: id)
                let mine = all.removeValue(forKey: id) ?? []
                for (c, more) in all { extraOutputs[c, default: []] += more }
                return mine
            case .zones:
                let m = try decode { (l) throws(WireError) in try ZonesMessage(decoding: frame.payload, limits: l) }
                return try await reconcile(m.zones, on: id, from: .zones)
            case .ping:
                _ = try decode { (l) throws(WireError) in try PingMessage(decoding: frame.payload, limits: l) }
                return [.send(Frame(type: .pong, payload: frame.payload))]
            case .pong:
                return []
            case .hello:
                throw SyncFailure(.protocolViolation, "a second hello on one connection")
            case .goodbye:
                sessions[id]?.phase = .closed
                return [.close(nil)]
            case .error:
                let m = try decode { (l) throws(WireError) in try ErrorMessage(decoding: frame.payload, limits: l) }
                sessions[id]?.lastError = m.description
                sessions[id]?.phase = .closed
                return [.close(nil)]
            default:
                return []  // unknown types are skipped (wire-format §13.3)
            }
        } catch {
            sessions[id]?.lastError = error.message
            sessions[id]?.phase = .closed
            return [.close(ErrorMessage(code: error.code.name, message: error.message))]
        }
    }

    func decode<T>(_ body: (WireLimits) throws(WireError) -> T) throws(SyncFailure) -> T {
        do throws(WireError) { return try body(configuration.limits) } catch {
            throw SyncFailure(.invalidArguments, "malformed payload from the peer: \(error)")
        }
    }

    // MARK: Handshake and zones

    func handleHello(_ frame: Frame, on id: ConnectionID) async throws(SyncFailure) -> [SyncOutput] {
        let hello = try decode { (l) throws(WireError) in try HelloMessage(decoding: frame.payload, limits: l) }
        guard SyncSession.negotiate(Self.versions, hello) != nil else {
            throw SyncFailure(
                .incompatibleVersion,
                "the peer speaks protocol versions \(hello.minimumVersion)–\(hello.maximumVersion); this node speaks \(Self.versions.lowerBound)–\(Self.versions.upperBound)"
            )
        }
        guard hello.node != nodeID else {
            throw SyncFailure(.invalidArguments, "connected to itself (node \(nodeID.short)); check the peer address")
        }
        // The zones are handled once, here; only those held here are kept (reconcile).
        var kept = hello
        kept.zones = []
        sessions[id]?.peer = kept
        liveReferences.publishPeer(hello.node, on: id)
        sessions[id]?.phase = .established
        var out = try await reconcile(hello.zones, on: id, from: .hello)
        // Zones that changed here after our hello went out (announcements skip connections still
        // waiting for the peer's hello): tell the peer now, or it never learns of them.
        let current = await announcedZones(for: id)
        if current != sessions[id]?.announced {
            sessions[id]?.announced = current
            out.insert(.send(Frame(type: .zones, payload: ZonesMessage(zones: current).encoded())), at: 0)
        }
        // Asset fetches parked for want of a peer ask this one.
        for (c, more) in await exchange.moveTransfers(from: nil, engine: self) {
            if c == id { out += more } else { extraOutputs[c, default: []] += more }
        }
        return out
    }

    /// The message a peer's zone announcements came in.
    enum AnnouncementMessage { case hello, zones }

    /// Brings local zones in line with a peer's announcements, then subscribes to every zone
    /// live on both sides that this connection does not yet follow. `from` is the message that
    /// carried `announced` (every zone the peer announces); nil when no message did (this node's
    /// own zones changed).
    func reconcile(_ announced: [ZoneAnnouncement], on id: ConnectionID, from: AnnouncementMessage?)
        async throws(SyncFailure) -> [SyncOutput]
    {
        // Work here is per zone announced or held for this peer, never per zone of the node: a
        // peer's announcement costs what it carries (Spec/replication.md §3.3).
        let announced = announced.filter { configuration.zones.allows($0.zone) }
        var local = await store.zoneAnnouncements(of: announced.map(\.zone))
        // Zones this node purged the tombstone of stand as that tombstone: announced live with the
        // purged incarnation, they are not created again (Spec/replication.md §4.1).
        let purged: [RecordZone.ID: NodeID]
        do throws(ShoalError) {
            // Only what can matter is looked up: a live announcement, any in a hello, and a
            // deletion in a `zones` message of a zone this node told the peer it purged; a flood of
            // other deletions costs no store read.
            let told = sessions[id]?.purgedAnnounced ?? [:]
            let unknown = announced.filter {
                local[$0.zone] == nil && (!$0.isDeleted || from != .zones || told[$0.zone] != nil)
            }.map(\.zone)
            purged = unknown.isEmpty ? [:] : try await store.purgedIncarnations(of: unknown)
        } catch {
            throw SyncFailure(.internalError, "could not read the purged zones for the peer's announcement: \(error)")
        }
        try await adopt(announced, local: local, purged: purged, on: id)
        guard let peerHello = sessions[id]?.peer else { return [] }
        // What the peer announced, updated by this message: only zones held here are kept, and
        // without their shares, so what a peer announces costs at most an entry per zone held.
        var peerZones = sessions[id]?.peerZones ?? [:]
        local = await store.zoneAnnouncements(of: Set(announced.map(\.zone)).union(peerZones.keys))
        for a in announced where local[a.zone] != nil {
            peerZones[a.zone] = ZoneAnnouncement(zone: a.zone, incarnation: a.incarnation, isDeleted: a.isDeleted)
        }
        for zone in peerZones.keys where local[zone] == nil { peerZones[zone] = nil }
        sessions[id]?.peerZones = peerZones
        // Which of the zones held here the peer replicates, and which deletions it has announced
        // (for zone tombstone purges, §4.1): only devices that may read a zone speak for it.
        var replicated = [ZoneAnnouncement]()
        for a in announced where local[a.zone] != nil {
            if await access(id, a.zone) >= .read { replicated.append(a) }
        }
        do throws(ShoalError) {
            try await store.notePeerAnnouncements(replicated, from: peerHello.node)
        } catch {
            throw SyncFailure(.internalError, "could not record the peer's announcement of its zones: \(error)")
        }
        let told = await tellPurged(announced, local: local, purged: purged, from: from, on: id)
        return told + (await follow(peerZones, local: local, on: id))
    }

    /// Brings local zones in line with `announced`, a peer's announcements (those not left out
    /// by ``checkNewZones(_:local:purged:on:)``): a shared zone only by its owner's signed share,
    /// an unshared one as ``adoptUnsigned(_:mine:heldBefore:on:)`` says. `local` is the zones as
    /// held here, `purged` the incarnations of those purged here. Connections of devices whose
    /// access a share changed restart once the call settles.
    func adopt(
        _ announced: [ZoneAnnouncement], local: [RecordZone.ID: ZoneAnnouncement], purged: [RecordZone.ID: NodeID],
        on id: ConnectionID
    ) async throws(SyncFailure) {
        let leftOut = try await checkNewZones(announced, local: local, purged: purged, on: id)
        var shareChanges = Set<DeviceID>()
        for a in announced where !leftOut.contains(a.zone) {
            let mine =
                local[a.zone] ?? purged[a.zone].map { ZoneAnnouncement(zone: a.zone, incarnation: $0, isDeleted: true) }
            // A shared zone changes only by its owner's signed share (Spec/security.md §6.3).
            if let share = a.share {
                shareChanges.formUnion(try await adoptShare(a, share, mine: mine, on: id))
                continue
            }
            try await adoptUnsigned(a, mine: mine, heldBefore: local[a.zone] != nil, on: id)
        }
        guard !shareChanges.isEmpty else { return }
        for (c, more) in restart(
            shareChanges, except: id, reason: "a zone's share changed on node \(nodeID.short); reconnect to follow it")
        {
            extraOutputs[c, default: []] += more
        }
        announcePending = true
    }

    /// The `zones` message that tells the peer on `id` of zones purged here that it announced
    /// (`announced`, in the message `from`) in the purged incarnation, when what it is told
    /// changes; `local` is the zones held here after the announcement, `purged` the purged
    /// incarnations.
    ///
    /// A peer that still holds a zone purged here, in the purged incarnation, is told it was
    /// deleted: it deletes its copy, or purges its own tombstone. A deletion announced in a
    /// hello is the peer's own tombstone; one in a `zones` message may only echo what this
    /// node told it, so it starts nothing (two nodes that both purged would otherwise keep
    /// telling each other for as long as the connection lasts).
    func tellPurged(
        _ announced: [ZoneAnnouncement], local: [RecordZone.ID: ZoneAnnouncement], purged: [RecordZone.ID: NodeID],
        from: AnnouncementMessage?, on id: ConnectionID
    ) async -> [SyncOutput] {
        let announcedBefore = sessions[id]?.announced.map(\.zone) ?? []
        let told = sessions[id]?.purgedAnnounced ?? [:]
        var tell = told
        if let from {
            tell = [:]
            for a in announced where local[a.zone] == nil {
                guard let inc = purged[a.zone], inc == a.incarnation else { continue }
                if !a.isDeleted || from == .hello || told[a.zone] == inc { tell[a.zone] = inc }
            }
        }
        let tellRemoved = sessions[id]?.tellRemoved ?? []
        guard tell != told || !tellRemoved.isSubset(of: announcedBefore) else { return [] }
        sessions[id]?.purgedAnnounced = tell
        let current = await announcedZones(for: id)
        guard current != sessions[id]?.announced else { return [] }
        sessions[id]?.announced = current
        return [.send(Frame(type: .zones, payload: ZonesMessage(zones: current).encoded()))]
    }

    /// Subscribes on `id` to every zone of `peerZones` (what the peer announced, of the zones
    /// held here) live on both sides in the same incarnation that this connection does not yet
    /// follow, and drops the subscriptions of the others. Only a device that may write the zone
    /// is followed: a read-only member's changes would be refused (Spec/security.md §6.2).
    func follow(
        _ peerZones: [RecordZone.ID: ZoneAnnouncement], local: [RecordZone.ID: ZoneAnnouncement],
        on id: ConnectionID
    ) async -> [SyncOutput] {
        var out = [SyncOutput]()
        for (zone, theirs) in peerZones.sorted(by: { $0.key < $1.key }) where configuration.zones.allows(zone) {
            guard let mine = local[zone], !mine.isDeleted, !theirs.isDeleted, mine.incarnation == theirs.incarnation,
                await access(id, zone) >= .write
            else {
                if sessions[id]?.inbound.removeValue(forKey: zone) != nil { liveReferences.forget(zone, on: id) }
                continue
            }
            if sessions[id]?.inbound[zone]?.incarnation == mine.incarnation { continue }
            out += await subscribe(to: zone, incarnation: mine.incarnation, on: id)
        }
        return out
    }

    /// Brings a zone in line with a peer's announcement that carries no share: only a zone without
    /// a share held here follows one (deleted, created, or moved to the larger incarnation), and a
    /// node with a device key creates no zone from one (Spec/security.md §6.3). `mine` is the zone
    /// as held here (a purged one as deleted), `heldBefore` whether it was held before this message.
    func adoptUnsigned(_ a: ZoneAnnouncement, mine: ZoneAnnouncement?, heldBefore: Bool, on id: ConnectionID)
        async throws(SyncFailure)
    {
        // A node with a device key takes a new zone only from its owner's share: an unsigned
        // announcement of a zone not held here creates nothing, so no trusted device can plant
        // a zone here, nor a name another device's share will later claim (Spec/security.md
        // §6.3); and nothing of it is looked up or kept.
        guard mine != nil || signer == nil else { return }
        if await heldShare(a.zone) != nil {
            if let m = mine, m.isDeleted != a.isDeleted || m.incarnation != a.incarnation {
                statistics.unsignedZoneChangesIgnored &+= 1
                logger.trace("\(nodeID.short) ignored an unsigned announcement of shared zone \(a.zone) on \(id): \(a)")
            }
            return
        }
        do throws(ShoalError) {
            if a.isDeleted {
                if let m = mine, !m.isDeleted, m.incarnation == a.incarnation {
                    try await store.deleteZone(a.zone)
                    knowledgeCache[a.zone] = nil
                    restartPending = true
                }
            } else if signer != nil, mine?.isDeleted == true {
                // Nor does it re-create a deleted zone from one.
                return
            } else if mine == nil || (mine?.isDeleted == true && mine?.incarnation != a.incarnation) {
                // New to us, or re-created after a deletion we hold: adopt the peer's incarnation.
                let scope: DatabaseScope = a.zone.owner == RecordZone.ID.defaultOwnerName ? .private : .shared
                try await store.createZone(a.zone, scope: scope, incarnation: a.incarnation)
                if heldBefore { restartPending = true } else { announcePending = true }
            } else if let m = mine, !m.isDeleted, a.incarnation > m.incarnation {
                // Created independently on both nodes: both keep the larger incarnation, and
                // every connection restarts so no batch of the old one is in flight.
                try await store.adoptIncarnation(a.incarnation, for: a.zone)
                knowledgeCache[a.zone] = nil
                restartPending = true
            }
        } catch {
            throw SyncFailure(.internalError, "could not apply the peer's announcement of zone \(a.zone): \(error)")
        }
    }

    /// Subscribes to `zone` on connection `id`: from the position stored for the peer, stating
    /// this node's knowledge (none while a resync from it is unfinished).
    func subscribe(to zone: RecordZone.ID, incarnation: NodeID, on id: ConnectionID) async -> [SyncOutput] {
        guard let peer = sessions[id]?.peer?.node else { return [] }
        sessions[id]?.inbound[zone] = SyncSession.Inbound(incarnation: incarnation)
        // A number the peer gave an earlier subscription to the zone names nothing now.
        let numbers = sessions[id]?.inboundNumbers.filter { $0.value != zone } ?? [:]
        sessions[id]?.inboundNumbers = numbers
        liveReferences.forget(zone, on: id)
        let token = await position(peer: peer, zone: zone, incarnation: incarnation)
        let key = PeerZone(peer: peer, zone: zone)
        // After a sparse record could not be rebuilt, state no knowledge once: the peer then
        // sends whole versions from the stored position (Spec/replication.md §3.5.1).
        var k = wholeVersionsNeeded.remove(key) != nil ? VersionVector() : await knowledge(of: zone)
        var from = token
        // A resync cut short starts over: everything, from the beginning (§3.5.2).
        if (try? await store.syncValue(.resync(peer: peer, zone: zone))) != nil {
            k = VersionVector()
            from = nil
            resyncs[key] = []
        }
        sessions[id]?.inbound[zone]?.statedKnowledge = k
        sessions[id]?.inbound[zone]?.vectorReference = k
        // A server that takes numbers in `subscribe` may name the subscription from its first
        // batch, stating that batch's token as a change to the one presented here (§3.5.4).
        var number: UInt64? = nil
        if let s = sessions[id], let caps = s.peer?.capabilities, caps & Capability.numbersInSubscribe != 0 {
            let n = s.nextOwnSubscriptionNumber
            number = n
            sessions[id]?.nextOwnSubscriptionNumber = n &+ 1
            sessions[id]?.inbound[zone]?.number = n
            sessions[id]?.inboundNumbers[n] = zone
            sessions[id]?.inbound[zone]?.lastToken = from?.bytes ?? []
            publishLiveReference(of: zone, on: id)
        }
        // Where the logs held here end, so the server's ranges join them (Spec/authenticated-writes.md §4).
        var heads: [NodeID: UInt64]? = nil
        if number != nil, authenticatesWrites(on: id) { heads = (try? await store.logHeads(in: zone)) ?? [:] }
        let m = SubscribeMessage(
            zone: zone, incarnation: incarnation, token: from, knowledge: k, window: configuration.window,
            number: number,
            writerLogHeads: heads)
        var out: [SyncOutput] = [.send(Frame(type: .subscribe, payload: m.encoded()))]
        // The new server hears at once which peers deliver the zone here already.
        out += announceUpstreams(of: zone, only: id)[id] ?? []
        return out
    }

    /// Announces the current zones to every established peer and subscribes where a new zone is
    /// shared (call after creating a zone locally). Call ``restartConnections(reason:)`` instead
    /// after deleting a zone, so no subscription to it survives.
    public func announceZones() async -> [ConnectionID: [SyncOutput]] {
        var result = [ConnectionID: [SyncOutput]]()
        let all = await announcedZones()
        for id in sessions.keys.sorted(by: { $0.rawValue < $1.rawValue }) where sessions[id]?.phase == .established {
            let zones = await announcedZones(for: id, of: all)
            sessions[id]?.announced = zones
            var out: [SyncOutput] = [.send(Frame(type: .zones, payload: ZonesMessage(zones: zones).encoded()))]
            do throws(SyncFailure) {
                out += try await reconcile([], on: id, from: nil)
            } catch {
                out.append(.close(ErrorMessage(code: error.code.name, message: error.message)))
            }
            // Subscriptions the peer holds on zones deleted here end.
            for zone in sessions[id]?.outbound.keys.map({ $0 }) ?? []
            where !zones.contains(where: { $0.zone == zone && !$0.isDeleted }) {
                sessions[id]?.outbound[zone] = nil
            }
            result[id] = out
        }
        if restartPending {
            restartPending = false
            return restartAll(reason: "zones changed on node \(nodeID.short); reconnect to exchange them again")
        }
        return result
    }

    /// Closes every connection with a goodbye (after a local zone deletion, or before shutdown).
    public func restartConnections(reason: String) -> [ConnectionID: [SyncOutput]] {
        restartAll(reason: reason)
    }
}

/// A reason to close a connection: a code for the error frame and a message for both logs.
struct SyncFailure: Error {
    /// What went wrong, as the `error` message a peer is sent names it.
    let code: ShoalError.Code
    /// What was wrong, naming the input, the limit and the fix.
    let message: String
    init(_ code: ShoalError.Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// Holds a value until ``clear()`` drops it (on whichever thread calls it).
private final class ReleaseBox<T: Sendable>: Sendable {
    private let value: Mutex<T?>
    init(_ value: consuming T) { self.value = Mutex(value) }
    func clear() { _ = value.withLock { v in v.take() } }
}
