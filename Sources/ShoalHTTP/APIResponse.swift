// APIResponse: JSON, error and plain responses with the headers every API answer carries.

import Foundation
import HTTPTypes
import Hummingbird

/// Builds the API's responses.
enum APIResponse {
    /// `object` as pretty, key-sorted JSON.
    static func json(_ object: Any, status: HTTPResponse.Status = .ok) -> Response {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        return bytes(Array(data), contentType: "application/json", status: status)
    }

    /// The JSON body of `error`, with `Retry-After` for a rate limit and `WWW-Authenticate` for 401.
    static func error(_ error: APIError) -> Response {
        var response = json(error.object, status: error.status)
        if error.status == .unauthorized { response.headers[.wwwAuthenticate] = "Bearer realm=\"shoal\"" }
        if let retry = error.details["retryAfter"] as? Double {
            response.headers[.retryAfter] = String(Int(retry.rounded(.up)))
        }
        return response
    }

    /// `bytes` with `contentType`.
    static func bytes(_ bytes: [UInt8], contentType: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-store"
        headers[.xContentTypeOptions] = "nosniff"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

extension HTTPField.Name {
    /// `X-API-Key`: the API key.
    static let apiKey = HTTPField.Name("X-API-Key")!
    /// `X-Frame-Options`.
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
}
