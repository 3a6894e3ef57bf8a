// IdentityError: why a device identity could not be created, read or trusted.

/// The error ``DeviceIdentity`` throws: a code to branch on and a detail that names the files
/// involved and how to fix the problem. Loading never traps on what it reads.
package struct IdentityError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. An extensible struct: new codes never break existing `switch` statements.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The stable name of the code.
        package let name: String
        init(_ name: String) { self.name = name }

        /// A file could not be read, written, renamed or given its mode.
        package static let io = Code("io")
        /// A file is not the PEM it should be (not PEM, not a P-256 key, not an X.509 certificate).
        package static let malformed = Code("malformed")
        /// The private key and the certificate do not belong together, or the certificate's
        /// signature does not verify with its own key.
        package static let mismatch = Code("mismatch")
        /// The certificate is there but the private key is not: the identity cannot be used.
        package static let missingKey = Code("missing_key")

        package var description: String { name }
    }

    /// What went wrong.
    package let code: Code
    /// What was found, in which file, and how to fix it.
    package let detail: String
    /// Where in Shoal the error was raised.
    package let file: String
    package let line: Int

    init(_ code: Code, _ detail: String, file: String, line: Int) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }

    package var description: String { detail }

    package static func io(_ detail: String, file: String = #fileID, line: Int = #line) -> IdentityError {
        IdentityError(.io, detail, file: file, line: line)
    }

    package static func malformed(_ detail: String, file: String = #fileID, line: Int = #line) -> IdentityError {
        IdentityError(.malformed, detail, file: file, line: line)
    }

    package static func mismatch(_ detail: String, file: String = #fileID, line: Int = #line) -> IdentityError {
        IdentityError(.mismatch, detail, file: file, line: line)
    }

    package static func missingKey(_ detail: String, file: String = #fileID, line: Int = #line) -> IdentityError {
        IdentityError(.missingKey, detail, file: file, line: line)
    }
}
