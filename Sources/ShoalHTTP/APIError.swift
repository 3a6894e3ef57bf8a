// APIError: an HTTP API failure as a status and a JSON body {"error": {"code", "message"}}, with ShoalError's codes.

import Foundation
package import HTTPTypes
package import Shoal

/// A request that failed: the HTTP status, a `ShoalError` code name (or one of the API's own:
/// `notAuthenticated`, `notFound`, `methodNotAllowed`, `payloadTooLarge`, `crossOrigin`) and a
/// message naming the input, the limit and the fix.
///
/// Unchecked `Sendable`: ``details`` holds only JSON values (strings, numbers, bools, arrays and
/// dictionaries of them), which are immutable values once made.
package struct APIError: Error, @unchecked Sendable {
    /// The response status.
    package var status: HTTPResponse.Status
    /// The error's code, as `ShoalError.Code.name` spells it.
    package var code: String
    /// What was wrong and how to fix it.
    package var message: String
    /// Extra members of the error object (the server record of a conflict, a retry delay).
    package var details: [String: Any] = [:]

    package init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// A 400 `invalidArguments` error.
    package static func invalid(_ message: String) -> APIError {
        APIError(.badRequest, ShoalError.Code.invalidArguments.name, message)
    }

    /// The key is missing or wrong. The message is the same either way: it tells nothing about the key.
    package static let unauthorized = APIError(
        .unauthorized, ShoalError.Code.notAuthenticated.name,
        "this API needs the node's key in the X-API-Key header (`shoal http-key` prints it)")

    /// The HTTP error for a `ShoalError`, with CloudKit's meanings: not found is 404, a changed
    /// record 409 (with the server's record), an expired token 410, a limit 413, a rate limit 429
    /// (with Retry-After), no permission 403, bad arguments 400.
    package init(_ error: ShoalError) {
        let status: HTTPResponse.Status
        switch error.code {
        case .unknownItem, .zoneNotFound, .assetFileNotFound, .assetNotAvailable: status = .notFound
        case .serverRecordChanged: status = .conflict
        case .changeTokenExpired: status = .gone
        case .limitExceeded, .quotaExceeded: status = .contentTooLarge
        case .requestRateLimited: status = .tooManyRequests
        case .permissionFailure: status = .forbidden
        case .notAuthenticated: status = .unauthorized
        case .invalidArguments, .partialFailure, .batchRequestFailed: status = .badRequest
        case .networkUnavailable, .networkFailure: status = .serviceUnavailable
        default: status = .internalServerError
        }
        self.init(status, error.code.name, error.message.isEmpty ? error.description : error.message)
        if let server = error.serverRecord { details["serverRecord"] = RecordJSON.object(server) }
        if let retry = error.retryAfter { details["retryAfter"] = retry.inSeconds }
        if !error.partialErrors.isEmpty {
            details["partialErrors"] = Dictionary(
                error.partialErrors.map { ($0.key.description, "\($0.value.code.name): \($0.value.message)") },
                uniquingKeysWith: { a, _ in a })
        }
    }

    /// Any error as an API error: `APIError` as it is, `ShoalError` by its code, anything else a
    /// 500 `internalError` that names it.
    package static func from(_ error: any Error) -> APIError {
        if let e = error as? APIError { return e }
        if let e = error as? ShoalError { return APIError(e) }
        return APIError(.internalServerError, ShoalError.Code.internalError.name, "\(error)")
    }

    /// The JSON body.
    package var object: [String: Any] {
        var inner: [String: Any] = ["code": code, "message": message]
        for (k, v) in details { inner[k] = v }
        return ["error": inner]
    }
}

extension Duration {
    /// The duration in seconds.
    var inSeconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
