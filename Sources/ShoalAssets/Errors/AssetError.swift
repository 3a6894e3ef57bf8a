// AssetError: the error every asset-store operation throws, with CloudKit's asset codes.

public import ShoalWire
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The error an ``AssetStore`` operation throws.
///
/// Shaped like ShoalStore's `ShoalError` (after swift-certificates' `CertificateError`): a struct
/// with an extensible ``code`` (compare with the static members, e.g.
/// `error.code == .assetNotAvailable`), a ``message`` that says what failed, on which path or hash,
/// and what to do, the ``asset`` or chunk hash and the ``path`` concerned when there is one, and
/// the file and line that raised it. Codes carry CloudKit's names where they apply.
public struct AssetError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable name. New codes may be added; existing ones never change.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The stable camelCase name, as CloudKit spells it.
        public let name: String

        package init(_ name: String) { self.name = name }

        /// The file to import does not exist or is not a regular file.
        public static let assetFileNotFound = Code("assetFileNotFound")
        /// The store does not hold the asset (no manifest) or some of its chunks: fetch it from a
        /// peer (``AssetStore/missingChunks(of:)-(Asset)`` says which chunks), or import it again.
        public static let assetNotAvailable = Code("assetNotAvailable")
        /// Bytes do not match their hash: a chunk or manifest file changed on disk, a chunk from a
        /// peer is not the chunk it claims to be, or a file changed while it was being imported.
        public static let assetFileModified = Code("assetFileModified")
        /// A size limit was exceeded; the message names the limit and the setting that raises it.
        public static let limitExceeded = Code("limitExceeded")
        /// A manifest is malformed: its chunk sizes do not add up, break the chunking rules, or do
        /// not decode.
        public static let invalidArguments = Code("invalidArguments")
        /// The file system refused an operation; the message names the path and the system's reason.
        public static let io = Code("io")

        /// The code's stable name.
        public var description: String { name }
    }

    final class Backing: Sendable {
        let code: Code
        let message: String
        let hash: ContentHash?
        let path: String?
        let errno: Int32?
        let file: String
        let line: Int

        init(code: Code, message: String, hash: ContentHash?, path: String?, errno: Int32?, file: String, line: Int) {
            self.code = code
            self.message = message
            self.hash = hash
            self.path = path
            self.errno = errno
            self.file = file
            self.line = line
        }
    }

    let backing: Backing

    /// What went wrong.
    public var code: Code { backing.code }
    /// What failed, on which path or hash, and what to do about it.
    public var message: String { backing.message }
    /// The asset or chunk hash concerned, when there is one.
    public var hash: ContentHash? { backing.hash }
    /// The file-system path concerned, when there is one.
    public var path: String? { backing.path }
    /// For `io`: the system's error number.
    public var errno: Int32? { backing.errno }
    /// The source file that raised the error.
    public var file: String { backing.file }
    /// The line that raised the error.
    public var line: Int { backing.line }

    /// `AssetError.<code>: <message>`.
    public var description: String { "AssetError.\(code.name): \(message)" }

    package init(
        _ code: Code, _ message: String, hash: ContentHash? = nil, path: String? = nil, errno: Int32? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        backing = Backing(code: code, message: message, hash: hash, path: path, errno: errno, file: file, line: line)
    }
}

extension AssetError {
    /// The file to import is missing.
    package static func assetFileNotFound(
        _ path: String, _ why: String = "does not exist",
        file: String = #fileID, line: Int = #line
    ) -> AssetError {
        AssetError(
            .assetFileNotFound,
            "cannot import \(path): it \(why); check the path (relative paths are resolved against the current directory)",
            path: path, file: file, line: line)
    }

    /// The store has no manifest for the asset.
    package static func noManifest(_ hash: ContentHash, file: String = #fileID, line: Int = #line) -> AssetError {
        AssetError(
            .assetNotAvailable,
            "asset \(hash) is not in this store (no manifest); fetch its manifest and chunks from a peer, or import the file again",
            hash: hash, file: file, line: line)
    }

    /// A chunk the asset needs is not stored.
    package static func missingChunk(
        _ chunk: ContentHash, of asset: ContentHash?, file: String = #fileID, line: Int = #line
    ) -> AssetError {
        let of = asset.map { " of asset \($0)" } ?? ""
        return AssetError(
            .assetNotAvailable,
            "chunk \(chunk)\(of) is not in this store; fetch the chunks missingChunks(of:) lists from a peer, or import the asset again",
            hash: chunk, file: file, line: line)
    }

    /// Bytes on disk or from a peer do not hash to what they claim.
    package static func modified(
        _ what: String, hash: ContentHash?, path: String? = nil,
        file: String = #fileID, line: Int = #line
    ) -> AssetError {
        AssetError(.assetFileModified, what, hash: hash, path: path, file: file, line: line)
    }

    /// The asset is larger than the store accepts.
    package static func tooLarge(_ size: Int64, limit: Int64, path: String?, file: String = #fileID, line: Int = #line)
        -> AssetError
    {
        let what = path.map { "file \($0)" } ?? "the asset"
        return AssetError(
            .limitExceeded,
            "\(what) is \(size) bytes or more, over the asset size limit of \(limit) bytes (AssetStore.Configuration.maxAssetBytes); raise that setting to store larger assets",
            path: path, file: file, line: line)
    }

    /// A manifest is malformed.
    package static func invalidManifest(_ hash: ContentHash?, _ why: String, file: String = #fileID, line: Int = #line)
        -> AssetError
    {
        let name = hash.map { "manifest of asset \($0)" } ?? "manifest"
        return AssetError(
            .invalidArguments,
            "\(name) is malformed: \(why); ask the peer for it again, or import the asset from its file",
            hash: hash, file: file, line: line)
    }

    /// A system call failed on `path`. A full disk (`ENOSPC`, `EDQUOT`) says so: the façade
    /// maps it to `quotaExceeded`.
    package static func io(
        _ operation: String, _ path: String, errno code: Int32, file: String = #fileID, line: Int = #line
    ) -> AssetError {
        if code == ENOSPC || code == EDQUOT {
            return AssetError(
                .io,
                "\(operation) \(path) failed: the disk holding it is full (\(SystemError.describe(code)), errno \(code)); nothing of the interrupted import or fetch is kept: free space on that disk, then retry",
                path: path, errno: code, file: file, line: line)
        }
        return AssetError(
            .io,
            "\(operation) \(path) failed: \(SystemError.describe(code)) (errno \(code)); check that the directory exists, is writable and the disk is not full",
            path: path, errno: code, file: file, line: line)
    }
}
