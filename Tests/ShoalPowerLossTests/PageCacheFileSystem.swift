// PageCacheFileSystem: an in-memory file system below the asset store that keeps what was synced
// apart from what is only in the page cache, and at a seeded event cuts the power.

@testable import ShoalAssets
import Synchronization
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An ``AssetFileSystem`` in memory that simulates the page cache and a power cut.
///
/// Reads see every write. What survives a cut is what was synced: a file's bytes as of its last
/// `fsync`/`fdatasync`, and a directory's entries as of its last `fsync` (a new name, an unlink or
/// a rename into it is durable only then; a rename is kept or undone whole). At the cut each write
/// and each name change since the last sync is, by the seed, dropped, kept, or — for writes —
/// torn at 512-byte sectors, some sectors kept and the rest dropped. From then on every call fails
/// with `EIO`, as the store's calls would on a machine that lost power; ``afterTheCut()`` is the
/// disk the next boot finds. It can also fill up (`ENOSPC` from a seeded write on) and, for the
/// test that shows a removed sync is caught, pretend to sync segment files without doing it.
final class PageCacheFileSystem: AssetFileSystem {
    static let sectorBytes = 512

    struct Inode {
        var isDirectory: Bool
        /// What reads see.
        var data: [UInt8] = []
        /// What survives a cut (before the seeded choices below).
        var durable: [UInt8] = []
        /// Writes since the last sync, in order.
        var pending: [(offset: Int, bytes: [UInt8])] = []
        /// A directory's entries as reads see them.
        var entries: [String: Int] = [:]
    }

    /// A change of names, durable once `commitDirectory` is fsynced.
    enum NameChange {
        case link(directory: Int, name: String, inode: Int)
        case unlink(directory: Int, name: String, inode: Int)
        case rename(from: Int, fromName: String, to: Int, toName: String, inode: Int)

        var commitDirectory: Int {
            switch self {
            case .link(let d, _, _), .unlink(let d, _, _): d
            case .rename(_, _, let to, _, _): to
            }
        }

        func apply(to names: inout [Int: [String: Int]]) {
            switch self {
            case .link(let d, let name, let inode): names[d, default: [:]][name] = inode
            case .unlink(let d, let name, let inode): if names[d]?[name] == inode { names[d]?[name] = nil }
            case .rename(let from, let fromName, let to, let toName, let inode):
                if names[from]?[fromName] == inode { names[from]?[fromName] = nil }
                names[to, default: [:]][toName] = inode
            }
        }
    }

    /// How a cut treats what was not synced.
    enum Loss: Int, CaseIterable { case dropAll, keepAll, someWrites, tornSectors }

    /// What one cut did.
    struct CutReport {
        var loss = Loss.dropAll
        var sectorsKept: UInt64 = 0
        var sectorsDropped: UInt64 = 0
        var namesUndone: UInt64 = 0
    }

    /// What a disk holds when nothing is in flight: the inodes and the directories' entries.
    struct Disk {
        var inodes: [Int: Inode] = [:]
        var names: [Int: [String: Int]] = [:]
        var nextInode = 2
    }

    struct State {
        var inodes: [Int: Inode] = [1: Inode(isDirectory: true)]
        var nextInode = 2
        /// Each directory's entries as a cut now would leave them (before the seeded choices).
        var durableNames: [Int: [String: Int]] = [1: [:]]
        var pendingNames: [NameChange] = []
        var handles: [Int32: (inode: Int, position: Int, path: String)] = [:]
        var nextDescriptor: Int32 = 100
        /// Mutating calls so far; the cut comes before the one numbered `cutAt` (0: never).
        var events: UInt64 = 0
        var cutAt: UInt64 = 0
        var cutRandom = SeededRandom(state: 0)
        /// The disk after the cut, once there was one.
        var image: Disk? = nil
        var report = CutReport()
        /// Writes so far; from the one numbered `fullAt` on (0: never) writes fail with ENOSPC.
        var writes: UInt64 = 0
        var fullAt: UInt64 = 0
        /// Syncs of files whose name ends so are reported done and do nothing.
        var ignoredSyncSuffix: String? = nil
        /// What the cut does with what was not synced; nil: chosen by the seed.
        var loss: Loss? = nil
    }

    private let state: Mutex<State>

    /// An empty disk whose cut (``cut(atCall:)``, ``cutNow()``) chooses what survives with
    /// `cutSeed`, or treats everything unsynced as `loss` says.
    init(cutSeed: UInt64 = 0, loss: Loss? = nil) {
        var s = State()
        s.cutRandom = SeededRandom(state: cutSeed)
        s.loss = loss
        state = Mutex(s)
    }

