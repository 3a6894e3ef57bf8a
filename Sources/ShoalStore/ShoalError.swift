// ShoalError: the error every store operation throws, with CloudKit's codes and per-item details.

public import ShoalWire

/// The error a Shoal store operation throws.
///
/// Shaped like swift-certificates' `CertificateError`: a struct with an extensible ``code``
/// (compare with the static members, e.g. `error.code == .zoneNotFound`), a human-readable
/// ``message`` that names the input, the limit and the fix, and the file and line that raised it.
/// Codes carry CloudKit's names and meanings where they apply. Some codes carry details:
/// ``partialErrors`` for `partialFailure`, the three records of `serverRecordChanged`, and
/// ``retryAfter`` for `requestRateLimited`.
public struct ShoalError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable name. New codes may be added; existing ones never change.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The stable camelCase name, as CloudKit spells it.
        public let name: String

        package init(_ name: String) { self.name = name }

        /// Some items of a batch failed; ``ShoalError/partialErrors`` says which and why.
        public static let partialFailure = Code("partialFailure")
        /// A save's change tag does not match the stored record's; the error carries the ancestor,
        /// client and server records so the caller can merge and save again.
        public static let serverRecordChanged = Code("serverRecordChanged")
        /// The zone does not exist (never created, or deleted).
        public static let zoneNotFound = Code("zoneNotFound")
        /// The record does not exist (never saved, or deleted).
        public static let unknownItem = Code("unknownItem")
        /// The change token can no longer be answered exactly; fetch again from a nil token.
        public static let changeTokenExpired = Code("changeTokenExpired")
        /// A size or count limit was exceeded; the message names the limit and how to stay under it.
        public static let limitExceeded = Code("limitExceeded")
        /// This item was fine, but another item of its atomic zone batch failed, so none was saved.
        public static let batchRequestFailed = Code("batchRequestFailed")
        /// The request itself is malformed (bad name, duplicate item, undecodable token, …).
        public static let invalidArguments = Code("invalidArguments")
        /// The zone does not allow this operation (e.g. a local write to a read-only shared zone).
        public static let permissionFailure = Code("permissionFailure")
        /// The device named is not one this node trusts: trust it first (`shoal peer add`,
        /// `ShoalNode.trustDevice`).
        public static let notAuthenticated = Code("notAuthenticated")
        /// The store is busy (another process holds the database lock); retry after ``ShoalError/retryAfter``.
        public static let requestRateLimited = Code("requestRateLimited")
        /// The store failed internally: an SQLite error, or a stored row that does not decode.
        public static let internalError = Code("internalError")
        /// No peer could be reached for an operation that needs one (an asset fetch with no
        /// connected peer); retry after ``ShoalError/retryAfter``, once a peer is connected.
        public static let networkUnavailable = Code("networkUnavailable")
        /// The network is there but the operation failed on it: an address that cannot be bound,
        /// a connection that broke. ``ShoalError/underlyingError`` holds the transport's error.
        public static let networkFailure = Code("networkFailure")
        /// The calling task was cancelled; nothing of the operation was kept.
        public static let operationCancelled = Code("operationCancelled")
        /// The disk is full (or the user's quota on it is): free space, then retry.
        public static let quotaExceeded = Code("quotaExceeded")
        /// A file to attach as an asset does not exist or cannot be read.
        public static let assetFileNotFound = Code("assetFileNotFound")
        /// A file being attached changed while it was read; attach it again.
        public static let assetFileModified = Code("assetFileModified")
        /// No connected peer could serve the asset (none holds it, or what they sent did not
        /// verify); retry after ``ShoalError/retryAfter``, or when a peer that holds it connects.
        public static let assetNotAvailable = Code("assetNotAvailable")
        /// The node was opened without an asset store, so it cannot fetch or serve assets; open
        /// it with one.
        public static let assetUnsupported = Code("assetUnsupported")
        /// A peer broke the replication protocol (a message out of place, a number it did not
        /// give, a batch naming a record twice); the connection closes (Spec/replication.md).
        public static let protocolViolation = Code("protocolViolation")
        /// A peer speaks a protocol version this node does not, or lacks a capability it needs.
        public static let incompatibleVersion = Code("incompatibleVersion")
        /// A batch could not be used as it came (records this node could not rebuild); the
        /// subscription reconnects to receive whole versions.
        public static let resyncNeeded = Code("resyncNeeded")

        public var description: String { name }
    }

    /// The details of a `serverRecordChanged` conflict.
    public struct Conflict: Sendable {
        /// The version the client's edit was based on, when the store still knows it (the
        /// client record's change tag names it); nil otherwise.
        public let ancestorRecord: Record?
        /// The record the client tried to save.
        public let clientRecord: Record
        /// The record as stored now.
        public let serverRecord: Record
    }

    final class Backing: Sendable {
        let code: Code
        let message: String
        let file: String
        let line: Int
        let partialErrors: [Record.ID: ShoalError]
        let savedRecords: [Record]
        let conflict: Conflict?
        let retryAfter: Duration?
        let underlying: (any Error & Sendable)?

        init(
            code: Code, message: String, file: String, line: Int, partialErrors: [Record.ID: ShoalError] = [:],
            savedRecords: [Record] = [], conflict: Conflict? = nil, retryAfter: Duration? = nil,
            underlying: (any Error & Sendable)? = nil
        ) {
            self.code = code
            self.message = message
            self.file = file
            self.line = line
            self.partialErrors = partialErrors
            self.savedRecords = savedRecords
            self.conflict = conflict
            self.retryAfter = retryAfter
            self.underlying = underlying
        }
    }

    let backing: Backing

    init(_ backing: Backing) { self.backing = backing }

    /// What went wrong.
    public var code: Code { backing.code }
    /// What was wrong with which input, the limit involved, and how to fix it.
    public var message: String { backing.message }
    /// The source file that raised the error.
    public var file: String { backing.file }
    /// The line that raised the error.
    public var line: Int { backing.line }
    /// For `partialFailure`: the error of each item that failed, by record ID.
    public var partialErrors: [Record.ID: ShoalError] { backing.partialErrors }
    /// For `partialFailure` of a save: the records that were saved (with their new system fields).
    public var savedRecords: [Record] { backing.savedRecords }
    /// For `serverRecordChanged`: the ancestor the client edited, when known.
    public var ancestorRecord: Record? { backing.conflict?.ancestorRecord }
    /// For `serverRecordChanged`: the record the client tried to save.
    public var clientRecord: Record? { backing.conflict?.clientRecord }
    /// For `serverRecordChanged`: the record as the store holds it now.
    public var serverRecord: Record? { backing.conflict?.serverRecord }
    /// How long to wait before retrying, where retrying helps (`requestRateLimited`,
    /// `networkUnavailable`, `assetNotAvailable`); nil otherwise.
    public var retryAfter: Duration? { backing.retryAfter }
    /// The error of a lower layer this one stands for (an asset store's, the transport's, a
    /// cancellation), kept for diagnosis; nil when the error is Shoal's own.
    public var underlyingError: (any Error & Sendable)? { backing.underlying }

    public var description: String {
        var s = "ShoalError.\(code.name): \(message)"
        if !partialErrors.isEmpty {
            let items = partialErrors.sorted { $0.key < $1.key }.prefix(5).map { "\($0.key): \($0.value.code.name)" }
            s += " [" + items.joined(separator: ", ") + (partialErrors.count > 5 ? ", …" : "") + "]"
        }
        // The underlying error's own text, unless the message already says it (errors that
        // describe themselves as "Type.code: message" or "code: message" count by their message).
        if let u = underlyingError {
            let text = "\(u)"
            let parts = text.split(separator: ": ", maxSplits: 1)
            let said = parts.count == 2 ? String(parts[1]) : text
            if !message.contains(said) { s += " (underlying: \(text))" }
        }
        return s
    }
}

