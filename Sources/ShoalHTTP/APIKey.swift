// APIKey: the secret every HTTP API request carries, kept in the data directory (mode 0600).

import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP API's key: 32 random bytes as 43 characters of base64url, in `DATA/http-api.key`
/// (mode 0600). `shoal init` writes it; a data directory made before the HTTP API gets one the
/// first time `shoal serve` starts.
package struct APIKey: Sendable, Equatable, CustomStringConvertible {
    /// The key's text, as clients send it.
    package let text: String

    /// A key of this text (for tests and the daemon's configuration).
    package init(text: String) { self.text = text }

    /// The file that holds the key of the data directory `directory`.
    package static func path(in directory: String) -> String { directory + "/http-api.key" }

    /// A new random key.
    package static func random() -> APIKey {
        var g = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0 ... .max, using: &g) }
        let text = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
                of: "=", with: "")
        return APIKey(text: text)
    }

    /// The key of the data directory `directory`, made (mode 0600) if it has none yet.
    /// - Throws: ``APIKeyError`` when the file cannot be read or written, or holds no key.
    package static func loadOrCreate(in directory: String) throws(APIKeyError) -> APIKey {
        let file = path(in: directory)
        if let existing = try load(in: directory) { return existing }
        let key = random()
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            // Another process made it meanwhile: take that one.
            if errno == EEXIST, let other = try load(in: directory) { return other }
            throw APIKeyError(path: file, reason: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        let line = key.text + "\n"
        let written = line.withCString { write(fd, $0, strlen($0)) }
        guard written == line.utf8.count, fsync(fd) == 0 else {
            throw APIKeyError(path: file, reason: String(cString: strerror(errno)))
        }
        return key
    }

    /// The key in `directory`, nil when there is no key file.
    /// - Throws: ``APIKeyError`` when the file is unreadable, readable by others, or not a key.
    package static func load(in directory: String) throws(APIKeyError) -> APIKey? {
        let file = path(in: directory)
        var info = stat()
        guard stat(file, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw APIKeyError(path: file, reason: String(cString: strerror(errno)))
        }
        guard info.st_mode & 0o077 == 0 else {
            throw APIKeyError(path: file, reason: "its mode lets other users read it; run chmod 600 \(file)")
        }
        guard info.st_size <= 1024, let data = FileManager.default.contents(atPath: file) else {
            throw APIKeyError(
                path: file, reason: "unreadable or over 1 KiB; delete it and a new key is made at the next start")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.count >= 16,
            text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else {
            throw APIKeyError(
                path: file,
                reason:
                    "it holds no key (at least 16 letters, digits, - or _); delete it and a new key is made at the next start"
            )
        }
        return APIKey(text: text)
    }

    /// Whether `candidate` is this key, compared in time that does not depend on where they differ.
    package func matches(_ candidate: Substring) -> Bool {
        let a = Array(text.utf8), b = Array(candidate.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<a.count { difference |= a[i] ^ (i < b.count ? b[i] : 0) }
        return difference == 0
    }

    /// Hidden: a key never reaches a log by accident.
    package var description: String { "APIKey(…)" }
}

/// The API key file could not be read or written.
package struct APIKeyError: Error, CustomStringConvertible {
    /// The key file.
    package let path: String
    /// What went wrong, and the fix.
    package let reason: String
    package var description: String { "HTTP API key \(path): \(reason)" }
}
