// SegmentStore: chunks appended to a few large files ("segments") instead of one file each; an
// in-memory index rebuilt from the records' headers when the store opens (Spec/assets.md §3).

import CShoalThread
import ShoalWire
import Synchronization
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Append-only segment files holding chunk records, and the index from chunk hash to record.
///
/// A record is a 56-byte header (magic `SHS1`, tag, stored and raw lengths, the chunk's SHA-256,
/// a CRC-32C of the header) followed by the stored bytes, padded to a multiple of 8. Writers
/// reserve space at the end of the active segment under a lock and write outside it, so two
/// lanes append in parallel. A record enters the index only when ``commit(_:)`` has made it
/// durable (`fdatasync` of its segment): **an indexed chunk is complete and durable**, the
/// invariant manifests rely on. Records that were written but never committed (a crash, a
/// discarded fetch) are found again by the next open's scan, which makes every segment durable
/// before trusting it; every read checks the header against the index and the bytes against the
/// hash, so a torn or damaged record is dropped, never served.
///
/// Removal only drops index entries; ``compact()`` rewrites segments whose records are mostly
/// dead, so disk space comes back in segment-sized steps.
final class SegmentStore: Sendable {
    /// The folder holding the segment files (`<16 hex digits>.seg`).
    let folder: String
    /// Whether commits `fdatasync` (and new segment files are made durable in the folder).
    let sync: Bool
    /// The largest chunk a record may hold (stored or raw).
    let maximumChunkBytes: Int
    /// A segment stops taking records once it is this long.
    let segmentBytes: Int64
    /// Whether new segments get an `O_DIRECT` descriptor for batch writes (false in tests of
    /// the page-cache path, which is also what file systems without direct I/O get).
    let directWrites: Bool
    /// The file system the segments are on.
    let fs: any AssetFileSystem

    static let headerBytes = 56
    /// The longest a piece of a synced batch waits for record commits under way in the process
    /// (``write(_:at:syncEvery:)``): 2 ms, about two idle commits. Commits that never stop still
    /// leave the lane a piece every 2 ms plus the piece's own time (256 KiB pieces: about
    /// 90 MB/s at worst).
    static let recordCommitWaitMicroseconds = 2000
    static let magic: (UInt8, UInt8, UInt8, UInt8) = (0x53, 0x48, 0x53, 0x31)  // "SHS1"

    /// An open segment file; closed when the last reference (index entry, reader) goes away,
    /// so a compaction can unlink a segment that a reader is still reading.
    final class Segment: Sendable {
        let id: UInt64
        let fd: Int32
        let path: String
        /// A second descriptor opened with `O_DIRECT` for ``SegmentStore/write(_:at:)``, or -1
        /// (a segment an earlier process wrote, which is never appended to; or a file system,
        /// such as tmpfs, that refuses direct I/O).
        let directFD: Int32
        let fs: any AssetFileSystem
        init(id: UInt64, fd: Int32, path: String, directFD: Int32 = -1, fs: any AssetFileSystem) {
            self.id = id
            self.fd = fd
            self.path = path
            self.directFD = directFD
            self.fs = fs
        }
        deinit {
            _ = fs.close(fd)
            if directFD >= 0 { _ = fs.close(directFD) }
        }
    }

    /// Where a chunk's record is.
    struct Location: Sendable {
        let segment: Segment
        let offset: Int64
        /// 0 raw, 1 zstd (`ChunkStore.rawTag`, `.zstdTag`).
        let tag: UInt8
        let stored: Int
        let length: Int
        /// Whether the record is known to hold its chunk: true for a record this process
        /// committed, false for one the open's scan found (a record written but never synced
        /// before a power cut may be torn) until ``ChunkStore/contains(_:)`` has read it once.
        var verified = true

        /// Header, stored bytes and padding.
        var recordBytes: Int64 { Int64(SegmentStore.recordBytes(stored)) }

        func same(as other: Location) -> Bool { segment === other.segment && offset == other.offset }
    }

    /// A record written but not yet durable or indexed: ``commit(_:)`` or ``discard(_:)`` it.
    struct Pending: Sendable {
        let hash: ContentHash
        let location: Location
    }

