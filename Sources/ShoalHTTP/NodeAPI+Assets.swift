// NodeAPI+Assets: an asset's bytes by record field, streamed, with byte ranges.

import Foundation
import HTTPTypes
import Hummingbird
import Shoal

extension NodeAPI {
    /// `GET /api/v1/zones/{zone}/records/{name}/assets/{field}`: the bytes of the asset in the
    /// field, fetched from a peer first when this node lacks them, streamed one chunk at a
    /// time. A `Range: bytes=FIRST-LAST` (or `FIRST-`, or `-SUFFIX`) header asks for part of it
    /// (206, with `Content-Range`); a range past the end is 416.
    func asset(_ zone: String, _ name: String, _ field: String, _ r: APIRequest) async throws -> Response {
        let record = try await node.record(for: Record.ID(name: name, zone: try zoneID(zone)))
        guard case .asset(let asset)? = record[field] else {
            throw APIError(
                .notFound, ShoalError.Code.unknownItem.name,
                "field \(field.prefix(80)) of record \(name.prefix(80)) holds no asset")
        }
        let size = Int(asset.size)
        var range = 0..<size
        var status = HTTPResponse.Status.ok
        if let header = r.request.headers[.range] {
            guard let wanted = Self.byteRange(header, size: size) else {
                var response = APIResponse.error(
                    APIError(
                        .rangeNotSatisfiable, "invalidArguments",
                        "Range \(header.prefix(60)) is not one range within the asset's \(size) bytes (bytes=FIRST-LAST)"
                    ))
                response.headers[.contentRange] = "bytes */\(size)"
                return response
            }
            range = wanted
            status = .partialContent
        }
        let bytes = try await node.contents(of: asset)
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        headers[.acceptRanges] = "bytes"
        headers[.eTag] = "\"\(asset.hash.hex)\""
        if status == .partialContent {
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
        }
        let wanted = range
        let body = ResponseBody(contentLength: wanted.count) { writer in
            var offset = 0
            for try await chunk in bytes {
                let start = offset, end = offset + chunk.count
                offset = end
                guard end > wanted.lowerBound else { continue }
                let lo = max(start, wanted.lowerBound) - start, hi = min(end, wanted.upperBound) - start
                if lo < hi { try await writer.write(ByteBuffer(bytes: chunk[lo..<hi])) }
                if end >= wanted.upperBound { break }
            }
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// The byte range a `Range` header asks for within `size` bytes; nil when it is not one
    /// satisfiable `bytes=` range.
    static func byteRange(_ header: String, size: Int) -> Range<Int>? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst("bytes=".count)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            guard let suffix = Int(last), suffix > 0, size > 0 else { return nil }
            return max(0, size - suffix)..<size
        }
        guard let a = Int(first), a >= 0, a < size else { return nil }
        if last.isEmpty { return a..<size }
        guard let b = Int(last), b >= a else { return nil }
        return a..<min(b + 1, size)
    }
}
