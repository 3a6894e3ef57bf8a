// ShoalError+Mapping: the lower layers' errors (assets, asset fetches, transport, cancellation)
// as the one error the façade throws, the original kept as its underlying error.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import ShoalAssets
import ShoalStore
import ShoalSync

extension ShoalError {
    /// How long a caller should wait before retrying an asset fetch that found no peer to serve it.
    static let fetchRetryAfter: Duration = .seconds(5)

    /// `error`, thrown while doing `what` (e.g. "saving notes/n1 with its files"), as the
    /// façade's error: a `ShoalError` as it is, the others mapped by `mapped(_:doing:)`.
    static func from(_ error: any Error, doing what: String, connectedPeers: Int? = nil) -> ShoalError {
        if let e = error as? ShoalError { return e }
        if error is CancellationError {
            return .wrapping(
                CancellationError(), .operationCancelled,
                "\(what) was cancelled (its task was cancelled); nothing of it was kept")
        }
        if let e = error as? AssetError { return mapped(e, doing: what) }
        if let e = error as? AssetFetchError { return mapped(e, doing: what, connectedPeers: connectedPeers) }
        let description = String(describing: error)
        return .wrapping(SendableDescription(description), .internalError, "\(what) failed: \(description)")
    }

    /// An asset store's error: the same code where CloudKit has one; a full disk is
    /// `quotaExceeded`, other I/O `internalError`.
    static func mapped(_ e: AssetError, doing what: String) -> ShoalError {
        switch e.code {
        case .assetFileNotFound: return .wrapping(e, .assetFileNotFound, "\(what): \(e.message)")
        case .assetFileModified: return .wrapping(e, .assetFileModified, "\(what): \(e.message)")
        case .assetNotAvailable:
            return .wrapping(e, .assetNotAvailable, "\(what): \(e.message)", retryAfter: fetchRetryAfter)
        case .limitExceeded: return .wrapping(e, .limitExceeded, "\(what): \(e.message)")
        case .invalidArguments: return .wrapping(e, .invalidArguments, "\(what): \(e.message)")
        default:
            if let n = e.errno, n == ENOSPC || n == EDQUOT {
                return .wrapping(
                    e, .quotaExceeded, "\(what): the disk is full (\(e.message)); free space on it, then retry")
            }
            return .wrapping(e, .internalError, "\(what): \(e.message)")
        }
    }

    /// A failed asset fetch: `networkUnavailable` when no peer was connected at all, else
    /// `assetNotAvailable`; both say when to retry.
    static func mapped(_ e: AssetFetchError, doing what: String, connectedPeers: Int?) -> ShoalError {
        switch e.code {
        case .assetNotAvailable:
            if connectedPeers == 0 {
                return .wrapping(
                    e, .networkUnavailable,
                    "\(what): no peer is connected to fetch \(e.asset) from; connect one that holds it (listen, connect(to:port:), or discovery) and retry",
                    retryAfter: fetchRetryAfter)
            }
            return .wrapping(e, .assetNotAvailable, "\(what): \(e.message)", retryAfter: fetchRetryAfter)
        default:
            return .wrapping(e, .internalError, "\(what): \(e.message)")
        }
    }

    /// A transport error while binding or dialling `address`.
    static func network(_ error: any Error, binding address: String) -> ShoalError {
        if error is CancellationError { return from(error, doing: "listening on \(address)") }
        let description = String(describing: error)
        return .wrapping(
            SendableDescription(description), .networkFailure,
            "cannot listen on \(address): \(description); choose another port (0 picks a free one) or stop the process that holds it"
        )
    }
}

/// A non-`Sendable` error kept by its description.
struct SendableDescription: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