extension ShoalError {
    static func make(_ code: Code, _ message: String, file: String, line: Int) -> ShoalError {
        ShoalError(Backing(code: code, message: message, file: file, line: line))
    }

    /// An error standing for `underlying`, a lower layer's (nil: none), with `retryAfter` where
    /// retrying helps.
    package static func wrapping(
        _ underlying: (any Error & Sendable)?, _ code: Code, _ message: String, retryAfter: Duration? = nil,
        file: String = #fileID, line: Int = #line
    ) -> ShoalError {
        ShoalError(
            Backing(
                code: code, message: message, file: file, line: line, retryAfter: retryAfter, underlying: underlying))
    }

    /// Items of a batch failed; `errors` holds each failed item's error.
    package static func partialFailure(
        _ errors: [Record.ID: ShoalError], saved: [Record] = [], total: Int,
        file: String = #fileID, line: Int = #line
    ) -> ShoalError {
        let codes = Set(errors.values.map(\.code.name)).sorted().joined(separator: ", ")
        return ShoalError(
            Backing(
                code: .partialFailure,
                message:
                    "\(errors.count) of \(total) items failed (\(codes)); see partialErrors for each item's error and fix",
                file: file, line: line, partialErrors: errors, savedRecords: saved))
    }

    /// The client's change tag does not match the stored record's.
    package static func serverRecordChanged(
        ancestor: Record?, client: Record, server: Record,
        file: String = #fileID, line: Int = #line
    ) -> ShoalError {
        let tag = client.changeTag.map { "change tag \($0)" } ?? "no change tag (a new record)"
        return ShoalError(
            Backing(
                code: .serverRecordChanged,
                message:
                    "record \(client.id) was saved with \(tag), but the stored record's is \(server.changeTag ?? "none"); merge clientRecord into serverRecord and save the result, or save with policy .changedKeys or .allKeys to overwrite",
                file: file, line: line,
                conflict: Conflict(ancestorRecord: ancestor, clientRecord: client, serverRecord: server)))
    }

