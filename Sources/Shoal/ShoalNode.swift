// ShoalNode: the façade a program imports to run a node in-process — store, replication, TCP.

@_exported public import ShoalWire
@_exported public import ShoalStore
@_exported public import ShoalSync
@_exported public import ShoalNet
@_exported public import ShoalAssets
package import ShoalTrust
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A Shoal node: a local replica in a data directory that replicates its zones with peers.
///
/// ```swift
/// import Shoal
///
/// let node = try await ShoalNode.open(directory: "/var/lib/shoal")
/// print(node.deviceID)   // the other device trusts this ID
/// try await node.trustDevice(try DeviceID(text: otherDeviceID), name: "laptop", address: "192.168.1.20:7400")
/// try await node.listen(host: "0.0.0.0", port: 7400)
///
/// let notes = RecordZone.ID(name: "notes")
/// try await node.createZone(notes)                  // owned by this device
/// try await node.shareZone(notes, with: try DeviceID(text: otherDeviceID), role: .readWrite)
/// var note = Record(recordType: "Note", id: Record.ID(name: "groceries", zone: notes))
/// note["text"] = .string("milk, eggs")
/// let saved = try await node.save(note)
/// ```
///
/// Peers connect over mutual TLS and must be trusted devices (``trustDevice(_:name:address:)``),
/// and learn only of the zones shared with them (``shareZone(_:with:role:)``);
/// the node writes locally whether or not peers are reachable; replication catches up when they
/// are. Everything the store offers is on ``store``; the common calls are mirrored here.
public actor ShoalNode {
    /// The local replica.
    public nonisolated let store: Store
    /// The replication engine.
    public nonisolated let sync: SyncNode
    /// The asset store: content-addressed chunks under the data directory's `assets/`.
    public nonisolated let assets: AssetStore
    /// The asset store as the asset lane sees it (what is being received, for progress).
    nonisolated let lane: AssetStoreProvider
    /// This node's ID.
    public nonisolated var nodeID: NodeID { store.nodeID }
    /// This device's key and certificate (`identity/` in the data directory).
    package nonisolated let identity: DeviceIdentity
    /// This device's ID: the SHA-256 of its certificate's public key, kept in the data
    /// directory's `identity/` folder (Spec/security.md "Device identity"). Peers will pin it;
    /// its text form (`description`) is what `shoal id` prints and users compare.
    public nonisolated var deviceID: DeviceID { identity.deviceID }
    /// The TLS contexts made from ``identity``.
    nonisolated let tls: PeerTLS
    /// The trusted devices, as kept in the store.
    var devices: [TrustedDevice]
    /// What the asset garbage collections since the node opened removed (``collectAssetGarbage(dryRun:progress:)``).
    package private(set) var garbageCollected = GarbageCollectionTotals()

    /// The transport settings the node was opened with (timeouts, frame options, asset rate caps).
    public nonisolated let networkConfiguration: NetworkConfiguration
    var network: NetworkNode
    var listening: [(host: String, port: Int)] = []
    var peerAddresses: [(host: String, port: Int)] = []
    var started = false

    /// Opens (or creates) the node whose data lives in `directory`.
    ///
    /// The directory is made with mode 0700, or set to 0700 when it exists. The device identity
    /// is loaded from its `identity/` folder, or created there when there is none — also for a
    /// directory written before identities existed, whose records and node ID stay as they are.
    /// - Throws: `ShoalError` when the store cannot be opened, or `internalError` when the
    ///   directory cannot be made private or the identity cannot be read or written (the message
    ///   names the file and the fix).
    public static func open(
        directory: String, store storeConfiguration: Store.Configuration = Store.Configuration(),
        sync syncConfiguration: SyncConfiguration = SyncConfiguration(),
        network networkConfiguration: NetworkConfiguration = NetworkConfiguration(),
        assets assetConfiguration: AssetStore.Configuration = AssetStore.Configuration()
    ) async throws(ShoalError) -> ShoalNode {
        try makePrivate(directory)
        let store = try Store.open(directory: directory, configuration: storeConfiguration)
        let identity: DeviceIdentity
        do {
            identity = try DeviceIdentity.loadOrCreate(in: directory)
        } catch {
            throw ShoalError.internalError("the device identity of \(directory): \(error.detail)")
        }
        let assets: AssetStore
        do {
            assets = try AssetStore.open(directory: directory + "/assets", configuration: assetConfiguration)
        } catch {
            throw ShoalError.internalError("cannot open the asset store in \(directory)/assets: \(error)")
        }
        let tls: PeerTLS
        do {
            tls = try PeerTLS(identity: identity)
        } catch {
            throw ShoalError.internalError("the device identity of \(directory) cannot be used for TLS: \(error)")
        }
        let devices = try await loadTrustedDevices(from: store)
        let lane = AssetStoreProvider(store: assets)
        let sync = SyncNode(
            store: store, configuration: syncConfiguration, assets: lane,
            signer: ShareSigner(privateKey: identity.privateKey))
        return ShoalNode(
            store: store, identity: identity, tls: tls, devices: devices, sync: sync, assets: assets, lane: lane,
            network: networkConfiguration)
    }

    /// Makes the data directory (and any missing parents) with mode 0700, or sets an existing
    /// one to 0700: it holds the private key and every record.
    static func makePrivate(_ directory: String) throws(ShoalError) {
        if !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw ShoalError.internalError("cannot create the data directory \(directory): \(error)")
            }
        }
        guard chmod(directory, 0o700) == 0 else {
            throw ShoalError.internalError(
                "cannot set the data directory \(directory) to mode 0700 (\(String(cString: strerror(errno)))); it must belong to the user running Shoal"
            )
        }
    }

    init(
        store: Store, identity: DeviceIdentity, tls: PeerTLS, devices: [TrustedDevice], sync: SyncNode,
        assets: AssetStore, lane: AssetStoreProvider,
        network: NetworkConfiguration
    ) {
        self.store = store
        self.identity = identity
        self.tls = tls
        self.devices = devices
        self.sync = sync
        self.assets = assets
        self.lane = lane
        self.networkConfiguration = network
        self.network = NetworkNode(sync: sync, tls: tls, trusting: Set(devices.map(\.device)), configuration: network)
    }

    // MARK: Network

    /// Accepts peers on `host:port` (port 0 picks a free port) and returns the port bound; only
    /// trusted devices get past the TLS handshake. Also dials the trusted devices' addresses.
    /// - Throws: `ShoalError` `networkFailure` when the address cannot be bound (its
    ///   `underlyingError` is the transport's).
    @discardableResult
    public func listen(host: String, port: Int) async throws(ShoalError) -> Int {
        let bound: Int
        do {
            bound = try await network.listen(host: host, port: port).port ?? port
        } catch {
            throw .network(error, binding: "\(host):\(port)")
        }
        listening.append((host, bound))
        try await startIfNeeded()
        await network.startDiscovery(listening: listening)
        return bound
    }

    /// Replicates with the peer at `host:port`, redialling it whenever the connection ends. The
    /// device answering there must be trusted (``trustDevice(_:name:address:)``), or the
    /// connection closes after the TLS handshake.
    public func connect(to host: String, port: Int) async {
        peerAddresses.append((host, port))
        await network.addPeer(host: host, port: port)
        try? await startIfNeeded()
    }

    func startIfNeeded() async throws(ShoalError) {
        guard !started else { return }
        started = true
        await dialTrustedDevices()
        do {
            try await network.start()
        } catch {
            throw .wrapping(SendableDescription("\(error)"), .networkFailure, "cannot start replication: \(error)")
        }
    }

    /// Stops all replication (connections close, no listening, no dialling); local reads and
    /// writes go on. ``goOnline()`` resumes.
    public func goOffline() async {
        await network.shutdown()
        started = false
    }

    /// Listens and dials again after ``goOffline()``, on the same addresses.
    /// - Throws: `ShoalError` `networkFailure` when a listening address cannot be bound again.
    public func goOnline() async throws(ShoalError) {
        network = NetworkNode(
            sync: sync, tls: tls, trusting: Set(devices.map(\.device)), configuration: networkConfiguration)
        let listen = listening, peers = peerAddresses
        listening = []
        for l in listen {
            do {
                _ = try await network.listen(host: l.host, port: l.port)
            } catch {
                throw .network(error, binding: "\(l.host):\(l.port)")
            }
            listening.append(l)
        }
        for p in peers { await network.addPeer(host: p.host, port: p.port) }
        try await startIfNeeded()
        await network.startDiscovery(listening: listening)
    }

    /// The dialled peers: address, whether connected, node ID, last error.
    public func peers() async -> [NetworkNode.PeerState] { await network.peers() }

    /// Bytes moved over the sockets since the node went online.
    public func traffic() async -> TrafficCounter { network.traffic }

    /// Open connections, dialled and accepted.
    public func connectionCount() async -> Int { await network.connectionCount }

    /// The devices with an open connection, dialled or accepted.
    public func connectedDevices() async -> Set<DeviceID> { await network.connectedDevices }

    /// Accepted connections this node closed at once since it went online: `refused` for a limit
    /// (`NetworkConfiguration.maxConnectionsPerAddress`, or every place of
    /// `NetworkConfiguration.maxInboundConnections` held by a trusted device), and `evicted`,
    /// which gave their places to newer ones before showing a trusted device (Spec/replication.md §2).
    public func inboundConnectionsClosed() async -> (refused: Int, evicted: Int) {
        (await network.refusedConnections, await network.evictedConnections)
    }

    /// Closes every connection with a goodbye and stops listening; the store stays open.
    public func shutdown() async {
        await network.shutdown()
    }

    // MARK: Zones and records

    /// Creates a zone owned by this device (or returns the existing one). No peer learns of it
    /// until it is shared with them (``shareZone(_:with:role:)``).
    /// - Throws: `ShoalError` `invalidArguments` for a bad name, `permissionFailure` for a
    ///   zone another device owns and deleted.
    @discardableResult
    public func createZone(_ id: RecordZone.ID) async throws(ShoalError) -> ZoneInfo {
        try await sync.createZone(id)
    }

    /// Deletes a zone and its records on this node. When this device owns the zone, its members
    /// delete it too; a member's deletion stays on this node.
    /// - Throws: `ShoalError` `zoneNotFound`, `permissionFailure` for a zone shared with this
    ///   device read-only.
    public func deleteZone(_ id: RecordZone.ID) async throws(ShoalError) {
        try await sync.deleteZone(id)
    }

    /// The live zones.
    public func zones() async -> [ZoneInfo] { await store.zones() }

    /// The live zones of one database (CloudKit's database scopes): `.private` for the zones
    /// this device created, `.shared` for those other devices own and share with it.
    public func zones(in scope: DatabaseScope) async -> [ZoneInfo] { await store.zones().filter { $0.scope == scope } }

    /// Saves a record with CloudKit's save policies.
    /// - Throws: `ShoalError` (`serverRecordChanged` with the three records, `zoneNotFound`, …).
    @discardableResult
    public func save(_ record: Record, policy: SavePolicy = .ifServerRecordUnchanged) async throws(ShoalError) -> Record
    {
        try await store.save(record, policy: policy)
    }

    /// The record with `id`.
    /// - Throws: `ShoalError` `unknownItem` when there is none.
    public func record(for id: Record.ID, desiredKeys: [String]? = nil) async throws(ShoalError) -> Record {
        try await store.record(for: id, desiredKeys: desiredKeys)
    }

    /// Deletes a record (a tombstone replicates the deletion).
    /// - Throws: `ShoalError` `unknownItem`.
    public func delete(_ id: Record.ID) async throws(ShoalError) {
        try await store.delete(id)
    }

    /// The first page of the records of `zone` matching `query`: at most `resultsLimit` records,
    /// and a cursor for the next page when there is one (CloudKit's `CKQueryOperation`).
    /// - Parameters:
    ///   - query: the record type, predicate and sort order.
    ///   - zone: the zone to search.
    ///   - desiredKeys: when given, only these fields of each record are returned.
    ///   - resultsLimit: the most records a page holds.
    /// - Throws: `ShoalError` `zoneNotFound`; `invalidArguments` for a bad query or limit.
    public func records(
        matching query: Query, in zone: RecordZone.ID, desiredKeys: [String]? = nil,
        resultsLimit: Int = 100
    ) async throws(ShoalError) -> QueryResult {
        try await store.records(matching: query, in: zone, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    /// The next page of a query, after the last record of the page that returned `cursor`.
    /// Records changed between pages are neither repeated nor skipped unless their sort values
    /// moved across the cursor. A cursor kept as bytes comes back with
    /// `QueryCursor.init(decoding:)`.
    /// - Throws: as ``records(matching:in:desiredKeys:resultsLimit:)``.
    public func records(
        continuing cursor: QueryCursor, desiredKeys: [String]? = nil,
        resultsLimit: Int = 100
    ) async throws(ShoalError) -> QueryResult {
        try await store.records(continuing: cursor, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    /// Declares an index on `field` of the `recordType` records of `zone`, and builds it: queries
    /// that constrain the field with `==`, `IN`, `CONTAINS`, `BEGINSWITH` or a range then read
    /// only the matching records. Declaring an index that exists does nothing. Indexes are this
    /// node's own; they do not replicate.
    /// - Throws: `ShoalError` `zoneNotFound`; `invalidArguments` for an invalid type or field name.
    public func declareIndex(zone: RecordZone.ID, recordType: String, field: String) async throws(ShoalError) {
        try await store.declareIndex(zone: zone, recordType: recordType, field: field)
    }

    /// What `zone` keeps for deletions: live records, tombstones, the purge horizon, and which
    /// known peers hold tombstones back by not having acknowledged them.
    /// - Throws: `ShoalError` `zoneNotFound`.
    public func tombstoneState(of zone: RecordZone.ID) async throws(ShoalError) -> TombstoneState {
        try await store.tombstoneState(of: zone)
    }

    /// The deleted zones this node still keeps and announces as zone tombstones, each with the
    /// peers its purge waits for (Spec/replication.md §4.1).
    /// - Throws: `ShoalError` `internalError` for a damaged store row.
    public func zoneTombstones() async throws(ShoalError) -> [ZoneTombstone] {
        try await sync.zoneTombstones()
    }

    /// How many purged zones this node remembers, so a peer that comes back with one is told it
    /// was deleted (Spec/replication.md §4.1).
    /// - Throws: `ShoalError` `internalError` if the store fails.
    public func purgedZoneCount() async throws(ShoalError) -> Int {
        try await store.purgedZoneCount()
    }

    /// The changes of `zone` since `token` (all when nil).
    /// - Throws: `ShoalError` `changeTokenExpired` or `zoneNotFound`.
    public func changes(in zone: RecordZone.ID, since token: ChangeToken?, limit: Int = 1_000) async throws(ShoalError)
        -> ZoneChanges
    {
        try await store.changes(in: zone, since: token, limit: limit)
    }

    // MARK: Assets

    /// Saves `record` with the files at `files` (field name → path) stored as its assets.
    ///
    /// The files are chunked into the asset store first and held there until the save commits,
    /// so no record ever points to an asset this node cannot serve, and a concurrent garbage
    /// collection cannot take the chunks in between.
    /// Honours task cancellation between files and before the save: a cancelled save saves
    /// nothing, and the chunks it imported are left to garbage collection.
    /// - Throws: `ShoalError`: `assetFileNotFound`, `assetFileModified`, `limitExceeded` or
    ///   `quotaExceeded` (disk full) before anything is saved; `operationCancelled`; or the
    ///   save's own errors.
    @discardableResult
    public func save(
        _ record: Record, attaching files: [String: String], policy: SavePolicy = .ifServerRecordUnchanged,
        progress: AssetProgressHandler? = nil
    ) async throws(ShoalError) -> Record {
        let pin = await assets.makePin()
        do {
            var r = record
            for (field, path) in files.sorted(by: { $0.key < $1.key }) {
                try Task.checkCancellation()
                r[field] = .asset(try await assets.importFile(at: path, pin: pin, progress: progress))
            }
            try Task.checkCancellation()
            let saved = try await store.save(r, policy: policy)
            await assets.unpin(pin)
            return saved
        } catch {
            await assets.unpin(pin)
            throw .from(error, doing: "saving \(record.id) with files \(files.keys.sorted().joined(separator: ", "))")
        }
    }

    /// Makes `asset` available here: at once when held, else fetched from connected peers
    /// (Spec/replication.md §3.7).
    /// While the node is online it waits for a peer that can serve the asset; cancelling the
    /// calling task ends the wait at once.
    /// - Throws: `ShoalError` `networkUnavailable` at once when the node is offline (never
    ///   started with ``listen(host:port:)`` or ``connect(to:port:)``, or after
    ///   ``goOffline()``) or when no peer is connected when the fetch fails; `assetNotAvailable`
    ///   when no connected peer can serve it (both with `retryAfter`); `operationCancelled`.
    public func fetchAsset(_ asset: Asset) async throws(ShoalError) {
        if (try? assets.isComplete(asset)) == true { return }
        if Task.isCancelled { throw .from(CancellationError(), doing: "fetching \(asset)") }
        guard started else {
            throw .wrapping(
                nil, .networkUnavailable,
                "fetching \(asset): this node is offline, so no peer can serve it; go online (listen, connect(to:port:) or goOnline()) and retry",
                retryAfter: ShoalError.fetchRetryAfter)
        }
        do {
            try Task.checkCancellation()
            try await network.fetchAsset(asset)
        } catch {
            throw .from(error, doing: "fetching \(asset)", connectedPeers: await network.connectionCount)
        }
    }

    /// ``fetchAsset(_:)``, reporting how much of `asset` is here as it arrives: to `progress`,
    /// in order, from a task of its own — at once, then every `interval` (default 100 ms) while
    /// the fetch runs, and once more when it has succeeded (`completedBytes == totalBytes`).
    /// Bytes count when their chunk has been received and verified; chunks this node held
    /// before count from the start. The reports never go backwards.
    /// - Throws: as ``fetchAsset(_:)``; no final report then.
    public func fetchAsset(
        _ asset: Asset, every interval: Duration = .milliseconds(100),
        progress: @escaping AssetProgressHandler
    ) async throws(ShoalError) {
        /// The last report: the whole asset, in its manifest's chunks.
        func done() {
            progress(
                AssetProgress(
                    completedBytes: asset.size, totalBytes: asset.size,
                    chunks: (try? assets.manifest(of: asset).chunks.count) ?? 0))
        }
        if (try? assets.isComplete(asset)) == true { return done() }
        let lane = self.lane
        let reporter = Task {
            var last = AssetProgress(completedBytes: 0, totalBytes: asset.size, chunks: 0)
            progress(last)
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { break }
                // Nothing kept for the asset: before its manifest came, or after it was committed.
                guard let now = lane.progress(of: asset), now.completedBytes > last.completedBytes else { continue }
                last = now
                progress(now)
            }
        }
        // The reporter has stopped before the fetch's outcome is reported or thrown.
        do {
            try await fetchAsset(asset)
        } catch {
            reporter.cancel()
            await reporter.value
            throw error
        }
        reporter.cancel()
        await reporter.value
        done()
    }

    /// The bytes of `asset`, fetched first when this node lacks them: an `AsyncSequence` of
    /// buffers, one chunk in memory at a time.
    /// - Throws: `ShoalError`, as ``fetchAsset(_:)`` or from reading the asset store; iterating
    ///   the bytes throws `ShoalError` too.
    public func contents(of asset: Asset) async throws(ShoalError) -> AssetBytes {
        try await fetchAsset(asset)
        do {
            return AssetBytes(contents: try assets.contents(of: asset), asset: asset)
        } catch {
            throw .from(error, doing: "reading \(asset)")
        }
    }

    /// How far ``collectAssetGarbage(dryRun:progress:)`` is: zones whose records have been read
    /// for the assets they reference, of how many.
    public struct GarbageCollectionProgress: Sendable, Hashable {
        /// Zones read so far.
        public var zonesRead: Int
        /// Zones to read.
        public var zones: Int
        /// Records read so far, over every zone.
        public var recordsRead: Int
    }

    /// Removes asset chunks no record of any zone references (live versions and tombstones).
    /// Safe against concurrent saves: a save holds its chunks from import to commit. With
    /// `dryRun`, removes nothing and reports what it would remove. `progress`, when given, is
    /// called after each page of records read (on the calling task). Honours task cancellation
    /// while reading the records: a cancelled collection removes nothing.
    /// - Throws: `ShoalError`: `operationCancelled`, errors reading the records, or removing
    ///   files (`quotaExceeded`, `internalError`).
    public func collectAssetGarbage(
        dryRun: Bool = false,
        progress: (@Sendable (GarbageCollectionProgress) -> Void)? = nil
    ) async throws(ShoalError) -> GarbageCollectionReport {
        var keep = Set<ContentHash>()
        // What is pinned from now on (a save with files committing while the zones are read, a
        // fetch) is kept even if its pin is released before the removal.
        await assets.beginCollection()
        let zones = await store.zones()
        var state = GarbageCollectionProgress(zonesRead: 0, zones: zones.count, recordsRead: 0)
        do {
            for z in zones {
                var token: ChangeToken? = nil
                while true {
                    try Task.checkCancellation()
                    let page = try await store.changes(in: z.id, since: token, limit: 2_000)
                    for r in page.records {
                        for f in r.fields {
                            switch f.value {
                            case .asset(let a)?: keep.insert(a.hash)
                            case .list(.asset(let list))?: for a in list { keep.insert(a.hash) }
                            default: break
                            }
                        }
                    }
                    state.recordsRead += page.records.count
                    token = page.token
                    if !page.moreComing { break }
                    progress?(state)
                }
                state.zonesRead += 1
                progress?(state)
            }
            try Task.checkCancellation()
            let report = try await assets.collectGarbage(keeping: keep, dryRun: dryRun)
            if !dryRun { garbageCollected.add(report) }
            return report
        } catch {
            await assets.endCollection()
            throw .from(
                error, doing: dryRun ? "finding unreferenced asset chunks" : "collecting unreferenced asset chunks")
        }
    }

    /// A stable hash of what users see in `zone`, to compare nodes.
    /// - Throws: `ShoalError` `zoneNotFound`.
    public func digest(of zone: RecordZone.ID) async throws(ShoalError) -> ZoneDigest {
        try await store.digest(of: zone)
    }
}
