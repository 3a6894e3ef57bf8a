// ObjectDirectory: content-addressed files under <root>/<two hex digits>/<64 hex digits>,
// written to a temporary file, fsynced and renamed into place.

import ShoalWire

/// A directory of immutable files named by a SHA-256: `<root>/ab/abcdef…` (256 shard folders).
///
/// A file appears under its name only once complete: it is written in ``temporary``, fsynced when
/// ``sync`` is on, and renamed into its shard (atomic on POSIX). A crash leaves at most a stray
/// temporary file, which garbage collection removes. Renames become durable once the shard folder
/// is fsynced: writers collect the shards they touched and call ``syncShards(_:)`` before they
/// publish anything that refers to the new files.
struct ObjectDirectory: Sendable {
    /// The folder holding the shard folders.
    let root: String
    /// The folder for files being written (the same file system as `root`).
    let temporary: String
    /// Whether files and shard folders are fsynced.
    let sync: Bool
    /// The file system the files are on.
    let fs: any AssetFileSystem

    /// Creates the root and the temporary folder when missing, and the 256 shard folders when
    /// `createShards` (false for a directory that is only read: older stores' chunk files).
    init(
        root: String, temporary: String, sync: Bool, createShards: Bool = true,
        fs: any AssetFileSystem = POSIXFileSystem()
    ) throws(AssetError) {
        self.root = root
        self.temporary = temporary
        self.sync = sync
        self.fs = fs
        try FileSystem.createDirectories(temporary, sync: sync, in: fs)
        try FileSystem.createDirectories(root, sync: sync, in: fs)
        for i in 0..<256 where createShards && !FileSystem.exists(root + "/" + Self.shardName(UInt8(i)), in: fs) {
            try FileSystem.createDirectories(root + "/" + Self.shardName(UInt8(i)), in: fs)
        }
        if sync { try FileSystem.syncDirectory(root, in: fs) }
    }

    static func shardName(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
    }

    /// The shard folder of `hash`.
    func shard(of hash: ContentHash) -> String {
        root + "/" + Self.shardName(UInt8(truncatingIfNeeded: hash.words.0 >> 56))
    }

    /// Where the file named `hash` lives.
    func path(of hash: ContentHash) -> String { shard(of: hash) + "/" + hash.hex }

    /// Whether the file named `hash` exists.
    func contains(_ hash: ContentHash) -> Bool { FileSystem.exists(path(of: hash), in: fs) }

    /// A file written in ``temporary`` and not yet under its name: ``publish(_:)`` or ``discard(_:)`` it.
    struct StagedFile {
        let hash: ContentHash
        let file: POSIXFile
    }

    /// Writes `parts` back to back into a new temporary file and, when ``sync`` is on, starts
    /// its writeback without waiting for it, so that the fsync in ``publish(_:)`` — issued after
    /// more work was done — waits less.
    func stage(_ hash: ContentHash, parts: [UnsafeRawBufferPointer]) throws(AssetError) -> StagedFile {
        let file = try POSIXFile.create(temporaryPath(for: hash), in: fs)
        do throws(AssetError) {
            for p in parts { try file.write(p) }
        } catch {
            discard(StagedFile(hash: hash, file: file))
            throw error
        }
        if sync { file.startWriteback() }
        return StagedFile(hash: hash, file: file)
    }

    /// fsyncs a staged file (when ``sync`` is on), closes it and renames it to its name, replacing
    /// any file of that name. Returns the shard folder, which the caller fsyncs
    /// (``syncShards(_:)``) before it relies on the rename surviving a power loss.
    func publish(_ staged: StagedFile) throws(AssetError) -> String {
        do throws(AssetError) {
            if sync { try staged.file.sync() }
            staged.file.close()
            try FileSystem.rename(staged.file.path, to: path(of: staged.hash), in: fs)
        } catch {
            staged.file.close()
            _ = try? FileSystem.remove(staged.file.path, in: fs)
            throw error
        }
        return shard(of: staged.hash)
    }

    /// Closes and removes a staged file.
    func discard(_ staged: StagedFile) {
        staged.file.close()
        _ = try? FileSystem.remove(staged.file.path, in: fs)
    }

    /// Writes `parts` as the file named `hash` (``stage(_:parts:)`` then ``publish(_:)``).
    func write(_ hash: ContentHash, parts: [UnsafeRawBufferPointer]) throws(AssetError) -> String {
        try publish(try stage(hash, parts: parts))
    }

    /// A fresh temporary path: `<temporary>/<hash>.<random>.tmp`.
    func temporaryPath(for hash: ContentHash) -> String {
        temporary + "/" + hash.hex + "." + String(UInt64.random(in: 0 ... .max), radix: 36) + ".tmp"
    }

    /// fsyncs the given shard folders (when ``sync`` is on).
    func syncShards(_ shards: Set<String>) throws(AssetError) {
        guard sync else { return }
        for s in shards.sorted() { try FileSystem.syncDirectory(s, in: fs) }
    }

    /// Reads the whole file named `hash` into `buffer` (replacing its contents), refusing files
    /// over `maxBytes`. Returns false when there is no such file.
    func read(_ hash: ContentHash, into buffer: inout [UInt8], maxBytes: Int) throws(AssetError) -> Bool {
        try read(at: path(of: hash), hash: hash, into: &buffer, maxBytes: maxBytes)
    }

    /// Reads the whole file at `p` (named `hash`, or a staged file of it) into `buffer`,
    /// refusing files over `maxBytes`. Returns false when there is no such file.
    func read(at p: String, hash: ContentHash, into buffer: inout [UInt8], maxBytes: Int) throws(AssetError) -> Bool {
        let file: POSIXFile
        do { file = try POSIXFile.openForReading(p, in: fs) } catch  where error.code == .assetFileNotFound {
            return false
        }
        defer { file.close() }
        let size = try file.status().size
        guard size <= Int64(maxBytes) else {
            throw .modified(
                "\(p) has \(size) bytes, more than any valid file of its kind (\(maxBytes)); it was changed on disk — remove it and fetch or import the asset again",
                hash: hash, path: p)
        }
        let n = Int(size)
        buffer.removeAll(keepingCapacity: true)
        var got = 0
        var failure: AssetError?
        buffer.append(contentsOf: repeatElement(0, count: n))
        buffer.withUnsafeMutableBytes { raw in
            do throws(AssetError) { got = try file.read(into: raw) } catch { failure = error }
        }
        if let failure { throw failure }
        guard got == n else {
            throw .modified("\(p) changed size while being read; it was changed on disk", hash: hash, path: p)
        }
        return true
    }

    /// Removes the file named `hash`; true if it existed.
    @discardableResult
    func remove(_ hash: ContentHash) throws(AssetError) -> Bool { try FileSystem.remove(path(of: hash), in: fs) }

    /// Every well-named file in the shards. Names that are not 64 lowercase hex digits are skipped.
    func allHashes() throws(AssetError) -> [ContentHash] {
        var out: [ContentHash] = []
        for i in 0..<256 {
            // Missing shards (a read-only legacy directory) list as empty.
            for name in try FileSystem.contents(of: root + "/" + Self.shardName(UInt8(i)), in: fs)
            where name.utf8.count == 64 {
                if let h = ContentHash(hex: name), h.hex == name { out.append(h) }
            }
        }
        return out
    }
}
