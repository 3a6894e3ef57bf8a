// POSIXFile: a file descriptor and path-level operations (open, read, write, fsync, rename,
// readdir) through an AssetFileSystem, each failure turned into an AssetError naming the path.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Names for system error numbers.
enum SystemError {
    /// The C library's text for `code`, e.g. "No such file or directory".
    static func describe(_ code: Int32) -> String {
        guard let p = strerror(code) else { return "error \(code)" }
        return String(cString: p)
    }
}

/// An open file descriptor. Close it with ``close()``; it is not closed on deinit (it is a value).
package struct POSIXFile {
    let fd: Int32
    let path: String
    /// The file system it was opened on: the store's own (``AssetFileSystem``) or the real one.
    let fs: any AssetFileSystem

    /// What `stat` says of a file: enough to notice a change during an import.
    package struct Status: Equatable {
        /// Bytes.
        package var size: Int64
        /// A regular file (not a directory, FIFO, device…).
        package var isRegular: Bool
        /// The modification time.
        package var modifiedSeconds: Int
        /// The modification time's nanoseconds.
        package var modifiedNanoseconds: Int

        /// A status with these fields.
        package init(size: Int64, isRegular: Bool, modifiedSeconds: Int, modifiedNanoseconds: Int) {
            self.size = size
            self.isRegular = isRegular
            self.modifiedSeconds = modifiedSeconds
            self.modifiedNanoseconds = modifiedNanoseconds
        }
    }

    /// Opens an existing file for reading. O_NONBLOCK keeps a FIFO at `path` from blocking the
    /// open (the caller then refuses it as not a regular file); regular files ignore the flag.
    static func openForReading(_ path: String, in fs: any AssetFileSystem = POSIXFileSystem()) throws(AssetError)
        -> POSIXFile
    {
        let fd = fs.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT || e == ENOTDIR { throw .assetFileNotFound(path) }
            throw .io("open", path, errno: e)
        }
        return POSIXFile(fd: fd, path: path, fs: fs)
    }

    /// Creates a new file for writing; fails if it exists.
    static func create(_ path: String, in fs: any AssetFileSystem = POSIXFileSystem()) throws(AssetError) -> POSIXFile {
        let fd = fs.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io("create", path, errno: errno) }
        return POSIXFile(fd: fd, path: path, fs: fs)
    }

    func close() { _ = fs.close(fd) }

    func status() throws(AssetError) -> Status {
        guard let status = fs.status(of: fd) else { throw .io("stat", path, errno: errno) }
        return status
    }

    /// Reads up to `buffer.count` bytes, fewer only at the end of the file; 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(AssetError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let n = fs.read(fd, base + done, buffer.count - done)
            if n > 0 { done += n; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            throw .io("read", path, errno: errno)
        }
        return done
    }

    /// Writes all of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) throws(AssetError) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = fs.write(fd, base + done, bytes.count - done)
            if n >= 0 { done += n; continue }
            if errno == EINTR { continue }
            throw .io("write", path, errno: errno)
        }
    }

    /// Asks the kernel to start writing the file's dirty pages to disk now, without waiting
    /// (Linux's `sync_file_range(SYNC_FILE_RANGE_WRITE)`); a later ``sync()`` then waits less.
    /// Does nothing where that call does not exist. Durability still comes from ``sync()``.
    func startWriteback() {
        fs.startWriteback(fd, 0, 0)
    }

    /// Flushes the file's data and metadata to stable storage.
    func sync() throws(AssetError) {
        guard fs.fsync(fd) == 0 else { throw .io("fsync", path, errno: errno) }
    }
}

extension POSIXFile.Status {
    init(_ st: stat) {
        size = Int64(st.st_size)
        isRegular = (st.st_mode & S_IFMT) == S_IFREG
        #if canImport(Darwin)
            modifiedSeconds = Int(st.st_mtimespec.tv_sec)
            modifiedNanoseconds = Int(st.st_mtimespec.tv_nsec)
        #else
            modifiedSeconds = Int(st.st_mtim.tv_sec)
            modifiedNanoseconds = Int(st.st_mtim.tv_nsec)
        #endif
    }
}

