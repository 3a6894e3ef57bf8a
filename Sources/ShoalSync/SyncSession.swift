// SyncSession: the protocol state of one connection — handshake, subscriptions both ways, windows.

public import ShoalWire
import Synchronization

/// Identifies one connection of a ``SyncNode`` (assigned by ``SyncNode/open()``).
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    /// The number, unique within the node's lifetime.
    public let rawValue: UInt64
    /// Wraps a number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// What a node asks its transport to do on a connection.
public enum SyncOutput: Sendable, Equatable {
    /// Send this frame.
    case send(Frame)
    /// Close the connection, after sending this error frame when there is one.
    case close(ErrorMessage?)
}

/// The protocol state of one connection; ``SyncNode`` owns one per connection.
///
/// It holds no store and touches no socket: the node reads and writes the store and hands the
/// results here, and the transport moves frames. Tests drive it in memory, deterministically.
struct SyncSession {
    enum Phase { case awaitingHello, established, closed }

    /// A subscription this node made to the peer: batches we expect.
    struct Inbound {
        var incarnation: NodeID
        var nextBatch: UInt64 = 1
        /// Whether the last batch received said the peer had nothing newer.
        var caughtUp = false
        /// Record versions received on this subscription.
        var records = 0
        /// Records this subscription should bring in all, from the peer's remaining count.
        var expected: Int? = nil
        /// The union of the knowledge the peer has stated in this subscription's batches since it
        /// began (or since its last reset): a batch states only what changed (§3.5).
        var serverKnowledge = VersionVector()
        /// The union of the knowledge this node has stated to the peer for this subscription (its
        /// `subscribe` and acknowledgements) since it began (or since the last reset).
        var statedKnowledge = VersionVector()
        /// Whether a caught-up batch has arrived on this subscription: from then on the peer is an
        /// upstream of the zone for this node's other servers (Spec/replication.md §3.9).
        var isUpstream = false
        /// The upstreams last told to this peer for the zone (nil: none told yet).
        var upstreamsSent: [NodeID]? = nil
        /// The number the peer gave this subscription (its `live-changes` name it, §3.5.4).
        var number: UInt64? = nil
        /// The token of the last batch received (or the one presented in `subscribe`): a
        /// `live-changes` token is a change to it.
        var lastToken: [UInt8] = []
        /// What the server's `live-changes` vectors are written against (§3.5.4): the knowledge
        /// this node stated in its `subscribe`, joined with what the batches stated since (a
        /// reset batch starts it again from its own); the server keeps the same.
        var vectorReference = VersionVector()
        /// Records asked for whole (`want-whole`) and not yet received: until they arrive, this
        /// subscription moves no stored position and adopts no knowledge (Spec/replication.md §3.10).
        var wanted: Set<String> = []
    }

    /// A subscription the peer made to us: batches we send.
    struct Outbound {
        var incarnation: NodeID
        /// The position after the last batch sent (nil: from the beginning).
        var token: ChangeToken?
        /// What the peer last said it knows; versions it dominates are not sent.
        var peerKnowledge: VersionVector
        /// The union of the knowledge this node has stated in the subscription's caught-up
        /// batches since it began (or since its last reset pass began).
        var knowledgeSent = VersionVector()
        var window: UInt64
        var nextBatch: UInt64 = 1
        var acknowledged: UInt64 = 0
        /// Whether the store is to be read for the subscriber (Spec/replication.md §4).
        enum Reading: Equatable {
            /// The store may hold what the subscriber lacks: the next pump reads it.
            case due
            /// A pump is reading the store for it now; `again`: a commit arrived meanwhile, so a
            /// caught-up batch does not end the reading.
            case reading(again: Bool)
            /// The subscriber was sent all there is: nothing to read until the next commit.
            case caughtUp
        }

        /// Where the subscription's reset pass stands (Spec/replication.md §3.5.2).
        enum ResetPass: Equatable {
            /// No pass: batches go on from the subscription's position.
            case none
            /// The next batch starts a pass and says so (`reset`): from the beginning of the log.
            case starting
            /// A pass is running, from its first batch to its caught-up one.
            case running
        }

