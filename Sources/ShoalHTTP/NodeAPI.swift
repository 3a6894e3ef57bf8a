// NodeAPI: the HTTP API's front door — the key, the cross-origin rule, the body limit, then the route.

import Foundation
import HTTPTypes
package import Hummingbird
package import Shoal

/// Answers every HTTP request of one node: `/api/v1/…` (JSON, key required), `/metrics`
/// (Prometheus text), `/openapi.json` and the console (`/`, `/console/…`).
///
/// Order of checks for the API: the key (401, the same answer for a missing and a wrong key),
/// then a write from another origin (403: a browser page elsewhere cannot write even with the
/// key, which it has no way to read), then the declared body size (413), then the route (404,
/// or 405 with `Allow`).
package struct NodeAPI: Sendable {
    package let node: ShoalNode
    package let configuration: HTTPConfiguration
    package let metrics: NodeMetrics
    package let hub: ChangeHub
    package let conflicts: ConflictLog
    let resources: ConsoleResources

    package init(
        node: ShoalNode, configuration: HTTPConfiguration, metrics: NodeMetrics, hub: ChangeHub, conflicts: ConflictLog
    ) {
        self.node = node
        self.configuration = configuration
        self.metrics = metrics
        self.hub = hub
        self.conflicts = conflicts
        self.resources = ConsoleResources()
    }

    /// The response to `request`: never throws; every failure is a JSON error.
    package func respond(to request: Request) async -> Response {
        let path = request.uri.path
        guard let segments = APIRequest.segments(of: path) else {
            return APIResponse.error(.invalid("the path \(path.prefix(80)) has escapes that are not UTF-8"))
        }
        if segments.first != "api" { return await publicResponse(request, segments: segments) }
        guard isAuthorized(request) else { return APIResponse.error(.unauthorized) }
        if request.method != .get, request.method != .head, let refusal = crossOriginRefusal(request) {
            return APIResponse.error(refusal)
        }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > configuration.maxBodyBytes {
            return APIResponse.error(.tooLarge(limit: configuration.maxBodyBytes))
        }
        guard segments.count >= 2, segments[1] == "v1" else {
            return APIResponse.error(
                APIError(
                    .notFound, "notFound",
                    "no such endpoint \(path.prefix(80)); the API is under /api/v1 (see /openapi.json)"))
        }
        let api = APIRequest(
            request: request, segments: Array(segments.dropFirst(2)), maxBodyBytes: configuration.maxBodyBytes)
        do {
            return try await route(api)
        } catch {
            return APIResponse.error(APIError.from(error))
        }
    }

    /// Whether the request carries the key: `X-API-Key: KEY` or `Authorization: Bearer KEY`.
    func isAuthorized(_ request: Request) -> Bool {
        if let key = request.headers[.apiKey] { return configuration.apiKey.matches(Substring(key)) }
        if let auth = request.headers[.authorization], auth.hasPrefix("Bearer ") {
            return configuration.apiKey.matches(auth.dropFirst("Bearer ".count))
        }
        return false
    }

    /// A 403 for a write whose `Origin` is not this server (`Host`); nil when it may go on.
    func crossOriginRefusal(_ request: Request) -> APIError? {
        guard let origin = request.headers[.origin] else { return nil }
        let host = request.head.authority ?? ""
        let originHost = origin.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? ""
        guard origin == "null" || originHost != host else { return nil }
        return APIError(
            .forbidden, "crossOrigin",
            "a write from origin \(origin.prefix(80)) to \(host.prefix(80)) is refused; send it from the console's own page or without an Origin header"
        )
    }

    /// The unauthenticated paths: the console, the OpenAPI document and the metrics.
    func publicResponse(_ request: Request, segments: [String]) async -> Response {
        guard request.method == .get || request.method == .head else {
            return APIResponse.error(
                APIError(.methodNotAllowed, "methodNotAllowed", "\(request.uri.path.prefix(80)) answers GET only"))
        }
        if segments.isEmpty { return resources.file("index.html") }
        if let p = Self.match(segments, "console/*") { return resources.file(p[0]) }
        if segments == ["openapi.json"] { return resources.file("openapi.json") }
        if segments == ["metrics"] { return await metrics.exposition(node: node) }
        return APIResponse.error(
            APIError(
                .notFound, "notFound",
                "no such page \(request.uri.path.prefix(80)); the console is at /, the API under /api/v1"))
    }

    /// The parameters of `segments` when they match `pattern` (segments joined by `/`, `*` for a
    /// parameter), else nil.
    static func match(_ segments: [String], _ pattern: String) -> [String]? {
        let parts = pattern.split(separator: "/")
        guard parts.count == segments.count else { return nil }
        var parameters = [String]()
        for (part, segment) in zip(parts, segments) {
            if part == "*" { parameters.append(segment) } else if part != segment { return nil }
        }
        return parameters
    }

    /// The handler for `request`'s method and path.
    func route(_ r: APIRequest) async throws -> Response {
        let m = r.request.method
        let s = r.segments
        if Self.match(s, "device") != nil {
            try allow(m, [.get]); return await device()
        }
        if Self.match(s, "devices") != nil {
            try allow(m, [.get, .post]); if m == .post { return try await trust(r) }
            return await devices()
        }
        if let p = Self.match(s, "devices/*") {
            try allow(m, [.delete]); return try await removeDevice(p[0])
        }
        if Self.match(s, "zones") != nil {
            try allow(m, [.get, .post]); if m == .post { return try await createZone(r) }
            return try await zones()
        }
        if let p = Self.match(s, "zones/*") {
            try allow(m, [.get, .delete]); if m == .delete { return try await deleteZone(p[0]) }
            return try await zone(p[0])
        }
        if let p = Self.match(s, "zones/*/members") {
            try allow(m, [.get]); return try await members(p[0])
        }
        if let p = Self.match(s, "zones/*/members/*") {
            try allow(m, [.put, .delete]); if m == .put { return try await share(p[0], p[1], r) }
            return try await unshare(p[0], p[1])
        }
        if let p = Self.match(s, "zones/*/records") {
            try allow(m, [.get]); return try await query(p[0], r)
        }
        if let p = Self.match(s, "zones/*/records/*") {
            try allow(m, [.get, .put, .delete])
            if m == .put { return try await put(p[0], p[1], r) }
            if m == .delete { return try await delete(p[0], p[1]) }
            return try await record(p[0], p[1], r)
        }
        if let p = Self.match(s, "zones/*/records/*/assets/*") {
            try allow(m, [.get]); return try await asset(p[0], p[1], p[2], r)
        }
        if let p = Self.match(s, "zones/*/changes") {
            try allow(m, [.get]); return try await changes(p[0], r)
        }
        if Self.match(s, "status") != nil {
            try allow(m, [.get]); return try await status()
        }
        if Self.match(s, "conflicts") != nil {
            try allow(m, [.get]); return await conflictList()
        }
        if Self.match(s, "events") != nil {
            try allow(m, [.get]); return try await events()
        }
        throw APIError(
            .notFound, "notFound", "no such endpoint /api/v1/\(s.joined(separator: "/").prefix(80)) (see /openapi.json)"
        )
    }

    /// Throws a 405 naming the allowed methods unless `method` is one of them.
    private func allow(_ method: HTTPRequest.Method, _ allowed: [HTTPRequest.Method]) throws(APIError) {
        if allowed.contains(method) || (method == .head && allowed.contains(.get)) { return }
        var e = APIError(
            .methodNotAllowed, "methodNotAllowed",
            "this endpoint answers \(allowed.map(\.rawValue).joined(separator: ", ")), not \(method.rawValue)")
        e.details["allow"] = allowed.map(\.rawValue)
        throw e
    }
}
