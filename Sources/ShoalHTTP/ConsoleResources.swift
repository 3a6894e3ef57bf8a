// ConsoleResources: the web console's files and the OpenAPI document, compiled into the binary.

import Hummingbird

/// The files `/`, `/console/NAME` and `/openapi.json` serve. SwiftPM compiles them into the
/// module (`embedInCode` in Package.swift), so a `shoal` binary copied anywhere serves them.
struct ConsoleResources: Sendable {
    /// The files by name, with their content types.
    private let files: [String: (bytes: [UInt8], type: String)] = [
        "index.html": (PackageResources.index_html, "text/html; charset=utf-8"),
        "console.css": (PackageResources.console_css, "text/css; charset=utf-8"),
        "console.js": (PackageResources.console_js, "text/javascript; charset=utf-8"),
        "qrcode.js": (PackageResources.qrcode_js, "text/javascript; charset=utf-8"),
        "openapi.json": (PackageResources.openapi_json, "application/json")
    ]

    init() {}

    /// The file `name`, or a JSON 404.
    func file(_ name: String) -> Response {
        if let f = files[name] {
            var response = APIResponse.bytes(f.bytes, contentType: f.type)
            // The page runs only its own scripts, and no other site may frame it (clickjacking).
            response.headers[.contentSecurityPolicy] =
                "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
            response.headers[.xFrameOptions] = "DENY"
            return response
        }
        return APIResponse.error(APIError(.notFound, "notFound", "no console file \(name.prefix(80))"))
    }
}
