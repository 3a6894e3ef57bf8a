// SyncNode+DecodeAhead: batches decoded, and their writer-log entries rebuilt, by the transport's
// read loop while the engine applies the batch before them.

package import ShoalWire
import ShoalStore
import Synchronization

extension SyncNode {
    /// A `changes` or `live-changes` frame decoded ahead of ``receive(_:on:decoded:)``, off the
    /// node's actor, with the entries of its writer-log ranges rebuilt from its whole versions.
    /// The node takes the message out (``take()``, ``takeLive(subscription:zone:reference:)``),
    /// so that once the batch is applied the node holds its only copy and can free it off the
    /// engine's path (``releaseLater(_:)``).
    package final class DecodedChanges: Sendable {
        /// The entries of each range of the batch's writer-log section, in order, rebuilt from
        /// its whole versions (``WriterLog/encodedEntries(of:versions:)``): made only for a batch
        /// without sparse records, whose versions are then exactly its whole records.
        /// Nil for a range of the peer's own writes, which the engine may take on the
        /// connection's word without rebuilding (``SyncConfiguration/takesOwnWritesOnWord``).
        typealias RebuiltRanges = [Result<[WriterLog.EncodedEntry], WriterLog.Mismatch>?]

        /// A `live-changes` batch's message, with the subscription, zone and vector reference it
        /// was read against.
        struct Live {
            var subscription: UInt64
            var zone: RecordZone.ID
            var reference: VersionVector
            var result: Result<(LiveChangesMessage, [Range<Int>]), WireError>
        }

        private enum Message {
            case changes(Result<(ChangesMessage, [Range<Int>]), WireError>)
            case live(Live)
        }

        private let state: Mutex<(message: Message, ranges: RebuiltRanges?)?>

        init(result: Result<(ChangesMessage, [Range<Int>]), WireError>, ranges: RebuiltRanges?) {
            state = Mutex((.changes(result), ranges))
        }

        init(live: Live, ranges: RebuiltRanges?) {
            state = Mutex((.live(live), ranges))
        }

        /// The decoded `changes` message and its rebuilt ranges, once; nil afterwards.
        func take() -> (Result<(ChangesMessage, [Range<Int>]), WireError>, RebuiltRanges?)? {
            state.withLock { s in
                guard case .changes(let r)? = s?.message else { return nil }
                defer { s = nil }
                return (r, s?.ranges)
            }
        }

        /// The decoded `live-changes` message and its rebuilt ranges, once, if it was read as
        /// subscription `subscription` of `zone` against `reference`; nil otherwise (the engine
        /// then decodes the frame itself).
        func takeLive(subscription: UInt64, zone: RecordZone.ID, reference: VersionVector) -> (
            Result<(LiveChangesMessage, [Range<Int>]), WireError>, RebuiltRanges?
        )? {
            state.withLock { s in
                guard case .live(let live)? = s?.message, live.subscription == subscription, live.zone == zone,
                    live.reference == reference
                else { return nil }
                defer { s = nil }
                return (live.result, s?.ranges)
            }
        }
    }

    /// The vector reference of each inbound subscription the peer numbered, by connection: a
    /// copy of the engine's (``SyncSession/Inbound/vectorReference``), which only the engine
    /// writes, for the read loops to decode `live-changes` frames ahead of it. A copy that is
    /// behind costs only the decode ahead: the engine uses a message decoded ahead only when it
    /// was read against the reference the engine holds (§3.5.4 makes the decode a function of
    /// the payload, the zone and the reference). At most one entry per subscription number the
    /// connection's session names, and none once it closed.
    package final class LiveReferences: Sendable {
        private let byConnection = Mutex<[ConnectionID: [UInt64: (zone: RecordZone.ID, reference: VersionVector)]]>(
            [:])
        private let peers = Mutex<[ConnectionID: NodeID]>([:])

        /// The node connection `id`'s hello named, once established.
        func peer(on id: ConnectionID) -> NodeID? {
            peers.withLock { $0[id] }
        }

        /// Publishes `node` as the peer on `id`.
        func publishPeer(_ node: NodeID, on id: ConnectionID) {
            peers.withLock { $0[id] = node }
        }

        init() {}

        /// The zone and reference of subscription `number` on `id`, as last published.
        func reference(of number: UInt64, on id: ConnectionID) -> (zone: RecordZone.ID, reference: VersionVector)? {
            byConnection.withLock { $0[id]?[number] }
        }

        /// Publishes subscription `number` of `zone` on `id` as read against `reference`.
        func publish(_ number: UInt64, zone: RecordZone.ID, reference: VersionVector, on id: ConnectionID) {
            byConnection.withLock { $0[id, default: [:]][number] = (zone, reference) }
        }

        /// Forgets the numbers of `zone`'s earlier subscriptions on `id` (a new one starts).
        func forget(_ zone: RecordZone.ID, on id: ConnectionID) {
            byConnection.withLock { all in
                guard let numbers = all[id] else { return }
                all[id] = numbers.filter { $0.value.zone != zone }
            }
        }

        /// Forgets connection `id`, closed.
        func forget(_ id: ConnectionID) {
            _ = byConnection.withLock { $0.removeValue(forKey: id) }
            _ = peers.withLock { $0.removeValue(forKey: id) }
        }
    }

