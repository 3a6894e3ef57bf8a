// ConsoleResources: the web console's files and the OpenAPI document, read once from the package's resources.

import Foundation
import Hummingbird

/// The files `/`, `/console/NAME` and `/openapi.json` serve, read at start from the resource
/// bundle SwiftPM places next to the `shoal` binary (`Shoal_ShoalHTTP.resources`). A binary
/// copied without its bundle answers those paths with a 404 that says so; the API works alike.
struct ConsoleResources: Sendable {
    /// The files by name, with their content types.
    private let files: [String: (bytes: [UInt8], type: String)]
    /// Where the files were looked for, for the 404.
    private let searched: [String]

    /// The content type of each file name extension served.
    static let types = ["html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
                        "json": "application/json", "svg": "image/svg+xml", "png": "image/png"]

    init() {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let dir = URL(fileURLWithPath: executable).deletingLastPathComponent().path
        let candidates = [dir + "/Shoal_ShoalHTTP.resources/Console", dir + "/Shoal_ShoalHTTP.resources"]
        searched = candidates
        var found = [String: (bytes: [UInt8], type: String)]()
        for c in candidates {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: c), names.contains("index.html") else { continue }
            for n in names {
                guard let type = Self.types[(n as NSString).pathExtension], let data = FileManager.default.contents(atPath: c + "/" + n) else { continue }
                found[n] = (Array(data), type)
            }
            break
        }
        files = found
    }

    /// The file `name`, or a JSON 404.
    func file(_ name: String) -> Response {
        if let f = files[name] {
            var response = APIResponse.bytes(f.bytes, contentType: f.type)
            // The page runs only its own scripts, and no other site may frame it (clickjacking).
            response.headers[.contentSecurityPolicy] = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
            response.headers[.xFrameOptions] = "DENY"
            return response
        }
        if files.isEmpty {
            return APIResponse.error(APIError(.notFound, "notFound", "the console's files are not installed: copy Shoal_ShoalHTTP.resources from the build directory next to the shoal binary (looked in \(searched.joined(separator: ", ")))"))
        }
        return APIResponse.error(APIError(.notFound, "notFound", "no console file \(name.prefix(80))"))
    }
}
