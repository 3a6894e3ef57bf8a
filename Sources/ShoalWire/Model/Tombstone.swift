// Tombstone: what remains visible of a deleted record — its ID, type, vector and the deleting write.

/// A deleted record as change feeds report it: its ID and type, the write that deleted it, and
/// the version vector of the deletion (so replicas can tell it from a later re-creation).
///
/// The store keeps the deleted record's last fields too, so that a save concurrent with the
/// delete can restore the record whole; a tombstone is what applications see.
public struct Tombstone: Hashable, Sendable, CustomStringConvertible {
    /// The deleted record's ID.
    public var id: Record.ID
    /// The deleted record's type.
    public var recordType: String
    /// Every write the deletion had seen.
    public var versionVector: VersionVector
    /// The deleting write.
    public var deletion: Dot

    /// Creates a tombstone.
    public init(id: Record.ID, recordType: String, versionVector: VersionVector, deletion: Dot) {
        self.id = id
        self.recordType = recordType
        self.versionVector = versionVector
        self.deletion = deletion
    }

    /// The tombstone of a deleted record; nil when the record is live.
    public init?(_ record: Record) {
        guard record.isDeleted else { return nil }
        let dels = record.heads.map { Dot(node: $0.node, hlc: record.versionVector[$0.node]) }
        guard let latest = dels.max() else { return nil }
        self.init(id: record.id, recordType: record.recordType, versionVector: record.versionVector, deletion: latest)
    }

    /// The node that deleted the record.
    public var deletedBy: NodeID { deletion.node }
    /// When it was deleted.
    public var deletionDate: Timestamp { deletion.hlc.timestamp }

    public var description: String { "deleted \(recordType) \(id) by \(deletion.node.short) at \(deletionDate)" }
}
