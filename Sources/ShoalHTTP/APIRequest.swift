// APIRequest: one HTTP request as the API's handlers see it — decoded path segments, query, a bounded body.

import Foundation
package import Hummingbird

/// A request with its path split into percent-decoded segments, its query parameters, and a
/// body read up to the configured limit.
package struct APIRequest: Sendable {
    /// The request as Hummingbird received it.
    package var request: Request
    /// The path's segments after `/api/v1`, percent-decoded (`notes%40IX6Y…` is `notes@IX6Y…`).
    package var segments: [String]
    /// The largest body taken, in bytes.
    package var maxBodyBytes: Int

    /// The query parameter `name`, decoded as HTML forms, browsers' `URLSearchParams` and
    /// `curl --data-urlencode` encode it (`+` is a space, `%2B` a plus); nil when absent, and the
    /// first when it is repeated.
    package func query(_ name: String) -> String? {
        guard let query = request.uri.query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard Self.formDecoded(parts[0]) == name else { continue }
            return parts.count == 2 ? Self.formDecoded(parts[1]) ?? String(parts[1]) : ""
        }
        return nil
    }

    /// `text` with `+` read as a space, then percent-decoded; nil when the escapes are not UTF-8.
    static func formDecoded(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// The integer query parameter `name` within `range`, or `defaultValue` when absent.
    /// - Throws: ``APIError`` 400 naming the parameter and its range.
    package func integer(_ name: String, in range: ClosedRange<Int>, default defaultValue: Int) throws(APIError) -> Int
    {
        guard let text = query(name) else { return defaultValue }
        guard let n = Int(text), range.contains(n) else {
            throw APIError.invalid(
                "query parameter \(name)=\(text.prefix(40)) must be an integer \(range.lowerBound)…\(range.upperBound)")
        }
        return n
    }

    /// The body as JSON, read up to ``maxBodyBytes``.
    /// - Throws: ``APIError`` 413 over the limit, 400 when it is not JSON.
    package func json() async throws(APIError) -> JSONValue {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: maxBodyBytes)
        } catch {
            throw APIError.tooLarge(limit: maxBodyBytes)
        }
        return try JSONValue.parse(Array(buffer.readableBytesView))
    }

    /// The path's segments, percent-decoded; nil when a segment's escapes are not UTF-8.
    static func segments(of path: String) -> [String]? {
        var out = [String]()
        for s in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let decoded = String(s).removingPercentEncoding else { return nil }
            out.append(decoded)
        }
        return out
    }
}

extension APIError {
    /// A request body over the limit.
    package static func tooLarge(limit: Int) -> APIError {
        APIError(
            .contentTooLarge, "payloadTooLarge",
            "the request body is over the limit of \(limit) bytes; send less (save records one at a time)")
    }
}
