// SyncConfiguration: how a node replicates — batch sizes, window, which zones, limits.

public import ShoalWire
public import Logging

/// How a ``SyncNode`` replicates.
public struct SyncConfiguration: Sendable {
    /// Which zones a node replicates with its peers.
    public enum ZoneFilter: Sendable {
        /// Every zone it holds or a peer offers (the default).
        case all
        /// Only these zones.
        case only(Set<RecordZone.ID>)

        func allows(_ zone: RecordZone.ID) -> Bool {
            switch self {
            case .all: return true
            case .only(let set): return set.contains(zone)
            }
        }
    }

    /// A name for this node in peers' logs. Default empty.
    public var nodeName = ""
    /// Where replication logs (swift-log). At `warning`: what it could not keep without ending a
    /// connection, a knowledge, position or acknowledgement write the store refused (each costs
    /// work, never data: the next subscription asks again from what the store holds). At
    /// `trace`: a line for every batch sent, applied or refused. Default: discarded.
    public var logger = Logger(label: "shoal.sync", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Which zones replicate. Default all.
    public var zones: ZoneFilter = .all
    /// Most records in one `changes` batch. Default 2,000 (each batch costs one transaction on
    /// the receiver; `shoal-bench sync` measured 500 against 2,000).
    public var batchRecords = 2_000
    /// Most payload bytes in one `changes` batch (also bounded by half the peer's frame limit).
    /// Default 1 MiB.
    public var batchBytes = 1 << 20
    /// Batches a peer may send us unacknowledged, per subscription. Default 4.
    public var window: UInt64 = 4
    /// Asset chunks requested from a peer and not yet received, per asset. Default 32 (about
    /// 2.4 MB of chunks of the mean size in flight): 8 kept a 1 GiB loopback transfer to
    /// 255–275 MB/s, 32 let it reach 317–337 (Benchmarks/README.md). The serving node holds the
    /// chunks above its socket, so record batches do not wait behind the window (ShoalNet).
    public var assetWindow = 32
    /// Zones whose assets are fetched as their records arrive; the rest are fetched on demand.
    public var assetFetch: [RecordZone.ID: AssetFetchPolicy] = [:]
    /// Most zones, live or deleted (until the deletion is purged, Spec/replication.md §4.1), a
    /// peer's announcements may make this node hold. An announcement that would pass it creates
    /// none of its new zones and closes the connection with an error naming the limit; zones
    /// created here are not limited. Default 10,000.
    public var maxZones = 10_000
    /// Most zones owned by one device that its shares may make this node hold (live or deleted,
    /// until the deletion is purged), so that one device's zones never fill ``maxZones`` for
    /// the others. The owner's own announcement past it closes its connection with an error
    /// naming the limit; another device relaying them has only those zones left out (counted in
    /// ``SyncNode/Statistics/zonesRefusedForOwnerLimit``), the rest of its announcement is
    /// adopted. Default 1,000.
    public var maxZonesPerOwner = 1_000
    /// Most writers (node IDs) a zone's version vector may name besides the node IDs of devices
    /// that may write it (this node, the sending peer, the node IDs bound here to the zone's owner
    /// and read-write members; at most ``ZoneShare/maxMembers`` + 1 more). A batch whose versions
    /// would take the zone past it is refused whole (error frame `limitExceeded`), so the zone's
    /// vector, its change tokens and its caught-up batches stay within `limits.maxVectorEntries`,
    /// and made-up writers never stop a member from writing as itself. Default 1,024.
    public var maxZoneWriters = 1_024
    /// Most batches this node keeps in flight to one subscription, whatever window the
    /// subscriber asks for: what one subscription can make it hold is this many batches of
    /// ``batchBytes``. Default 16.
    public var maxServedWindow = 16
    /// Whether this node tells its servers which peers deliver a zone to it directly, and, as a
    /// server, leaves out for a subscriber the versions its upstreams deliver themselves
    /// (Spec/replication.md §3.9). Default true; false sends every version each peer lacks.
    public var skipsUpstreams = true
    /// Whether this node sends a changed string, bytes or list field as an edit of the value a
    /// subscriber holds (a delta slot) when that is smaller, and accepts such edits
    /// (Spec/replication.md §3.5.1). Default true; false sends changed fields whole.
    public var fieldDeltas = true
    /// How long the news of a burst of commits may wait so that they travel in one batch
    /// (Spec/replication.md §4 item 2). News waits only while the subscription has a batch of
    /// records in flight: the first commit after a quiet spell goes at once, and a single commit
    /// made meanwhile goes with that batch's acknowledgement; two or more go together once this
    /// much time has passed since the first of them, or at once when they number ``batchRecords``
    /// (a full batch). What waits is a mark, not bytes: the news is read from the change log when
    /// it goes. Default 20 ms (`shoal-bench sync`: 1,000 saves one after another cost 1.43× their
    /// changed bytes at 5 ms, 1.23× at 10 ms, 1.09× at 20 ms, while `change-latency` and `mesh`,
    /// whose changes never come in bursts, do not move); zero sends every commit's news at once.
    public var liveBatchDelay: Duration = .milliseconds(20)
    /// Whether a node with a device key authenticates writes with peers that do too
    /// (Spec/authenticated-writes.md): its batches carry the writers' log entries and signed
    /// checkpoints, and in a zone with a share it applies a version only when every write in it
    /// is proven by its writer's device. Default true; false is for measuring what it costs (a
    /// node that does not authenticate writes cannot replicate zones with a share with one that
    /// does).
    public var authenticatesWrites = true
    /// Whether a range of the sender's own writes, whose versions show each write whole, is
    /// taken on the authenticated connection's word: kept implied by the versions, its chain
    /// checked only when the log is first read past it (Spec/authenticated-writes.md §5.1).
    /// Default true; false checks every range as it arrives (for measuring what taking them on
    /// the connection's word saves).
    public var takesOwnWritesOnWord = true
    /// Decoding limits for everything peers send.
    public var limits: WireLimits = .default
    /// A catch-up's first batch carries how many changes remain when counting them is quick (at
    /// most this many can remain); a longer count runs in the background and a later batch carries
    /// it, so the first batch never waits for it. Default 50,000 (≈ 5 ms to count).
    package var remainingCountInlineLimit: UInt64 = 50_000

    /// The clock live batching reads (``liveBatchDelay``): a simulation drives its own.
    package var now: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }

    /// Whether a peer's acknowledgement is written to the store inside the call that received it,
    /// every time, instead of beside the connection's frames at most once a second (the default).
    /// A simulation that replays a seed event by event below the store turns it on: the writes
    /// then come in the order of the calls, from the simulation's one task.
    package var writesAcknowledgementsInline = false

    /// Whether the acknowledgement writes that are due (at most one a second per peer and zone)
    /// are awaited by the call that makes them, instead of running beside the engine (the
    /// default). A simulation turns it on so that a seed replays the same store.
    package var awaitsAcknowledgementWrites = false

    /// The defaults.
    public init() {}
}