    private init(disk: Disk) {
        var s = State()
        s.inodes = disk.inodes
        s.durableNames = disk.names
        s.nextInode = disk.nextInode
        state = Mutex(s)
    }

    // MARK: Controls

    /// Cuts the power before the `n`th mutating call from now (0: never).
    func cut(atCall n: UInt64) { state.withLock { s in s.cutAt = n == 0 ? 0 : s.events + n } }

    /// Whether the power went off.
    var isCut: Bool { state.withLock { $0.image != nil } }

    /// Cuts the power now, unless it went off already.
    func cutNow() { state.withLock { s in if s.image == nil { Self.cut(&s) } } }

    /// What the cut did.
    var report: CutReport { state.withLock { $0.report } }

    /// The disk after the cut, as the next boot finds it (a fresh file system with nothing
    /// pending); nil before the cut.
    func afterTheCut() -> PageCacheFileSystem? {
        state.withLock { $0.image }.map { PageCacheFileSystem(disk: $0) }
    }

    /// Writes that would grow a file fail with `ENOSPC` from write number `n` on (counted from
    /// now); 0: space returns.
    func fillDisk(atWrite n: UInt64) {
        state.withLock { s in s.fullAt = n == 0 ? 0 : s.writes + n }
    }

    /// Syncs of files whose name ends with `suffix` do nothing (nil: they sync again).
    func ignoreSyncs(ofFilesEndingWith suffix: String?) { state.withLock { $0.ignoredSyncSuffix = suffix } }

    /// Mutating calls so far.
    var events: UInt64 { state.withLock { $0.events } }

    // MARK: The cut

    private static func cut(_ s: inout State) {
        var rng = s.cutRandom
        var report = CutReport()
        report.loss = s.loss ?? Loss.allCases[rng.below(Loss.allCases.count)]
        func keep() -> Bool {
            switch report.loss {
            case .dropAll: false
            case .keepAll: true
            case .someWrites, .tornSectors: rng.chance(50)
            }
        }
        var names = s.durableNames
        for change in s.pendingNames {
            if keep() { change.apply(to: &names) } else { report.namesUndone += 1 }
        }
        var image = Disk()
        // Only what the surviving names reach is on the next boot's disk.
        var reachable: [Int] = [1]
        var seen: Set<Int> = [1]
        var i = 0
        while i < reachable.count {
            for (_, child) in names[reachable[i]] ?? [:] where seen.insert(child).inserted { reachable.append(child) }
            i += 1
        }
        for id in reachable {
            guard let node = s.inodes[id] else { continue }
            var out = Inode(isDirectory: node.isDirectory)
            if node.isDirectory {
                out.entries = (names[id] ?? [:]).filter { seen.contains($0.value) }
                image.names[id] = out.entries
            } else {
                var bytes = node.durable
                for w in node.pending where !w.bytes.isEmpty {
                    let end = w.offset + w.bytes.count
                    // Whole writes (drop all, keep all, some writes) or sector by sector.
                    if report.loss == .tornSectors {
                        var from = w.offset
                        while from < end {
                            let to = min(end, (from / sectorBytes + 1) * sectorBytes)
                            if rng.chance(50) {
                                Self.put(w.bytes[(from - w.offset)..<(to - w.offset)], at: from, into: &bytes)
                                report.sectorsKept += 1
                            } else {
                                report.sectorsDropped += 1
                            }
                            from = to
                        }
                    } else {
                        let sectors = UInt64((end - 1) / sectorBytes - w.offset / sectorBytes + 1)
                        if keep() {
                            Self.put(w.bytes[...], at: w.offset, into: &bytes)
                            report.sectorsKept += sectors
                        } else {
                            report.sectorsDropped += sectors
                        }
                    }
                }
                out.data = bytes
                out.durable = bytes
            }
            image.inodes[id] = out
        }
        image.nextInode = s.nextInode
        s.image = image
        s.report = report
        s.handles = [:]
    }

    private static func put(_ bytes: ArraySlice<UInt8>, at offset: Int, into data: inout [UInt8]) {
        if data.count < offset + bytes.count {
            data.append(contentsOf: repeatElement(0, count: offset + bytes.count - data.count))
        }
        data.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
    }

    /// Counts a mutating call; false (errno EIO) when the power is off, cutting it first when
    /// this is the seeded call.
    private static func event(_ s: inout State) -> Bool {
        guard s.image == nil else { errno = EIO; return false }
        s.events += 1
        if s.cutAt != 0 && s.events >= s.cutAt {
            cut(&s)
            errno = EIO
            return false
        }
        return true
    }