    private struct SegmentState {
        let segment: Segment
        /// Bytes appended (reserved) so far: the next record's offset.
        var end: Int64
        /// Bytes of the records the index points to.
        var live: Int64 = 0
        /// Records reserved and neither committed nor discarded.
        var outstanding = 0
    }

    private struct State {
        var index: [ContentHash: Location] = [:]
        /// Copies of an indexed chunk that the open's scan found before the indexed one, latest
        /// last: when the indexed record turns out torn or damaged, the latest of these takes
        /// its place (a compaction the power cut interrupted leaves a torn copy after an intact one).
        var earlier: [ContentHash: [Location]] = [:]
        var segments: [UInt64: SegmentState] = [:]
        var active: UInt64?
        var nextID: UInt64 = 1
    }

    private let state: Mutex<State>

    /// Opens the segments in `folder` (creating it), makes each durable, and indexes its records.
    init(
        folder: String, sync: Bool, maximumChunkBytes: Int, segmentBytes: Int64 = 256 << 20, directWrites: Bool = true,
        fs: any AssetFileSystem = POSIXFileSystem()
    ) throws(AssetError) {
        self.folder = folder
        self.sync = sync
        self.directWrites = directWrites
        self.maximumChunkBytes = maximumChunkBytes
        self.segmentBytes = segmentBytes
        self.fs = fs
        try FileSystem.createDirectories(folder, sync: sync, in: fs)
        var s = State()
        // Only names in the form this store writes (16 lowercase hex digits): another spelling of
        // a number would open the same path twice, or a path that is not there.
        let names = try FileSystem.contents(of: folder, in: fs).compactMap { name -> UInt64? in
            guard name.utf8.count == 20, name.hasSuffix(".seg"), let id = UInt64(name.prefix(16), radix: 16),
                Self.path(folder, id) == folder + "/" + name
            else { return nil }
            return id
        }.sorted()
        for id in names {
            let path = Self.path(folder, id)
            let fd = fs.open(path, O_RDWR | O_CLOEXEC, 0)
            guard fd >= 0 else { throw .io("open", path, errno: errno) }
            let segment = Segment(id: id, fd: fd, path: path, fs: fs)
            // What an earlier process wrote may still be only in the page cache; a manifest
            // written from now on may rely on it.
            if sync, fs.fdatasync(fd) != 0 { throw .io("fdatasync", path, errno: errno) }
            guard let size = fs.status(of: fd)?.size else { throw .io("stat", path, errno: errno) }
            var entry = SegmentState(segment: segment, end: size)
            for location in try Self.scan(segment, size: size, maximumChunkBytes: maximumChunkBytes) {
                // Later records of a hash replace earlier ones (a refetch after damage is later).
                if let old = s.index[location.hash] {
                    s.segments[old.segment.id]?.live -= old.recordBytes
                    if old.segment === segment { entry.live -= old.recordBytes }
                    s.earlier[location.hash, default: []].append(old)
                }
                s.index[location.hash] = location.location
                entry.live += location.location.recordBytes
            }
            s.segments[id] = entry
            // A segment named ffffffffffffffff.seg leaves no number after it: creating the next
            // segment then fails with the name in the error, instead of trapping here.
            s.nextID = id == .max ? id : id + 1
        }
        state = Mutex(s)
    }

    static func path(_ folder: String, _ id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return folder + "/" + String(repeating: "0", count: max(0, 16 - hex.utf8.count)) + hex + ".seg"
    }

    static func padding(_ stored: Int) -> Int { (8 - stored % 8) % 8 }

    /// A record's length on disk: header, `stored` bytes, padding.
    static func recordBytes(_ stored: Int) -> Int { headerBytes + stored + padding(stored) }

    // MARK: Index

    /// Whether the chunk is indexed (durable; its bytes are checked when read).
    func contains(_ hash: ContentHash) -> Bool { state.withLock { $0.index[hash] != nil } }

    /// The chunk's record, when indexed.
    func location(of hash: ContentHash) -> Location? { state.withLock { $0.index[hash] } }

    /// Every indexed chunk.
    func hashes() -> [ContentHash] { state.withLock { Array($0.index.keys) } }

