// ShoalNode: the façade a program imports to run a node in-process — store, replication, TCP.

@_exported public import ShoalWire
@_exported public import ShoalStore
@_exported public import ShoalSync
@_exported public import ShoalNet

/// A Shoal node: a local replica in a data directory that replicates its zones with peers.
///
/// ```swift
/// import Shoal
///
/// let node = try await ShoalNode.open(directory: "/var/lib/shoal")
/// try await node.listen(host: "0.0.0.0", port: 7400)
/// await node.connect(to: "192.168.1.20", port: 7400)
///
/// let notes = RecordZone.ID(name: "notes")
/// try await node.createZone(notes)
/// var note = Record(recordType: "Note", id: Record.ID(name: "groceries", zone: notes))
/// note["text"] = .string("milk, eggs")
/// let saved = try await node.save(note)
/// ```
///
/// The node writes locally whether or not peers are reachable; replication catches up when they
/// are. Everything the store offers is on ``store``; the common calls are mirrored here.
public actor ShoalNode {
    /// The local replica.
    public nonisolated let store: Store
    /// The replication engine.
    public nonisolated let sync: SyncNode
    /// This node's ID.
    public nonisolated var nodeID: NodeID { store.nodeID }

    let networkConfiguration: NetworkConfiguration
    var network: NetworkNode
    var listening: [(host: String, port: Int)] = []
    var peerAddresses: [(host: String, port: Int)] = []
    var started = false

    /// Opens (or creates) the node whose data lives in `directory`.
    /// - Throws: ``ShoalError`` when the store cannot be opened.
    public static func open(directory: String, store storeConfiguration: Store.Configuration = Store.Configuration(),
                            sync syncConfiguration: SyncConfiguration = SyncConfiguration(),
                            network networkConfiguration: NetworkConfiguration = NetworkConfiguration()) async throws(ShoalError) -> ShoalNode {
        let store = try await Store.open(directory: directory, configuration: storeConfiguration)
        return ShoalNode(store: store, sync: SyncNode(store: store, configuration: syncConfiguration), network: networkConfiguration)
    }

    init(store: Store, sync: SyncNode, network: NetworkConfiguration) {
        self.store = store
        self.sync = sync
        self.networkConfiguration = network
        self.network = NetworkNode(sync: sync, configuration: network)
    }

    // MARK: Network

    /// Accepts peers on `host:port` (port 0 picks a free port) and returns the port bound.
    /// - Throws: when the address cannot be bound.
    @discardableResult
    public func listen(host: String, port: Int) async throws -> Int {
        let address = try await network.listen(host: host, port: port)
        let bound = address.port ?? port
        listening.append((host, bound))
        try await startIfNeeded()
        return bound
    }

    /// Replicates with the peer at `host:port`, redialling it whenever the connection ends.
    public func connect(to host: String, port: Int) async {
        peerAddresses.append((host, port))
        await network.addPeer(host: host, port: port)
        try? await startIfNeeded()
    }

    func startIfNeeded() async throws {
        guard !started else { return }
        started = true
        try await network.start()
    }

    /// Stops all replication (connections close, no listening, no dialling); local reads and
    /// writes go on. ``goOnline()`` resumes.
    public func goOffline() async {
        await network.shutdown()
        started = false
    }

    /// Listens and dials again after ``goOffline()``, on the same addresses.
    /// - Throws: when a listening address cannot be bound again.
    public func goOnline() async throws {
        network = NetworkNode(sync: sync, configuration: networkConfiguration)
        let listen = listening, peers = peerAddresses
        listening = []
        for l in listen { _ = try await network.listen(host: l.host, port: l.port); listening.append(l) }
        for p in peers { await network.addPeer(host: p.host, port: p.port) }
        try await startIfNeeded()
    }

    /// The dialled peers: address, whether connected, node ID, last error.
    public func peers() async -> [NetworkNode.PeerState] { await network.peers() }

    /// Bytes moved over the sockets since the node went online.
    public func traffic() async -> TrafficCounter { network.traffic }

    /// Open connections, dialled and accepted.
    public func connectionCount() async -> Int { await network.connectionCount }

    /// Closes every connection with a goodbye and stops listening; the store stays open.
    public func shutdown() async {
        await network.shutdown()
    }

    // MARK: Zones and records

    /// Creates a zone (or returns the existing one); peers learn of it.
    /// - Throws: ``ShoalError`` `invalidArguments` for a bad name.
    @discardableResult
    public func createZone(_ id: RecordZone.ID) async throws(ShoalError) -> ZoneInfo {
        try await store.createZone(id)
    }

    /// Deletes a zone and its records on this node and, through replication, on its peers.
    /// - Throws: ``ShoalError`` `zoneNotFound`.
    public func deleteZone(_ id: RecordZone.ID) async throws(ShoalError) {
        try await store.deleteZone(id)
    }

    /// The live zones.
    public func zones() async -> [ZoneInfo] { await store.zones() }

    /// Saves a record with CloudKit's save policies.
    /// - Throws: ``ShoalError`` (`serverRecordChanged` with the three records, `zoneNotFound`, …).
    @discardableResult
    public func save(_ record: Record, policy: SavePolicy = .ifServerRecordUnchanged) async throws(ShoalError) -> Record {
        try await store.save(record, policy: policy)
    }

    /// The record with `id`.
    /// - Throws: ``ShoalError`` `unknownItem` when there is none.
    public func record(for id: Record.ID, desiredKeys: [String]? = nil) async throws(ShoalError) -> Record {
        try await store.record(for: id, desiredKeys: desiredKeys)
    }

    /// Deletes a record (a tombstone replicates the deletion).
    /// - Throws: ``ShoalError`` `unknownItem`.
    public func delete(_ id: Record.ID) async throws(ShoalError) {
        try await store.delete(id)
    }

    /// The records of `zone` matching `query`.
    /// - Throws: ``ShoalError`` `invalidArguments` for a bad query.
    public func records(matching query: Query, in zone: RecordZone.ID, resultsLimit: Int = 100) async throws(ShoalError) -> QueryResult {
        try await store.records(matching: query, in: zone, resultsLimit: resultsLimit)
    }

    /// The changes of `zone` since `token` (all when nil).
    /// - Throws: ``ShoalError`` `changeTokenExpired` or `zoneNotFound`.
    public func changes(in zone: RecordZone.ID, since token: ChangeToken?, limit: Int = 1_000) async throws(ShoalError) -> ZoneChanges {
        try await store.changes(in: zone, since: token, limit: limit)
    }

    /// A stable hash of what users see in `zone`, to compare nodes.
    /// - Throws: ``ShoalError`` `zoneNotFound`.
    public func digest(of zone: RecordZone.ID) async throws(ShoalError) -> ZoneDigest {
        try await store.digest(of: zone)
    }
}