    // MARK: Paths

    private static func split(_ path: String) -> [String] { path.split(separator: "/").map(String.init) }

    /// The inode at `path`, or nil with errno set.
    private static func resolve(_ s: State, _ path: String) -> Int? {
        var id = 1
        for part in split(path) {
            guard let node = s.inodes[id], node.isDirectory else { errno = ENOTDIR; return nil }
            guard let next = node.entries[part] else { errno = ENOENT; return nil }
            id = next
        }
        return id
    }

    /// The directory holding `path` and the last name, or nil with errno set.
    private static func parent(_ s: State, _ path: String) -> (directory: Int, name: String)? {
        var parts = split(path)
        guard let name = parts.popLast() else { errno = EINVAL; return nil }
        guard let d = resolve(s, "/" + parts.joined(separator: "/")) else { return nil }
        guard s.inodes[d]?.isDirectory == true else { errno = ENOTDIR; return nil }
        return (d, name)
    }

    private static func link(_ s: inout State, _ directory: Int, _ name: String, isDirectory: Bool) -> Int {
        let id = s.nextInode
        s.nextInode += 1
        s.inodes[id] = Inode(isDirectory: isDirectory)
        s.inodes[directory]?.entries[name] = id
        s.pendingNames.append(.link(directory: directory, name: name, inode: id))
        return id
    }

    // MARK: AssetFileSystem

    func open(_ path: String, _ flags: Int32, _ mode: UInt32) -> Int32 {
        state.withLock { s in
            let creating = flags & O_CREAT != 0
            guard s.image == nil else { errno = EIO; return -1 }
            var id = Self.resolve(s, path)
            if id != nil && creating && flags & O_EXCL != 0 { errno = EEXIST; return -1 }
            if id == nil {
                guard creating, errno == ENOENT, let (d, name) = Self.parent(s, path) else { return -1 }
                guard Self.event(&s) else { return -1 }
                id = Self.link(&s, d, name, isDirectory: false)
            }
            guard let id, let node = s.inodes[id] else { errno = ENOENT; return -1 }
            if flags & O_DIRECTORY != 0 && !node.isDirectory { errno = ENOTDIR; return -1 }
            let fd = s.nextDescriptor
            s.nextDescriptor += 1
            s.handles[fd] = (id, 0, path)
            return fd
        }
    }

    func openDirectWrite(_ path: String) -> Int32 {
        errno = EINVAL
        return -1
    }

    func close(_ fd: Int32) -> Int32 {
        state.withLock { s in s.handles.removeValue(forKey: fd) == nil ? -1 : 0 }
    }