    /// Publishes the reference of the inbound subscription of `zone` on `id` for the read loop
    /// (``LiveReferences``), once the peer numbered it.
    func publishLiveReference(of zone: RecordZone.ID, on id: ConnectionID) {
        guard let sub = sessions[id]?.inbound[zone], let n = sub.number, sessions[id]?.inboundNumbers[n] == zone
        else { return }
        liveReferences.publish(n, zone: zone, reference: sub.vectorReference, on: id)
    }

    /// Decodes a `changes` or `live-changes` frame received on `id` (nil for other frames, and
    /// for a `live-changes` frame of a subscription whose reference is not published) without
    /// touching the node's state, so a transport can decode the next batch while the node
    /// applies this one. The entries of the batch's writer-log ranges are rebuilt as well when
    /// it holds no sparse record (``DecodedChanges/RebuiltRanges``).
    package nonisolated func decodeAhead(_ frame: Frame, on id: ConnectionID) -> DecodedChanges? {
        let limits = configuration.limits
        switch frame.type {
        case .changes:
            do throws(WireError) {
                let decoded = try ChangesMessage.decodeKeepingRecordBytes(frame.payload, limits: limits)
                return DecodedChanges(result: .success(decoded), ranges: rebuiltAhead(decoded.0, on: id))
            } catch {
                return DecodedChanges(result: .failure(error), ranges: nil)
            }
        case .liveChanges:
            guard let n = try? LiveChangesMessage.subscription(of: frame.payload, limits: limits),
                let (zone, reference) = liveReferences.reference(of: n, on: id)
            else { return nil }
            let result: Result<(LiveChangesMessage, [Range<Int>]), WireError>
            var ranges: DecodedChanges.RebuiltRanges? = nil
            do throws(WireError) {
                let decoded = try LiveChangesMessage.decodeKeepingRecordBytes(
                    frame.payload, zone: zone, reference: reference, limits: limits)
                result = .success(decoded)
                ranges = rebuiltAhead(
                    decoded.0.sparseRecords.isEmpty ? decoded.0.records : nil, decoded.0.writerLog, on: id)
            } catch {
                result = .failure(error)
            }
            let live = DecodedChanges.Live(subscription: n, zone: zone, reference: reference, result: result)
            return DecodedChanges(live: live, ranges: ranges)
        default:
            return nil
        }
    }

    /// The entries of `m`'s writer-log ranges rebuilt from its whole versions; nil when it has
    /// sparse records (their versions are rebuilt only by the engine), no section, more than
    /// ``maxEntriesAheadPerVersion`` items per whole version, or when this node does not
    /// authenticate writes.
    nonisolated func rebuiltAhead(_ m: ChangesMessage, on id: ConnectionID) -> DecodedChanges.RebuiltRanges? {
        rebuiltAhead(m.sparseRecords.isEmpty ? m.records : nil, m.writerLog, on: id)
    }

    /// The most writer-log items per whole version of a batch whose entries the read loop
    /// rebuilds ahead. Batches wait for the engine up to the connection's inbound budget, so
    /// what they hold must stay proportional to what they carry: an entry rebuilt from a version
    /// is at most about the version's size, and a range naming one version many times (its
    /// writers' earlier writes, or a forged range) is left to the engine, which rebuilds one
    /// batch at a time.
    static let maxEntriesAheadPerVersion = 2

    nonisolated func rebuiltAhead(_ records: [Record]?, _ section: WriterLogSection?, on id: ConnectionID)
        -> DecodedChanges.RebuiltRanges?
    {
        guard configuration.authenticatesWrites, let records, let section, !section.ranges.isEmpty,
            section.ranges.reduce(0, { $0 &+ $1.items.count }) <= records.count &* Self.maxEntriesAheadPerVersion
        else { return nil }
        // The peer's own writes are likely taken on the connection's word: not rebuilt here.
        let peer = configuration.takesOwnWritesOnWord ? liveReferences.peer(on: id) : nil
        guard section.ranges.contains(where: { $0.writer != peer }) else { return section.ranges.map { _ in nil } }
        let versions = records.map(Optional.some)
        return section.ranges.map { $0.writer == peer ? nil : WriterLog.encodedEntries(of: $0, versions: versions) }
    }
}