    /// The bytes of the records the index points to (`live`), and of everything appended to the
    /// segments (`appended`: live records and the dead ones ``compact()`` has not reclaimed yet).
    func byteCounts() -> (live: Int64, appended: Int64) {
        state.withLock { s in
            s.segments.values.reduce((live: Int64(0), appended: Int64(0))) { ($0.live + $1.live, $0.appended + $1.end) }
        }
    }

    /// Drops chunks from the index (their records become dead space until ``compact()``);
    /// returns how many were indexed and their records' bytes.
    @discardableResult
    func remove(_ hashes: some Sequence<ContentHash>) -> (count: Int, bytes: Int64) {
        state.withLock { s in
            var count = 0, bytes: Int64 = 0
            for h in hashes {
                s.earlier.removeValue(forKey: h)
                guard let old = s.index.removeValue(forKey: h) else { continue }
                s.segments[old.segment.id]?.live -= old.recordBytes
                count += 1
                bytes += old.recordBytes
            }
            return (count, bytes)
        }
    }

    /// Notes that the record at `location` was read and holds its chunk (if it is still the indexed one).
    func markVerified(_ hash: ContentHash, at location: Location) {
        state.withLock { s in
            guard let current = s.index[hash], current.same(as: location) else { return }
            s.index[hash]?.verified = true
        }
    }

    /// Drops a chunk from the index if it is still at `location` (a damaged record found by a
    /// reader); an earlier copy the open's scan found, if any, takes its place, unverified.
    func remove(_ hash: ContentHash, at location: Location) {
        state.withLock { s in
            guard let old = s.index[hash], old.same(as: location) else { return }
            s.index.removeValue(forKey: hash)
            s.segments[old.segment.id]?.live -= old.recordBytes
            guard var copies = s.earlier.removeValue(forKey: hash), let previous = copies.popLast() else { return }
            if !copies.isEmpty { s.earlier[hash] = copies }
            guard s.segments[previous.segment.id] != nil else { return }
            s.index[hash] = previous
            s.segments[previous.segment.id]?.live += previous.recordBytes
        }
    }

    // MARK: Writing

    /// Appends a record — `stored` bytes with `tag`, for a chunk of `length` raw bytes — to the
    /// active segment (starting a new one when it is full), and, when `startWriteback`, starts
    /// its writeback (`sync_file_range`) so that the commit waits less; a writer that commits
    /// every few hundred kilobytes anyway passes false and saves a write submission per record.
    /// The record is neither durable nor indexed until ``commit(_:)``.
    func append(
        _ hash: ContentHash, tag: UInt8, stored: UnsafeRawBufferPointer, length: Int, startWriteback: Bool = true
    ) throws(AssetError) -> Pending {
        let location = try reserve(tag: tag, stored: stored.count, length: length)
        do throws(AssetError) {
            try Self.writeRecord(location, hash: hash, stored: stored)
        } catch {
            discard([Pending(hash: hash, location: location)])
            throw error
        }
        if sync && startWriteback { fs.startWriteback(location.segment.fd, location.offset, location.recordBytes) }
        return Pending(hash: hash, location: location)
    }

    private func reserve(tag: UInt8, stored: Int, length: Int) throws(AssetError) -> Location {
        try state.withLock { (s) throws(AssetError) -> Location in
            if let id = s.active, let a = s.segments[id], a.end < segmentBytes {
                let location = Location(segment: a.segment, offset: a.end, tag: tag, stored: stored, length: length)
                s.segments[id]?.end += location.recordBytes
                s.segments[id]?.outstanding += 1
                return location
            }
            let segment = try newSegment(&s)
            let location = Location(segment: segment, offset: 0, tag: tag, stored: stored, length: length)
            s.segments[segment.id]?.end = location.recordBytes
            s.segments[segment.id]?.outstanding = 1
            return location
        }
    }

