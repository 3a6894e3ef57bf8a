// ConflictEvents: what an app sees of concurrent edits — the conflict, the resolver hook, the event.

public import ShoalWire
import Synchronization

/// Two versions of one record that changed the same fields to different values without seeing
/// each other's edit: what a ``ConflictResolver`` decides and a ``ConflictEvent`` reports
/// (Spec/replication.md §6).
public struct RecordConflict: Sendable {
    /// Where the two versions met.
    public enum Origin: Sendable, Hashable {
        /// A version from a peer, concurrent with the one stored here.
        case replication
        /// A local save under ``SavePolicy/ifServerRecordUnchanged`` whose change tag is not the
        /// stored record's: the record changed since the app read it.
        case localSave
    }

    /// Where the two versions met.
    public let origin: Origin
    /// The fields both sides changed, to different values, in name order.
    public let fieldNames: [String]
    /// The version both sides started from, when this node still holds one both descend from;
    /// nil otherwise. For a local save, the stored record's previous version when its change tag
    /// is the app's. For replication, in a zone with a resolver, the last version of the record a
    /// peer is known to hold, so it survives several local saves made while apart; else (or when
    /// a side does not descend from that) the stored record's previous version, when both sides
    /// descend from it (Spec/replication.md §6.1).
    public let ancestor: Record?
    /// This node's side: the stored version (replication) or the record the app saved (local save).
    public let local: Record
    /// The other side: the peer's version (replication) or the stored record (local save).
    public let remote: Record
    /// What the node holds without a resolver: the field-by-field merge every node computes
    /// alike (replication), or the stored record with the app's changed fields written over it
    /// (local save, as ``SavePolicy/changedKeys`` would save it).
    public let merged: Record

    /// The record both sides are versions of.
    public var recordID: Record.ID { local.id }
}

/// Decides a conflict: returns the record to keep. Return ``RecordConflict/merged`` to keep the
/// merge; any other record's fields are written as a new version of the record (its ID must be
/// the conflict's; its record type, parent and system fields are not taken).
///
/// Called synchronously inside the write transaction that met the conflict, so it must be quick
/// and must not wait for the store. It runs on one node per conflict, never on all
/// (Spec/replication.md §6): the result is an ordinary new version that replicates.
public typealias ConflictResolver = @Sendable (RecordConflict) -> Record

/// A conflict this node met, and what became of it.
public struct ConflictEvent: Sendable {
    /// What became of a conflict.
    public enum Outcome: Sendable {
        /// This node's resolver decided: the record is the version this node now holds (a new
        /// version when the resolver changed the merge, else the merge itself).
        case resolved(Record)
        /// Another node's resolver decides: the one that wrote the oldest of the concurrent
        /// writes. The merge stands here until its version arrives; nothing is written if that
        /// node has no resolver.
        case decidedBy(NodeID)
        /// This node decides, but no resolver is set for the zone here, or the zone is read-only
        /// here. The merge stands.
        case merged
        /// The resolver's record was refused (the reason says why: wrong ID, over a limit); the
        /// merge stands.
        case rejected(reason: String)
    }

    /// The conflict.
    public let conflict: RecordConflict
    /// What became of it.
    public let outcome: Outcome
}

/// Resolvers by zone, listeners, and the events of the open write transaction, which reach the
/// listeners only when it commits.
final class ConflictCenter: Sendable {
    /// Events each listener may have waiting; beyond, the oldest are dropped.
    static let bufferedEvents = 10_000

    struct State {
        var resolvers: [RecordZone.ID: ConflictResolver] = [:]
        /// The resolver of every zone without one of its own.
        var fallback: ConflictResolver? = nil
        var listeners: [UInt64: AsyncStream<ConflictEvent>.Continuation] = [:]
        var nextListener: UInt64 = 0
        var pending: [ConflictEvent] = []
    }

    let state = Mutex(State())

    func setResolver(_ resolver: ConflictResolver?, for zone: RecordZone.ID) {
        state.withLock { $0.resolvers[zone] = resolver }
    }

    func setFallback(_ resolver: ConflictResolver?) {
        state.withLock { $0.fallback = resolver }
    }

    /// The zone's own resolver, else the fallback.
    func resolver(for zone: RecordZone.ID) -> ConflictResolver? {
        state.withLock { $0.resolvers[zone] ?? $0.fallback }
    }

    /// Whether conflicts in `zone` need finding: someone listens or decides.
    func wanted(in zone: RecordZone.ID) -> Bool {
        state.withLock { !$0.listeners.isEmpty || $0.resolvers[zone] != nil || $0.fallback != nil }
    }

    func events() -> AsyncStream<ConflictEvent> {
        let (stream, continuation) = AsyncStream<ConflictEvent>.makeStream(
            bufferingPolicy: .bufferingNewest(Self.bufferedEvents))
        let id = state.withLock { s in
            let id = s.nextListener
            s.nextListener += 1
            s.listeners[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    /// Notes an event of the open transaction.
    func note(_ event: ConflictEvent) {
        state.withLock { s in
            guard !s.listeners.isEmpty, s.pending.count < Self.bufferedEvents else { return }
            s.pending.append(event)
        }
    }

    func begin() { state.withLock { $0.pending.removeAll(keepingCapacity: true) } }

    func rollback() { state.withLock { $0.pending.removeAll() } }

    func commit() {
        let (events, listeners) = state.withLock { s in
            defer { s.pending.removeAll(keepingCapacity: true) }
            return (s.pending, Array(s.listeners.values))
        }
        guard !events.isEmpty else { return }
        for l in listeners { for e in events { l.yield(e) } }
    }
}
