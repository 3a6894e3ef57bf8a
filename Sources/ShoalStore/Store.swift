// Store: a node's local replica — one SQLite database holding zones, records, change log and tokens.

public import ShoalWire
import CSQLite
import CShoalThread
import Synchronization
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A node's local replica of its zones: records with CloudKit's semantics, a change log with
/// change tokens, replication entry points, queries and subscriptions, in one SQLite database.
///
/// A store is an actor owning one SQLite connection; every method is isolated to it, every value
/// crossing its boundary is `Sendable`. Open one with ``open(directory:configuration:)``:
///
/// ```swift
/// let store = try await Store.open(directory: "/var/lib/shoal")
/// try await store.createZone(RecordZone.ID(name: "notes"))
/// var note = Record(recordType: "Note", id: Record.ID(name: "n1", zone: RecordZone.ID(name: "notes")))
/// note["title"] = .string("Hello")
/// let saved = try await store.save(note)
/// ```
///
/// Durability: a method that returned has committed its transaction with `synchronous=FULL` in
/// WAL mode, so its changes survive `kill -9` and power loss. What replication writes (versions
/// applied from peers, positions, acknowledgements) commits with
/// ``Configuration/replicationSynchronous`` (`NORMAL` by default): it survives `kill -9`, and what
/// a power cut takes the node fetches again (see `Spec/store.md` §2).
public actor Store {
    /// How a store is opened.
    public struct Configuration: Sendable {
        /// How SQLite syncs commits to disk.
        public enum Synchronous: String, Sendable {
            /// fsync the WAL at every commit: survives process kill, OS crash and power loss.
            case full = "FULL"
            /// fsync only at checkpoints: survives process kill, may lose the last commits on
            /// power loss or OS crash. Faster for bulk loads.
            case normal = "NORMAL"
        }

        /// Commit durability of this node's own writes (saves, deletes, zone changes); default
        /// ``Synchronous/full``.
        public var synchronous: Synchronous = .full
        /// Commit durability of what replication writes: versions applied from peers
        /// (``Store/apply(remoteChanges:syncState:)``), replication positions and knowledge
        /// (``Store/setSyncValue(_:_:)``) and peers' acknowledgements. Default
        /// ``Synchronous/normal``: all of it survives a killed process; a power cut may lose the
        /// last of it, which the node then fetches again, because what it tells peers it holds is
        /// read back from the same database (Spec/store.md §2). Never stronger than
        /// ``synchronous``.
        public var replicationSynchronous: Synchronous = .normal
        /// How long a write waits for another connection's lock before failing with
        /// `requestRateLimited`. Default 5 s.
        public var busyTimeout: Duration = .seconds(5)
        /// Wall-clock milliseconds since 1970, read for every HLC tick; replace it in simulations.
        public var wallClock: @Sendable () -> UInt64 = { UInt64(max(0, Timestamp.now().millisecondsSince1970)) }
        /// Where new node IDs and zone incarnations come from. Default: the system's secure
        /// generator. Simulations pass a seeded source so a seed replays the same run.
        public var newIdentifier: @Sendable () -> NodeID = { NodeID.random() }
        /// How far ahead of our wall clock a remote timestamp may be (``HLC/Clock/maxForwardDrift``).
        public var maxForwardDrift: UInt64 = HLC.Clock.defaultMaxForwardDrift
        /// Largest atomic batch, in items per call; larger atomic batches fail with
        /// `limitExceeded`. Default 50,000.
        public var maxAtomicBatchItems: Int = 50_000
        /// Items per transaction when a non-atomic batch is chunked. Default 2,000.
        public var chunkSize: Int = 2_000
        /// SQLite's page cache for this store's connection, in KiB (`PRAGMA cache_size`).
        /// Default 32 MiB: bulk writes touch several b-trees at once, and a cache that holds
        /// their working set saves re-reading pages from the OS on every transaction.
        public var cacheKibibytes: Int = 32 * 1024
        /// Pending index changes (queued additions and logged removals) that make a write
        /// transaction write them to `field_postings`.
        package var indexLogFlushRows: Int = 50_000
        /// Write-ahead-log pages (4 KiB each) after which a checkpoint copies the log into the
        /// database, on a thread of its own so no commit waits for it; at eight times as many the
        /// committing call checkpoints itself. Default 256 (1 MiB): each checkpoint then writes
        /// little enough that a commit syncing the log meanwhile is not held up behind it
        /// (Spec/store.md §2.2).
        public var checkpointPages: Int = 256
        /// Limits records must meet (CloudKit's by default: 1 MiB records, 255-byte names).
        public var limits: WireLimits = .default
        /// The SQLite VFS every connection of the store opens through (the writer, the
        /// checkpointer, the background reader); nil, the default, is SQLite's. Tests pass a VFS
        /// that injects faults below the store (power cuts, Spec/store.md §2.3).
        package var vfsName: String? = nil
        /// Whether checkpoints run on the checkpointer's thread (the default) or in the committing
        /// call once the log reaches ``checkpointPages``. A simulation that replays a seed event
        /// by event below the store turns it off: no thread of the store's own writes then.
        package var checkpointsInBackground = true

        /// The default configuration.
        public init() {}
    }

    let db: SQLiteDatabase
    /// The write path's statements, held by the store.
    let writes: WriteStatements
    let configuration: Configuration
    /// A new random identifier from the store's generator (``Configuration/newIdentifier``): what
    /// a new zone's incarnation is made of.
    package nonisolated func newIdentifier() -> NodeID { configuration.newIdentifier() }
    /// This node's identity, random when the store was created.
    public nonisolated let nodeID: NodeID
    /// This open's incarnation: names its change sequence numbers inside tokens. New at every
    /// open: a power cut may undo the last sequence numbers an earlier open handed out in tokens
    /// (replication commits `NORMAL`), and the sequence then gives them to other changes, so a
    /// token of an earlier open resumes by its vector, never by its sequence (Spec/store.md §5).
    public nonisolated let incarnation: NodeID
    /// The incarnation of the database's zone list (for database change tokens).
    nonisolated let databaseIncarnation: NodeID
    var clock: HLC.Clock
    var zones: [RecordZone.ID: ZoneState] = [:]
    var databaseSequence: UInt64
    /// The database sequence of the newest zone deletion purged: older database tokens expire.
    var zonePurgeSequence: UInt64
    /// Declared indexes and their IDs.
    var indexes: [IndexKey: Int64] = [:] {
        didSet { indexedFieldsByZone = Self.fieldsByZone(indexes) }
    }
    /// ``indexes`` as zone → record type → fields, kept in step by `indexes.didSet`.
    var indexedFieldsByZone: [RecordZone.ID: [String: [IndexedField]]] = [:]
    let notifier = Notifier()
    /// Conflict resolvers by zone, and the listeners to conflict events.
    let conflicts = ConflictCenter()
    var subscriptions: [String: Subscription] = [:]
    /// Rows in `field_index_log` (declared-index removals not yet applied to `field_postings`),
    /// queued ones included.
    var indexLogCount = 0
    /// Declared-index additions not yet written to `field_postings`; after a reopening, those
    /// derived from the records written since `index_progress` (``flushIndexLog()``).
    var indexAdds: [IndexChange] = []
    /// Additions a flush in the open transaction has written (kept until it commits, so a
    /// rollback can queue them again).
    var txFlushedAdds: [IndexChange] = []
    /// Clock and index-log rows the open transaction has queued but not inserted yet.
    var pending = PendingRows()
    /// Checkpoints of peers' own entries kept implied that those entries did not hash to,
    /// dropped when the entries were proven (``proveImplied(of:in:)``), since the store opened.
    package var impliedCheckpointsDropped = 0
    /// Whether the open transaction reports every changed record to the notifier, or only the
    /// zones it touched (no query or zone subscription has a listener).
    var txRecordsWanted = false
    /// Zones the open transaction has reported to the notifier.
    var txZonesNoted: [RecordZone.ID] = []
    /// The `PRAGMA synchronous` the connection is set to (set per transaction by its kind).
    var connectionSynchronous: Configuration.Synchronous
    /// How many records the last query decoded (tests check that indexes avoid scans).
    package var lastQueryDecodeCount = 0
    /// Removals from `asset_refs` since opening (``assetReferenceRemovals``), readable without
    /// the actor.
    let assetReferenceRemovalCount = Atomic<UInt64>(0)

    /// Opens the store in `directory`, creating the directory and the store if needed.
    ///
    /// A new store gets a new random ``nodeID``; a store copied from elsewhere keeps its ID, so do
    /// not run two copies of one data directory.
    /// - Throws: `internalError` when the directory or database cannot be opened or a stored
    ///   row does not decode.
    public static func open(directory: String, configuration: Configuration = Configuration()) throws(ShoalError)
        -> Store
    {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .internalError(
                "cannot create the store directory \(directory): \(error); check the path and its permissions")
        }
        let path = directory.hasSuffix("/") ? directory + "store.sqlite" : directory + "/store.sqlite"
        let ms = configuration.busyTimeout.components
        let timeout = Int32(clamping: ms.seconds * 1000 + ms.attoseconds / 1_000_000_000_000_000)
        let db = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: timeout, vfs: configuration.vfsName)
        try Schema.create(
            db, synchronous: configuration.synchronous, cacheKibibytes: configuration.cacheKibibytes,
            limits: configuration.limits)
        let threshold = Int32(clamping: configuration.checkpointPages)
        db.checkpointInBackground(
            threshold: threshold,
            hardLimit: configuration.checkpointsInBackground
                ? Int32(clamping: min(configuration.checkpointPages, Int(Int32.max) / 8) * 8) : threshold)
        let meta = try Schema.loadOrCreateMeta(db, newIdentifier: configuration.newIdentifier)
        return try Store(db: db, configuration: configuration, meta: meta)
    }

    init(db: SQLiteDatabase, configuration: Configuration, meta: Schema.Meta) throws(ShoalError) {
        self.db = db
        self.writes = try WriteStatements(db)
        self.configuration = configuration
        self.connectionSynchronous = configuration.synchronous
        self.nodeID = meta.nodeID
        self.incarnation = configuration.newIdentifier()
        self.databaseIncarnation = meta.databaseIncarnation
        self.databaseSequence = meta.databaseSequence
        self.zonePurgeSequence = meta.zonePurgeSequence
        self.clock = HLC.Clock(last: meta.clock, maxForwardDrift: configuration.maxForwardDrift)
        let loaded = try ZoneState.loadAll(db)
        for z in loaded {
            zones[z.id] = z
            // Never issue a timestamp at or below one of ours already stored.
            let own = z.vector[meta.nodeID]
            if own > clock.last { clock = HLC.Clock(last: own, maxForwardDrift: configuration.maxForwardDrift) }
        }
        indexes = try IndexKey.loadAll(db)
        indexedFieldsByZone = Self.fieldsByZone(indexes)
        let logged = try db.statement("SELECT count(*) FROM field_index_log")
        indexLogCount = try logged.step() ? logged.int(0) : 0
        logged.reset()
        indexAdds = try Self.pendingAdditions(
            db, zones: zones, fields: indexedFieldsByZone,
            limits: configuration.limits, order: 2 * indexLogCount)
        subscriptions = try Subscription.loadAll(db)
        notifier.setWantsRecords(subscriptions.values.contains { if case .database = $0.kind { false } else { true } })
    }

    /// The last HLC timestamp this node issued or observed (persisted with every write).
    public var lastTimestamp: HLC { clock.last }

    /// A new dot for a local change.
    func tick() -> Dot {
        Dot(node: nodeID, hlc: clock.tick(wallMilliseconds: configuration.wallClock()))
    }

    /// Persists the clock and database sequence inside the current transaction.
    func persistClock() throws(ShoalError) {
        try Schema.setMeta(db, "clock", Int64(bitPattern: clock.last.rawValue))
        try Schema.setMeta(db, "db_seq", Int64(bitPattern: databaseSequence))
    }

    /// Tells the notifier a record changed — per record only when the transaction wants records
    /// (a lock per record otherwise buys nothing), else once per zone.
    func noteRecordChanged(zone: RecordZone.ID, old: Record?, new: Record) {
        if !txRecordsWanted {
            if txZonesNoted.contains(zone) { return }
            txZonesNoted.append(zone)
        }
        notifier.recordChanged(zone: zone, old: old, new: new)
    }

    /// Runs `body` in one write transaction; zone states and the clock roll back with it.
    ///
    /// `replication` marks what replication writes (peers' versions, positions, acknowledgements):
    /// it commits with ``Configuration/replicationSynchronous``, everything else with
    /// ``Configuration/synchronous``. SQLite's WAL keeps commit order across a power cut (it
    /// recovers a prefix of the log), and a `FULL` commit syncs every commit before it too.
    func writeTransaction<T>(replication: Bool = false, _ body: () throws(ShoalError) -> T) throws(ShoalError) -> T {
        try useSynchronous(replication: replication)
        // A commit that syncs asks bulk asset writes in the process to hold back their next
        // piece until it is done (Spec/assets.md §3.3), so its fsync does not queue behind them.
        let syncs = connectionSynchronous == .full
        if syncs { shoal_record_commit_begin() }
        defer { if syncs { shoal_record_commit_end() } }
        let savedZones = zones
        let savedSeq = databaseSequence
        let savedIndexes = indexes
        let savedIndexLog = indexLogCount
        let savedIndexAdds = indexAdds.count
        txFlushedAdds = []
        txRecordsWanted = notifier.beginTransaction()
        conflicts.begin()
        txZonesNoted.removeAll(keepingCapacity: true)
        do {
            let result = try db.transaction { () throws(ShoalError) -> T in
                let r = try body()
                try insertPendingRows()
                if indexLogCount + indexAdds.count >= configuration.indexLogFlushRows { try flushIndexLog() }
                try persistClock()
                return r
            }
            txFlushedAdds = []
            notifier.commit(
                subscriptions: Array(subscriptions.values), before: savedZones, after: zones,
                storeIncarnation: incarnation, databaseIncarnation: databaseIncarnation,
                databaseSequenceBefore: savedSeq)
            conflicts.commit()
            return result
        } catch {
            zones = savedZones
            databaseSequence = savedSeq
            indexes = savedIndexes
            indexLogCount = savedIndexLog
            if !txFlushedAdds.isEmpty {
                indexAdds = Array(txFlushedAdds.prefix(savedIndexAdds))
                txFlushedAdds = []
            } else if indexAdds.count > savedIndexAdds {
                indexAdds.removeSubrange(savedIndexAdds...)
            }
            discardPendingRows()
            notifier.rollback()
            conflicts.rollback()
            throw error
        }
    }

    /// Sets the connection's `PRAGMA synchronous` for the next commit (a no-op when it already is).
    func useSynchronous(replication: Bool) throws(ShoalError) {
        let wanted: Configuration.Synchronous =
            replication && configuration.synchronous == .full
            ? configuration.replicationSynchronous : configuration.synchronous
        guard wanted != connectionSynchronous else { return }
        try db.execute("PRAGMA synchronous=\(wanted.rawValue)")
        connectionSynchronous = wanted
    }

    /// The connection's `PRAGMA synchronous` as SQLite reports it (1 NORMAL, 2 FULL), for tests of
    /// which writes commit how.
    package func sqliteSynchronous() throws(ShoalError) -> Int {
        let s = try db.statement("PRAGMA synchronous")
        defer { s.reset() }
        return try s.step() ? s.int(0) : -1
    }

    /// Checkpoints the background checkpointer completed (tests check it keeps the log short).
    package var backgroundCheckpoints: Int { db.checkpointer?.completedCheckpoints ?? 0 }
}
