// AssetFileSystem: the seam below the asset store — every system call it makes on its own files
// (segments, manifests, their folders) goes through one value of this protocol.

import CShoalThread
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The system calls the asset store makes on its own files, in the C library's shape: a call
/// that fails returns -1 (or nil) and leaves the reason in `errno`.
///
/// ``POSIXFileSystem`` calls the C library and is what a node uses; tests put a file system
/// that simulates the page cache and a power cut below the store (Spec/assets.md §3.5). Files the
/// user names — one to import, one to export to — are not the store's and never go through it.
package protocol AssetFileSystem: Sendable {
    /// `open(2)`: a descriptor, or -1.
    func open(_ path: String, _ flags: Int32, _ mode: UInt32) -> Int32
    /// A second descriptor on `path` for `O_DIRECT` writes, or -1 when the file system refuses them.
    func openDirectWrite(_ path: String) -> Int32
    /// `close(2)`.
    func close(_ fd: Int32) -> Int32
    /// `read(2)`: bytes read, 0 at the end, -1.
    func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int
    /// `write(2)`: bytes written or -1.
    func write(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int
    /// `pread(2)`.
    func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) -> Int
    /// `pwrite(2)`.
    func pwrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ offset: Int64) -> Int
    /// `fsync(2)`: a file's data and metadata, or a directory's entries.
    func fsync(_ fd: Int32) -> Int32
    /// `fdatasync(2)`: a file's data and the metadata needed to read it back.
    func fdatasync(_ fd: Int32) -> Int32
    /// Starts writeback of a range without waiting (`sync_file_range(SYNC_FILE_RANGE_WRITE)`);
    /// promises nothing about durability. `count` 0 means to the end of the file.
    func startWriteback(_ fd: Int32, _ offset: Int64, _ count: Int64)
    /// `fstat(2)`, or nil.
    func status(of fd: Int32) -> POSIXFile.Status?
    /// `stat(2)`, or nil.
    func status(_ path: String) -> POSIXFile.Status?
    /// `rename(2)`: 0 or -1.
    func rename(_ from: String, _ to: String) -> Int32
    /// `unlink(2)`: 0 or -1.
    func unlink(_ path: String) -> Int32
    /// `rmdir(2)`: 0 or -1.
    func rmdir(_ path: String) -> Int32
    /// `mkdir(2)`: 0 or -1.
    func mkdir(_ path: String, _ mode: UInt32) -> Int32
    /// The names in a directory, without `.` and `..`, or nil (`opendir(3)` and `readdir(3)`).
    func names(in path: String) -> [String]?
}

/// The asset store's files on the real file system: each call is the C library's.
package struct POSIXFileSystem: AssetFileSystem {
    package init() {}

    package func open(_ path: String, _ flags: Int32, _ mode: UInt32) -> Int32 { systemOpen(path, flags, mode) }
    package func openDirectWrite(_ path: String) -> Int32 { shoal_open_direct_write(path) }
    package func close(_ fd: Int32) -> Int32 { systemClose(fd) }
    package func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        systemRead(fd, buffer, count)
    }
    package func write(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { systemWrite(fd, bytes, count) }
    package func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) -> Int {
        systemPread(fd, buffer, count, offset)
    }
    package func pwrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ offset: Int64) -> Int {
        systemPwrite(fd, bytes, count, offset)
    }
    package func fsync(_ fd: Int32) -> Int32 { systemFsync(fd) }
    package func fdatasync(_ fd: Int32) -> Int32 { systemFdatasync(fd) }
    package func startWriteback(_ fd: Int32, _ offset: Int64, _ count: Int64) {
        _ = Writeback.syncFileRange?(fd, offset, count, 2)
    }
    package func status(of fd: Int32) -> POSIXFile.Status? {
        var st = stat()
        return fstat(fd, &st) == 0 ? POSIXFile.Status(st) : nil
    }
    package func status(_ path: String) -> POSIXFile.Status? {
        var st = stat()
        return stat(path, &st) == 0 ? POSIXFile.Status(st) : nil
    }
    package func rename(_ from: String, _ to: String) -> Int32 { systemRename(from, to) }
    package func unlink(_ path: String) -> Int32 { systemUnlink(path) }
    package func rmdir(_ path: String) -> Int32 { systemRmdir(path) }
    package func mkdir(_ path: String, _ mode: UInt32) -> Int32 { systemMkdir(path, mode) }
    package func names(in path: String) -> [String]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

// The C functions whose names the methods above reuse.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: UInt32) -> Int32 { open(path, flags, mode_t(mode)) }
private func systemClose(_ fd: Int32) -> Int32 { close(fd) }
private func systemRead(_ fd: Int32, _ p: UnsafeMutableRawPointer, _ n: Int) -> Int { read(fd, p, n) }
private func systemWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int { write(fd, p, n) }
private func systemPread(_ fd: Int32, _ p: UnsafeMutableRawPointer, _ n: Int, _ o: Int64) -> Int {
    pread(fd, p, n, off_t(o))
}
private func systemPwrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int, _ o: Int64) -> Int {
    pwrite(fd, p, n, off_t(o))
}
private func systemFsync(_ fd: Int32) -> Int32 { fsync(fd) }
private func systemFdatasync(_ fd: Int32) -> Int32 { fdatasync(fd) }
private func systemRename(_ a: String, _ b: String) -> Int32 { rename(a, b) }
private func systemUnlink(_ path: String) -> Int32 { unlink(path) }
private func systemRmdir(_ path: String) -> Int32 { rmdir(path) }
private func systemMkdir(_ path: String, _ mode: UInt32) -> Int32 { mkdir(path, mode_t(mode)) }