    /// The zone does not exist.
    package static func zoneNotFound(_ zone: RecordZone.ID, file: String = #fileID, line: Int = #line) -> ShoalError {
        make(
            .zoneNotFound,
            "zone \(zone) does not exist on this store; create it with createZone(_:) first (a deleted zone must be created again)",
            file: file, line: line)
    }

    /// The record does not exist.
    package static func unknownItem(_ id: Record.ID, file: String = #fileID, line: Int = #line) -> ShoalError {
        make(.unknownItem, "record \(id) does not exist (never saved, or deleted)", file: file, line: line)
    }

    /// The token cannot be answered exactly.
    package static func changeTokenExpired(_ why: String, file: String = #fileID, line: Int = #line) -> ShoalError {
        make(
            .changeTokenExpired,
            "\(why); fetch changes again from a nil token and reconcile with allRecordIDs(in:) to find every deletion missed",
            file: file, line: line)
    }

    /// A limit was exceeded.
    package static func limitExceeded(_ what: String, file: String = #fileID, line: Int = #line) -> ShoalError {
        make(.limitExceeded, what, file: file, line: line)
    }

    /// Another item of an atomic zone batch failed.
    package static func batchRequestFailed(
        _ id: Record.ID, because failed: Record.ID, file: String = #fileID, line: Int = #line
    ) -> ShoalError {
        make(
            .batchRequestFailed,
            "record \(id) was not saved because \(failed) failed in the same atomic batch for zone \(id.zone); fix that item, or pass atomically: false",
            file: file, line: line)
    }

    /// The request is malformed.
    package static func invalidArguments(_ what: String, file: String = #fileID, line: Int = #line) -> ShoalError {
        make(.invalidArguments, what, file: file, line: line)
    }

    /// The zone forbids the operation.
    package static func permissionFailure(_ what: String, file: String = #fileID, line: Int = #line) -> ShoalError {
        make(.permissionFailure, what, file: file, line: line)
    }

    /// The device is not trusted.
    package static func notAuthenticated(_ what: String, file: String = #fileID, line: Int = #line) -> ShoalError {
        make(.notAuthenticated, what, file: file, line: line)
    }

    /// The database is locked by someone else.
    package static func requestRateLimited(
        retryAfter: Duration, _ what: String, file: String = #fileID, line: Int = #line
    ) -> ShoalError {
        ShoalError(
            Backing(
                code: .requestRateLimited, message: "\(what); retry after \(retryAfter)", file: file, line: line,
                retryAfter: retryAfter))
    }

    /// The disk (or the user's quota on it) is full.
    package static func quotaExceeded(_ what: String, file: String = #fileID, line: Int = #line) -> ShoalError {
        make(.quotaExceeded, what, file: file, line: line)
    }

    /// Something failed inside the store.
    package static func internalError(_ what: String, file: String = #fileID, line: Int = #line) -> ShoalError {
        make(.internalError, what, file: file, line: line)
    }
}