        /// What the subscription has sent so far.
        enum LastSent: Equatable {
            /// No batch yet (the first is sent even when empty).
            case nothing
            /// The last batch sent did not say the subscriber is caught up.
            case batch
            /// The last batch sent said the subscriber is caught up.
            case caughtUp
        }

        var reading = Reading.due
        var resetPass = ResetPass.none
        var lastSent = LastSent.nothing

        /// Whether the next batch starts a reset pass.
        var resetNext: Bool { resetPass == .starting }
        /// Whether a reset pass is running: nothing is skipped for upstreams, since the subscriber
        /// learns deletions from what the pass leaves out.
        var inResetPass: Bool { resetPass != .none }
        /// Whether at least one batch went out.
        var sentAny: Bool { lastSent != .nothing }
        /// Whether the last batch sent said the subscriber was caught up.
        var caughtUpSent: Bool { lastSent == .caughtUp }
        /// A count of the changes remaining after batch 1 of a long catch-up, running in the
        /// background, and the feed rows read since that batch; the first batch after the count
        /// finishes carries the difference.
        var pendingCount: PendingCount? = nil
        var rowsSinceCount = 0
        /// The nodes the peer receives this zone from directly (its `upstreams`, this node left
        /// out): versions whose unseen writes are all theirs are not sent (§3.9).
        var upstreams: Set<NodeID> = []
        /// Per node, the lowest and highest timestamp of the writes skipped for the upstreams
        /// that the peer's knowledge does not cover yet: the knowledge stated to it is capped
        /// below them, and losing an upstream rewinds to the peer's knowledge.
        var skipped: [NodeID: (low: HLC, high: HLC)] = [:]
        /// An upstream with skipped writes was lost: the next read starts over from the peer's
        /// knowledge.
        var rewindPending = false
        /// Since when the subscription's news has waited to travel with later commits, and how
        /// many commits it holds (``SyncConfiguration/liveBatchDelay``); nil when none waits.
        var heldNews: (since: ContinuousClock.Instant, commits: Int)? = nil
        /// The number of the last batch sent that carried records: news is held only while such a
        /// batch is unacknowledged (a batch stating knowledge alone starts no burst).
        var lastRecordsBatch: UInt64 = 0
        /// The subscription's number on this connection, when the peer reads `live-changes`
        /// (Spec/replication.md §3.5.4), and whether a batch has established it yet.
        var number: UInt64? = nil
        var numberSent = false
        /// The token of the last batch sent: a `live-changes` token is a change to it.
        var tokenSent: [UInt8] = []
        /// What `live-changes` vectors are written against (Spec/replication.md §3.5.4): the
        /// knowledge the peer stated in its `subscribe`, joined with what the subscription's
        /// batches stated since (a reset batch starts it again from its own). The subscriber
        /// keeps the same (``Inbound/vectorReference``).
        var vectorReference = VersionVector()
        /// Records the subscriber asked for whole (`want-whole`), sent before the next page.
        var wanted: Set<String> = []
        /// A batch of wanted records went since the last caught-up batch: the next page is sent
        /// even when it holds nothing new, so the subscriber gets a caught-up batch after it.
        var wantedSent = false
        /// Per writer, how much of its log for the zone the subscriber holds as far as this
        /// node can tell: read from its knowledge the first time, then moved by the ranges sent
        /// (Spec/authenticated-writes.md §4).
        var writerLogSent: [NodeID: UInt64] = [:]
        /// Whether the subscriber stated its writer log heads in `subscribe`: then a writer not
        /// in ``writerLogSent`` is one it holds nothing of.
        var writerLogHeadsStated = false

        var unacknowledged: UInt64 { nextBatch &- 1 &- acknowledged }