    /// Creates the next segment file and makes it the active one (empty).
    private func newSegment(_ s: inout State) throws(AssetError) -> Segment {
        let id = s.nextID
        let path = Self.path(folder, id)
        guard id < .max else {
            throw AssetError(
                .invalidArguments,
                "\(folder) holds a segment numbered ffffffffffffffff, so no number is left for a new segment; move the segment files aside and import or fetch the assets again"
            )
        }
        let fd = fs.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io("create", path, errno: errno) }
        let segment = Segment(
            id: id, fd: fd, path: path, directFD: directWrites ? fs.openDirectWrite(path) : -1, fs: fs)
        if sync { try FileSystem.syncDirectory(folder, in: fs) }
        s.nextID = id + 1
        s.segments[id] = SegmentState(segment: segment, end: 0)
        s.active = id
        return segment
    }

    /// Where a ``RecordBatch`` goes: a segment, the (aligned) offset of its first byte, and its
    /// records, pending.
    struct Placement: Sendable {
        let segment: Segment
        let offset: Int64
        let records: [Pending]
    }

    /// Reserves room for `batch` at the next ``RecordBatch/alignment`` boundary of the active
    /// segment (a new segment when it is full), covering the batch rounded up to that alignment;
    /// the gap before it is never written and reads as zeros, which a scan skips. The batch's
    /// records are pending from here on: ``write(_:at:)`` them, then ``commit(_:)`` or
    /// ``discard(_:)``.
    func reserve(_ batch: RecordBatch) throws(AssetError) -> Placement {
        let length = Int64(RecordBatch.aligned(batch.count))
        return try state.withLock { (s) throws(AssetError) -> Placement in
            let segment: Segment, offset: Int64
            if let id = s.active, let a = s.segments[id], a.end < segmentBytes {
                segment = a.segment
                offset = Int64(RecordBatch.aligned(Int(a.end)))
            } else {
                segment = try newSegment(&s)
                offset = 0
            }
            s.segments[segment.id]?.end = offset + length
            s.segments[segment.id]?.outstanding += batch.entries.count
            let records = batch.entries.map {
                Pending(
                    hash: $0.hash,
                    location: Location(
                        segment: segment, offset: offset + Int64($0.offset), tag: $0.tag, stored: $0.stored,
                        length: $0.length))
            }
            return Placement(segment: segment, offset: offset, records: records)
        }
    }

    /// Writes `batch` where ``reserve(_:)`` placed it, from the batch's aligned buffer through the
    /// segment's `O_DIRECT` descriptor, or through the ordinary one when the segment has none or
    /// the file system refuses the direct write (`EINVAL`). Not durable until ``commit(_:)``.
    ///
    /// With `syncEvery`, the batch goes in pieces of that many bytes (rounded up to
    /// ``RecordBatch/alignment``), each but the last followed by an `fdatasync` (with ``sync``):
    /// a record commit elsewhere on the device, whose fsync flushes the device's cache, then
    /// never waits behind more than one piece of unflushed chunk data (Spec/assets.md §5.1).
    /// Before each piece, and before each `fdatasync` between pieces, it also gives way to record
    /// commits under way in this process (up to ``recordCommitWaitMicroseconds`` each), so a
    /// commit that starts between two pieces has the device, and its cache flush, to itself.
    func write(_ batch: RecordBatch, at placement: Placement, syncEvery: Int? = nil) throws(AssetError) {
        let bytes = batch.alignedBytes()
        guard let base = bytes.baseAddress else { return }
        let segment = placement.segment
        let piece = syncEvery.map { RecordBatch.aligned(max($0, 1)) } ?? bytes.count
        var done = 0
        /// Writes from `done` up to `end` through `fd`; the errno that stopped it, or 0.
        func writeRest(_ fd: Int32, to end: Int) -> Int32 {
            while done < end {
                let n = fs.pwrite(fd, base + done, end - done, placement.offset + Int64(done))
                if n > 0 { done += n; continue }
                if n < 0 && errno == EINTR { continue }
                return n < 0 ? errno : EIO
            }
            return 0
        }
        var direct = segment.directFD >= 0
        while done < bytes.count {
            let end = done + min(piece, bytes.count - done)
            if syncEvery != nil, sync { _ = shoal_wait_for_record_commits(Self.recordCommitWaitMicroseconds) }
            if direct {
                let e = writeRest(segment.directFD, to: end)
                // A direct write that is refused (alignment this device does not take, a short
                // write leaving an unaligned rest) is finished through the page cache; anything
                // else fails.
                if e != 0 && e != EINVAL { throw .io("write", segment.path, errno: e) }
                if e == EINVAL { direct = false }
            }
            let e = writeRest(segment.fd, to: end)
            guard e == 0 else { throw .io("write", segment.path, errno: e) }
            guard sync, end < bytes.count else { continue }
            _ = shoal_wait_for_record_commits(Self.recordCommitWaitMicroseconds)
            if fs.fdatasync(segment.fd) != 0 { throw .io("fdatasync", segment.path, errno: errno) }
        }
    }

    /// Makes the records durable (one `fdatasync` per segment they are in) and indexes them.
    /// A chunk indexed meanwhile by another writer keeps its record; this one becomes dead space.
    /// On failure nothing is indexed and the records stay pending: ``discard(_:)`` them.
    func commit(_ records: [Pending]) throws(AssetError) {
        guard !records.isEmpty else { return }
        try makeDurable(records)
        state.withLock { s in
            for r in records {
                let id = r.location.segment.id
                s.segments[id]?.outstanding -= 1
                guard s.index[r.hash] == nil else { continue }
                s.index[r.hash] = r.location
                s.segments[id]?.live += r.location.recordBytes
            }
        }
    }

    /// `fdatasync`s each segment that holds one of `records`, once (nothing without ``sync``),
    /// each after giving way to record commits under way in this process, as ``write(_:at:syncEvery:)``
    /// does: a device cache flush issued just before a commit's own makes the commit wait for both.
    private func makeDurable(_ records: [Pending]) throws(AssetError) {
        guard sync else { return }
        var seen = Set<UInt64>()
        for r in records where seen.insert(r.location.segment.id).inserted {
            _ = shoal_wait_for_record_commits(Self.recordCommitWaitMicroseconds)
            guard fs.fdatasync(r.location.segment.fd) == 0 else {
                throw .io("fdatasync", r.location.segment.path, errno: errno)
            }
        }
    }

    /// Gives up pending records: their headers are zeroed (best effort), so no later scan indexes
    /// bytes that failed a check, and their space is dead.
    func discard(_ records: [Pending]) {
        let zero = [UInt8](repeating: 0, count: 4)
        for r in records {
            zero.withUnsafeBytes { raw in
                if let base = raw.baseAddress { _ = fs.pwrite(r.location.segment.fd, base, 4, r.location.offset) }
            }
        }
        state.withLock { s in
            for r in records { s.segments[r.location.segment.id]?.outstanding -= 1 }
        }
    }

    // MARK: Reading

    /// Reads the record at `location` and checks its header against it (magic, CRC, tag,
    /// lengths, `hash`). On success `buffer` holds the record: the header, then the stored bytes
    /// from ``headerBytes`` on; false when the record is short or its header does not match (it
    /// is damaged).
    func read(_ hash: ContentHash, at location: Location, into buffer: inout [UInt8]) throws(AssetError) -> Bool {
        let total = Self.headerBytes + location.stored
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: repeatElement(0, count: total))
        let got = try withMutableBytes(of: &buffer) { (raw) throws(AssetError) -> Int in
            try Self.readFully(location.segment, raw, at: location.offset)
        }
        guard got == total else { return false }
        let header = buffer.withUnsafeBytes {
            Self.parseHeader(
                UnsafeRawBufferPointer(rebasing: $0[..<Self.headerBytes]), maximumChunkBytes: maximumChunkBytes)
        }
        guard let header, header.hash == hash, header.tag == location.tag, header.stored == location.stored,
            header.length == location.length
        else { return false }
        return true
    }

    // MARK: Compaction

    /// What ``compact()`` did.
    struct Compaction: Sendable {
        var segmentsRewritten = 0
        var segmentsRemoved = 0
        var bytesFreed: Int64 = 0
    }

    /// Rewrites every segment that no writer is appending to and whose live records are at most
    /// half its length: the live records are appended to the active segment and made durable,
    /// the index moved to them, and the old file removed. Segments with no live record are removed.
    func compact() throws(AssetError) -> Compaction {
        var report = Compaction()
        let victims: [(segment: Segment, end: Int64, live: [(ContentHash, Location)])] = state.withLock { s in
            var chosen: [UInt64] = []
            for (id, seg) in s.segments where seg.outstanding == 0 && seg.live * 2 <= seg.end && seg.end > 0 {
                chosen.append(id)
            }
            chosen.sort()
            if let active = s.active, chosen.contains(active) { s.active = nil }
            let set = Set(chosen)
            var live: [UInt64: [(ContentHash, Location)]] = [:]
            for (h, l) in s.index where set.contains(l.segment.id) { live[l.segment.id, default: []].append((h, l)) }
            return chosen.compactMap { id in s.segments[id].map { ($0.segment, $0.end, live[id] ?? []) } }
        }
        guard !victims.isEmpty else { return report }
        var buffer: [UInt8] = []
        for v in victims {
            var moved: [(old: Location, new: Pending)] = []
            for (hash, old) in v.live.sorted(by: { $0.1.offset < $1.1.offset }) {
                // A damaged record is not carried over; the next read of the chunk finds it missing.
                guard try read(hash, at: old, into: &buffer) else { continue }
                let p = try withBytes(of: buffer) { (raw) throws(AssetError) -> Pending in
                    try append(
                        hash, tag: old.tag, stored: UnsafeRawBufferPointer(rebasing: raw[Self.headerBytes...]),
                        length: old.length)
                }
                moved.append((old, p))
            }
            do throws(AssetError) { try makeDurable(moved.map(\.new)) } catch {
                discard(moved.map(\.new))
                throw error
            }
            state.withLock { s in
                for m in moved {
                    let id = m.new.location.segment.id
                    s.segments[id]?.outstanding -= 1
                    if let current = s.index[m.new.hash], current.same(as: m.old) {
                        s.index[m.new.hash] = m.new.location
                        s.segments[id]?.live += m.new.location.recordBytes
                    }
                }
                // Anything still pointing into the old segment (a record that could not be
                // read back) is dropped with it.
                for (h, l) in s.index where l.segment === v.segment { s.index.removeValue(forKey: h) }
                if !s.earlier.isEmpty {
                    s.earlier = s.earlier.compactMapValues { copies in
                        let kept = copies.filter { $0.segment !== v.segment }
                        return kept.isEmpty ? nil : kept
                    }
                }
                s.segments.removeValue(forKey: v.segment.id)
            }
            try FileSystem.remove(v.segment.path, in: fs)
            if moved.isEmpty { report.segmentsRemoved += 1 } else { report.segmentsRewritten += 1 }
            report.bytesFreed += v.end - moved.reduce(0) { $0 + $1.new.location.recordBytes }
        }
        if sync { try FileSystem.syncDirectory(folder, in: fs) }
        return report
    }

    // MARK: Record format

    private struct Header {
        let tag: UInt8
        let stored: Int
        let length: Int
        let hash: ContentHash
    }

    /// Writes a record header (``headerBytes`` bytes) into `out`.
    static func encodeHeader(
        tag: UInt8, stored: Int, length: Int, hash: ContentHash, into out: UnsafeMutableRawBufferPointer
    ) {
        out.initializeMemory(as: UInt8.self, repeating: 0)
        out[0] = magic.0; out[1] = magic.1; out[2] = magic.2; out[3] = magic.3
        out[4] = tag
        out.storeBytes(of: UInt32(truncatingIfNeeded: stored).littleEndian, toByteOffset: 8, as: UInt32.self)
        out.storeBytes(of: UInt32(truncatingIfNeeded: length).littleEndian, toByteOffset: 12, as: UInt32.self)
        for (i, w) in [hash.words.0, hash.words.1, hash.words.2, hash.words.3].enumerated() {
            out.storeBytes(of: w.bigEndian, toByteOffset: 16 + 8 * i, as: UInt64.self)
        }
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: out[..<48]))
        out.storeBytes(of: crc.littleEndian, toByteOffset: 48, as: UInt32.self)
    }

    /// The header in `raw` (56 bytes), or nil when it is not a valid header.
    private static func parseHeader(_ raw: UnsafeRawBufferPointer, maximumChunkBytes: Int) -> Header? {
        guard raw.count >= headerBytes, raw[0] == magic.0, raw[1] == magic.1, raw[2] == magic.2, raw[3] == magic.3
        else { return nil }
        let crc = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 48, as: UInt32.self))
        guard crc == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[..<48])), raw[4] <= 1 else { return nil }
        let stored = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        let length = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
        guard stored <= maximumChunkBytes, length <= maximumChunkBytes else { return nil }
        let words = (0..<4).map { UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 16 + 8 * $0, as: UInt64.self)) }
        return Header(
            tag: raw[4], stored: stored, length: length,
            hash: ContentHash(words: (words[0], words[1], words[2], words[3])))
    }

    private static func writeRecord(_ location: Location, hash: ContentHash, stored: UnsafeRawBufferPointer)
        throws(AssetError)
    {
        var failure: AssetError?
        withUnsafeTemporaryAllocation(byteCount: headerBytes + 8, alignment: 8) { header in
            encodeHeader(
                tag: location.tag, stored: location.stored, length: location.length, hash: hash,
                into: UnsafeMutableRawBufferPointer(rebasing: header[..<headerBytes]))
            let pad = padding(location.stored)
            let zeros = UnsafeMutableRawBufferPointer(rebasing: header[headerBytes...])
            zeros.initializeMemory(as: UInt8.self, repeating: 0)
            let parts = [
                UnsafeRawBufferPointer(rebasing: header[..<headerBytes]), stored,
                UnsafeRawBufferPointer(rebasing: zeros[..<pad])
            ]
            var offset = location.offset
            for p in parts where p.count > 0 {
                guard let base = p.baseAddress else { continue }
                var done = 0
                while done < p.count {
                    let n = location.segment.fs.pwrite(
                        location.segment.fd, base + done, p.count - done, offset + Int64(done))
                    if n > 0 { done += n; continue }
                    if n < 0 && errno == EINTR { continue }
                    failure = .io("write", location.segment.path, errno: n < 0 ? errno : EIO)
                    return
                }
                offset += Int64(p.count)
            }
        }
        if let failure { throw failure }
    }

    private static func readFully(_ segment: Segment, _ raw: UnsafeMutableRawBufferPointer, at offset: Int64)
        throws(AssetError) -> Int
    {
        guard let base = raw.baseAddress else { return 0 }
        var done = 0
        while done < raw.count {
            let n = segment.fs.pread(segment.fd, base + done, raw.count - done, offset + Int64(done))
            if n > 0 { done += n; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            throw .io("read", segment.path, errno: errno)
        }
        return done
    }

    /// The valid records of a segment, in file order. After a header that is not valid (a torn
    /// write at a crash, a discarded record, damage), the scan looks for the next valid header at
    /// the following 8-byte boundaries, so one bad record never hides the ones after it.
    private static func scan(_ segment: Segment, size: Int64, maximumChunkBytes: Int) throws(AssetError) -> [(
        hash: ContentHash, location: Location
    )] {
        var out: [(hash: ContentHash, location: Location)] = []
        var header = [UInt8](repeating: 0, count: headerBytes)
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var position: Int64 = 0
        while position + Int64(headerBytes) <= size {
            let got = try withMutableBytes(of: &header) { (raw) throws(AssetError) -> Int in
                try readFully(segment, raw, at: position)
            }
            if got == headerBytes,
                let h = header.withUnsafeBytes({ parseHeader($0, maximumChunkBytes: maximumChunkBytes) })
            {
                let location = Location(
                    segment: segment, offset: position, tag: h.tag, stored: h.stored, length: h.length, verified: false)
                if position + Int64(headerBytes + h.stored) <= size {
                    out.append((h.hash, location))
                    position += location.recordBytes
                    continue
                }
            }
            // Resynchronise: the next 8-byte boundary holding the magic, read a block at a time.
            var next: Int64?
            var from = position + 8
            while next == nil, from + Int64(headerBytes) <= size {
                let n = try withMutableBytes(of: &block) { (raw) throws(AssetError) -> Int in
                    try readFully(segment, raw, at: from)
                }
                guard n >= 4 else { break }
                var i = 0
                while i + 4 <= n {
                    if block[i] == magic.0, block[i + 1] == magic.1, block[i + 2] == magic.2, block[i + 3] == magic.3 {
                        next = from + Int64(i); break
                    }
                    i += 8
                }
                from += Int64(n - n % 8)
                if n < block.count { break }
            }
            guard let next else { break }
            position = next
        }
        return out
    }
}