    func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        state.withLock { s in
            guard s.image == nil, let h = s.handles[fd] else { errno = EIO; return -1 }
            let n = Self.copyOut(s, h.inode, buffer, count, h.position)
            if n > 0 { s.handles[fd]?.position += n }
            return n
        }
    }

    func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) -> Int {
        state.withLock { s in
            guard s.image == nil, let h = s.handles[fd] else { errno = EIO; return -1 }
            return Self.copyOut(s, h.inode, buffer, count, Int(offset))
        }
    }

    private static func copyOut(
        _ s: State, _ inode: Int, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int
    ) -> Int {
        guard let data = s.inodes[inode]?.data, offset < data.count else { return 0 }
        let n = min(count, data.count - offset)
        data.withUnsafeBytes { raw in
            if let base = raw.baseAddress { buffer.copyMemory(from: base + offset, byteCount: n) }
        }
        return n
    }

    func write(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        state.withLock { s in
            guard let h = s.handles[fd] else { errno = EBADF; return -1 }
            let n = Self.store(&s, h.inode, bytes, count, h.position)
            if n > 0 { s.handles[fd]?.position += n }
            return n
        }
    }

    func pwrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ offset: Int64) -> Int {
        state.withLock { s in
            guard let h = s.handles[fd] else { errno = EBADF; return -1 }
            return Self.store(&s, h.inode, bytes, count, Int(offset))
        }
    }

    private static func store(_ s: inout State, _ inode: Int, _ bytes: UnsafeRawPointer, _ count: Int, _ offset: Int)
        -> Int
    {
        guard event(&s) else { return -1 }
        s.writes += 1
        // A full disk refuses what would grow a file; a write inside its size still lands.
        if s.fullAt != 0 && s.writes >= s.fullAt && offset + count > s.inodes[inode]?.data.count ?? 0 {
            errno = ENOSPC; return -1
        }
        let copy = [UInt8](UnsafeRawBufferPointer(start: bytes, count: count))
        s.inodes[inode]?.pending.append((offset, copy))
        if var data = s.inodes[inode]?.data {
            s.inodes[inode]?.data = []
            put(copy[...], at: offset, into: &data)
            s.inodes[inode]?.data = data
        }
        return count
    }

    func fsync(_ fd: Int32) -> Int32 { sync(fd) }

    func fdatasync(_ fd: Int32) -> Int32 { sync(fd) }

    private func sync(_ fd: Int32) -> Int32 {
        state.withLock { s in
            guard let h = s.handles[fd] else { errno = s.image == nil ? EBADF : EIO; return -1 }
            guard Self.event(&s), let node = s.inodes[h.inode] else { return -1 }
            if let suffix = s.ignoredSyncSuffix, h.path.hasSuffix(suffix) { return 0 }
            if node.isDirectory {
                var rest: [NameChange] = []
                for change in s.pendingNames {
                    if change.commitDirectory == h.inode {
                        change.apply(to: &s.durableNames)
                    } else {
                        rest.append(change)
                    }
                }
                s.pendingNames = rest
            } else {
                s.inodes[h.inode]?.durable = node.data
                s.inodes[h.inode]?.pending = []
            }
            return 0
        }
    }

    func startWriteback(_ fd: Int32, _ offset: Int64, _ count: Int64) {}

    func status(of fd: Int32) -> POSIXFile.Status? {
        state.withLock { s in
            guard s.image == nil, let h = s.handles[fd], let node = s.inodes[h.inode] else { errno = EIO; return nil }
            return Self.status(node)
        }
    }

    func status(_ path: String) -> POSIXFile.Status? {
        state.withLock { s in
            guard s.image == nil else { errno = EIO; return nil }
            guard let id = Self.resolve(s, path), let node = s.inodes[id] else { return nil }
            return Self.status(node)
        }
    }

    private static func status(_ node: Inode) -> POSIXFile.Status {
        POSIXFile.Status(
            size: Int64(node.data.count), isRegular: !node.isDirectory, modifiedSeconds: Int(time(nil)),
            modifiedNanoseconds: 0)
    }

    func rename(_ from: String, _ to: String) -> Int32 {
        state.withLock { s in
            guard s.image == nil else { errno = EIO; return -1 }
            guard let (fd, fromName) = Self.parent(s, from), let (td, toName) = Self.parent(s, to) else { return -1 }
            guard let id = s.inodes[fd]?.entries[fromName] else { errno = ENOENT; return -1 }
            guard Self.event(&s) else { return -1 }
            s.inodes[fd]?.entries[fromName] = nil
            s.inodes[td]?.entries[toName] = id
            s.pendingNames.append(.rename(from: fd, fromName: fromName, to: td, toName: toName, inode: id))
            return 0
        }
    }

    func unlink(_ path: String) -> Int32 { remove(path, directory: false) }

    func rmdir(_ path: String) -> Int32 { remove(path, directory: true) }

    private func remove(_ path: String, directory: Bool) -> Int32 {
        state.withLock { s in
            guard s.image == nil else { errno = EIO; return -1 }
            guard let (d, name) = Self.parent(s, path) else { return -1 }
            guard let id = s.inodes[d]?.entries[name], let node = s.inodes[id] else { errno = ENOENT; return -1 }
            if node.isDirectory != directory { errno = directory ? ENOTDIR : EISDIR; return -1 }
            if directory && !node.entries.isEmpty { errno = ENOTEMPTY; return -1 }
            guard Self.event(&s) else { return -1 }
            s.inodes[d]?.entries[name] = nil
            s.pendingNames.append(.unlink(directory: d, name: name, inode: id))
            return 0
        }
    }

    func mkdir(_ path: String, _ mode: UInt32) -> Int32 {
        state.withLock { s in
            guard s.image == nil else { errno = EIO; return -1 }
            if Self.resolve(s, path) != nil { errno = EEXIST; return -1 }
            guard let (d, name) = Self.parent(s, path) else { return -1 }
            guard Self.event(&s) else { return -1 }
            _ = Self.link(&s, d, name, isDirectory: true)
            return 0
        }
    }

    func names(in path: String) -> [String]? {
        state.withLock { s in
            guard s.image == nil else { errno = EIO; return nil }
            guard let id = Self.resolve(s, path), let node = s.inodes[id] else { return nil }
            guard node.isDirectory else { errno = ENOTDIR; return nil }
            return node.entries.keys.sorted()
        }
    }
}
