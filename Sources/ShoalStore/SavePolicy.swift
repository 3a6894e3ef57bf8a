// SavePolicy and ModifyResult: how saves treat the stored record, and what a batch returns.

public import ShoalWire

/// How a save treats the record already stored under the same ID (CloudKit's save policies).
public enum SavePolicy: Sendable, Hashable {
    /// Save only if the record's ``Record/changeTag`` equals the stored record's (a new record
    /// must not exist yet); otherwise fail with `serverRecordChanged`, carrying the ancestor,
    /// client and server records. The saved fields are the ones the client changed.
    case ifServerRecordUnchanged
    /// Write the fields the client changed (``Record/changedKeys``) over the stored record,
    /// whatever its change tag; other stored fields stay.
    case changedKeys
    /// Make the stored record equal the client's: every client field is written, stored fields
    /// the client record lacks are removed.
    case allKeys
}

/// What a successful ``Store/modify(saving:deleting:policy:atomically:)`` did.
public struct ModifyResult: Sendable {
    /// The saved records with their new system fields, in the order given.
    public var savedRecords: [Record]
    /// The IDs deleted: those asked for, then those deleted by `deleteSelf` cascades, in order.
    public var deletedRecordIDs: [Record.ID]
}