/// Path-level operations, on the real file system unless given the store's (``AssetFileSystem``).
enum FileSystem {
    /// `stat` of `path`, or nil when it does not exist.
    static func status(_ path: String, in fs: any AssetFileSystem = POSIXFileSystem()) throws(AssetError) -> POSIXFile
        .Status?
    {
        guard let status = fs.status(path) else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw .io("stat", path, errno: errno)
        }
        return status
    }

    /// Whether anything exists at `path`.
    static func exists(_ path: String, in fs: any AssetFileSystem = POSIXFileSystem()) -> Bool {
        fs.status(path) != nil
    }

    /// Renames atomically, replacing any file at `to`.
    static func rename(_ from: String, to: String, in fs: any AssetFileSystem = POSIXFileSystem()) throws(AssetError) {
        guard fs.rename(from, to) == 0 else { throw .io("rename to \(to) from", from, errno: errno) }
    }

    /// Removes a file; true if it existed.
    @discardableResult
    static func remove(_ path: String, in fs: any AssetFileSystem = POSIXFileSystem()) throws(AssetError) -> Bool {
        if fs.unlink(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw .io("unlink", path, errno: errno)
    }

    /// Removes an empty directory; true if it existed.
    @discardableResult
    static func removeDirectory(_ path: String, in fs: any AssetFileSystem = POSIXFileSystem()) throws(AssetError)
        -> Bool
    {
        if fs.rmdir(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw .io("rmdir", path, errno: errno)
    }

    /// Creates `path` and its missing parents. With `sync`, the folder holding each directory it
    /// creates is fsynced afterwards, so the new directories survive a power cut (a segment or
    /// manifest made durable inside a directory whose own entry was lost would be lost with it).
    static func createDirectories(_ path: String, sync: Bool = false, in fs: any AssetFileSystem = POSIXFileSystem())
        throws(AssetError)
    {
        var created: [String] = []
        try createDirectories(path, fs, &created)
        guard sync else { return }
        for p in created.reversed() {
            guard let slash = p.lastIndex(of: "/") else { continue }
            try syncDirectory(slash == p.startIndex ? "/" : String(p[..<slash]), in: fs)
        }
    }

    private static func createDirectories(_ path: String, _ fs: any AssetFileSystem, _ created: inout [String])
        throws(AssetError)
    {
        if fs.mkdir(path, 0o755) == 0 { created.append(path); return }
        if errno == EEXIST { return }
        guard errno == ENOENT, let slash = path.lastIndex(of: "/"), slash != path.startIndex else {
            throw .io("mkdir", path, errno: errno)
        }
        try createDirectories(String(path[..<slash]), fs, &created)
        if fs.mkdir(path, 0o755) == 0 { created.append(path); return }
        if errno != EEXIST { throw .io("mkdir", path, errno: errno) }
    }

    /// fsyncs a directory, so the renames and unlinks inside it are durable.
    static func syncDirectory(_ path: String, in fs: any AssetFileSystem = POSIXFileSystem()) throws(AssetError) {
        let fd = fs.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        guard fd >= 0 else { throw .io("open directory", path, errno: errno) }
        defer { _ = fs.close(fd) }
        guard fs.fsync(fd) == 0 else { throw .io("fsync directory", path, errno: errno) }
    }

    /// The names in a directory (not `.` or `..`); empty if it does not exist.
    static func contents(of path: String, in fs: any AssetFileSystem = POSIXFileSystem()) throws(AssetError) -> [String]
    {
        guard let names = fs.names(in: path) else {
            if errno == ENOENT { return [] }
            throw .io("opendir", path, errno: errno)
        }
        return names
    }

    /// The current directory joined to a relative `path`; `path` itself when absolute.
    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return cwd + "/" + path
    }
}

/// `sync_file_range`, which Glibc's Swift module does not export (it needs `_GNU_SOURCE`),
/// looked up once in the C library; nil elsewhere.
enum Writeback {
    typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32
    static let syncFileRange: SyncFileRange? = {
        #if os(Linux)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sync_file_range") else { return nil }
            return unsafeBitCast(symbol, to: SyncFileRange.self)
        #else
            return nil
        #endif
    }()
}