        /// Makes the next batch start a reset pass (Spec/replication.md §3.5.2): from the
        /// beginning of the log, skipping nothing for the subscriber's knowledge or upstreams,
        /// the pass's knowledge stated whole (the subscriber starts over too).
        mutating func beginResetPass() {
            token = nil
            peerKnowledge = VersionVector()
            knowledgeSent = VersionVector()
            resetPass = .starting
            skipped = [:]
        }
    }

    var phase = Phase.awaitingHello
    /// The authenticated device at the other end; nil for a transport that authenticates nobody.
    var device: DeviceID? = nil
    /// The peer's hello, without its zones (kept in ``peerZones``, bounded).
    var peer: HelloMessage? = nil
    /// The zones the peer announced that this node holds, as last announced (without shares):
    /// at most one entry per zone held here, whatever the peer announces (Spec/replication.md §3.3).
    var peerZones: [RecordZone.ID: ZoneAnnouncement] = [:]
    /// Shares in the peer's announcements whose signatures did not verify, on this connection.
    var badShares = 0
    /// Shared zones the peer announced with an older share that listed its device, where the
    /// share held here no longer does: announced to it with that share, so it learns it was
    /// removed (Spec/security.md §6.3).
    var tellRemoved: Set<RecordZone.ID> = []
    /// The zones this node last announced on the connection (in its hello or a zones message).
    var announced: [ZoneAnnouncement] = []
    /// Zones whose tombstone this node purged that the peer announced with the purged
    /// incarnation, and that incarnation: announced deleted on this connection, so the peer
    /// deletes its copy, or purges its own tombstone (Spec/replication.md §4.1).
    var purgedAnnounced: [RecordZone.ID: NodeID] = [:]
    var inbound: [RecordZone.ID: Inbound] = [:]
    var outbound: [RecordZone.ID: Outbound] = [:]
    /// A subscription's stated knowledge after a batch (Spec/replication.md §3.5.4): a reset batch
    /// starts it again, and the knowledge a batch states joins it. The server applies it to every
    /// batch it sends and the subscriber to every batch it reads, so both hold the same vector.
    static func vectorReference(after reference: VersionVector, reset: Bool, stated: VersionVector?) -> VersionVector {
        let start = reset ? VersionVector() : reference
        return stated.map { start.union($0) } ?? start
    }

    /// The next number this node gives a subscription the peer makes here (never reused on the
    /// connection), and the zones of the numbers the peer gave this node's subscriptions there.
    var nextSubscriptionNumber: UInt64 = 1
    /// The number this node gives its next subscription on the connection, to a peer that takes
    /// numbers in `subscribe` (capability bit 7, Spec/replication.md §3.5.4).
    var nextOwnSubscriptionNumber: UInt64 = 1
    var inboundNumbers: [UInt64: RecordZone.ID] = [:]
    var lastError: String? = nil
    /// Writers whose public key went to the peer on this connection (with their first range).
    var writerKeysSent: Set<NodeID> = []

    /// The largest `changes` payload this session sends.
    func payloadBudget(_ configuration: SyncConfiguration) -> Int {
        let peerLimit = Int(clamping: peer?.maxFramePayloadBytes ?? UInt64(configuration.limits.maxFramePayloadBytes))
        return max(4096, min(configuration.batchBytes, min(peerLimit, configuration.limits.maxFramePayloadBytes) / 2))
    }

    /// Picks the protocol version both ranges contain, or nil.
    static func negotiate(_ ours: ClosedRange<UInt64>, _ theirs: HelloMessage) -> UInt64? {
        let low = max(ours.lowerBound, theirs.minimumVersion), high = min(ours.upperBound, theirs.maximumVersion)
        return low <= high ? high : nil
    }
}

/// The result of a background count, once it is known.
final class PendingCount: Sendable {
    private let result = Mutex<(done: Bool, value: Int?)>((false, nil))

    /// Records the count (nil: it could not be taken).
    func finish(_ value: Int?) { result.withLock { $0 = (true, value) } }

    /// Whether the count finished, and its value.
    var outcome: (done: Bool, value: Int?) { result.withLock { $0 } }
}
