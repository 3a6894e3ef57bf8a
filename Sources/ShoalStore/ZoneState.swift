// ZoneState: what the store keeps in memory about each zone (row, incarnation, sequence, vectors).

public import ShoalWire

/// Which database a zone belongs to, as in CloudKit.
public enum DatabaseScope: UInt8, Hashable, Sendable, CaseIterable {
    /// Zones this node owns.
    case `private` = 0
    /// Zones other nodes own and share with this one.
    case shared = 1
    /// Zones every authorised peer may read.
    case `public` = 2
}

/// A zone as the store describes it.
public struct ZoneInfo: Hashable, Sendable {
    /// The zone's identity.
    public var id: RecordZone.ID
    /// The database it belongs to.
    public var scope: DatabaseScope
    /// Whether local writes are refused (`permissionFailure`); replication still applies changes.
    public var isReadOnly: Bool
    /// The zone's incarnation: new each time the zone is created, named by its change tokens.
    public var incarnation: NodeID
    /// Every write the zone has seen (union of its records' vectors, tombstones included).
    public var versionVector: VersionVector
}

/// The in-memory mirror of a `zones` row.
struct ZoneState: Sendable {
    var row: Int64
    var id: RecordZone.ID
    var scope: DatabaseScope
    var readOnly: Bool
    var incarnation: NodeID
    var seq: UInt64
    var vector: VersionVector
    var horizon: VersionVector
    var deleted: Bool
    var databaseSequence: UInt64
    /// The head of this node's own log for the zone (Spec/authenticated-writes.md §2).
    var log = WriterLogHead()
    /// The writers whose logs for the zone hold entries kept implied, not yet chained
    /// (``Store/keepImplied(_:batch:keepingMade:)``).
    var implied = Set<NodeID>()

    var info: ZoneInfo {
        ZoneInfo(id: id, scope: scope, isReadOnly: readOnly, incarnation: incarnation, versionVector: vector)
    }

    static func loadAll(_ db: SQLiteDatabase) throws(ShoalError) -> [ZoneState] {
        let s = try db.statement(
            "SELECT id, name, owner, scope, read_only, incarnation, seq, vector, horizon, deleted, db_seq, log_seq, log_hlc, log_chain FROM zones"
        )
        var out = [ZoneState]()
        while try s.step() {
            let id = RecordZone.ID(name: s.text(1), owner: s.text(2))
            guard let scope = DatabaseScope(rawValue: UInt8(truncatingIfNeeded: s.int(3))),
                let inc = Bytes.nodeID(s.blob(5))
            else {
                throw .internalError(
                    "the zones row for \(id) has an unknown scope or a bad incarnation; the store is damaged")
            }
            out.append(
                ZoneState(
                    row: s.int64(0), id: id, scope: scope, readOnly: s.int(4) != 0, incarnation: inc,
                    seq: UInt64(bitPattern: s.int64(6)),
                    vector: try Bytes.vector(s.blob(7), "the vector of zone \(id)"),
                    horizon: try Bytes.vector(s.blob(8), "the purge horizon of zone \(id)"),
                    deleted: s.int(9) != 0, databaseSequence: UInt64(bitPattern: s.int64(10)),
                    log: WriterLogHead(
                        sequence: UInt64(bitPattern: s.int64(11)), hlc: HLC(rawValue: UInt64(bitPattern: s.int64(12))),
                        chain: s.blob(13))))
        }
        s.reset()
        let implied = try db.statement("SELECT DISTINCT zone, writer FROM writer_implied")
        while try implied.step() {
            guard let i = out.firstIndex(where: { $0.row == implied.int64(0) }), let w = Bytes.nodeID(implied.blob(1))
            else { continue }
            out[i].implied.insert(w)
        }
        implied.reset()
        return out
    }

    func save(_ db: SQLiteDatabase) throws(ShoalError) {
        let s = try db.statement(
            "UPDATE zones SET seq = ?, vector = ?, horizon = ?, deleted = ?, db_seq = ?, incarnation = ?, scope = ?, read_only = ?, log_seq = ?, log_hlc = ?, log_chain = ? WHERE id = ?"
        )
        try s.bind(1, Int64(bitPattern: seq)).bind(2, Bytes.vector(vector)).bind(3, Bytes.vector(horizon))
            .bind(4, deleted ? 1 : 0).bind(5, Int64(bitPattern: databaseSequence)).bind(6, Bytes.nodeID(incarnation))
            .bind(7, Int(scope.rawValue)).bind(8, readOnly ? 1 : 0).bind(9, Int64(bitPattern: log.sequence))
            .bind(10, Int64(bitPattern: log.hlc.rawValue)).bind(11, log.chain).bind(12, row).run()
    }
}

/// The head of a writer's log for a zone (Spec/authenticated-writes.md §2): the sequence and
/// timestamp of its last entry and the chain value after it. An empty log has sequence 0 and
/// an empty chain, which stands for the chain's start (``WriterLog/chainStart(zone:writer:)``).
package struct WriterLogHead: Hashable, Sendable {
    /// The last entry's sequence; 0 for an empty log.
    package var sequence: UInt64 = 0
    /// The last entry's timestamp.
    package var hlc: HLC = .zero
    /// The chain value after the last entry; empty for an empty log.
    package var chain: [UInt8] = []

    package init(sequence: UInt64 = 0, hlc: HLC = .zero, chain: [UInt8] = []) {
        self.sequence = sequence
        self.hlc = hlc
        self.chain = chain
    }
}
