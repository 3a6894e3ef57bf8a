// IncomingAsset: an asset being fetched from peers — each chunk verified, checked and hashed into
// the whole as it arrives, laid out in a batch in memory, the batch written to a segment with one
// aligned write and made durable before the manifest (Spec/assets.md §5.1).

public import ShoalWire
import Synchronization
import Dispatch

/// An asset being received from peers, chunk by chunk, against a manifest a peer sent.
///
/// ``receive(_:index:)`` checks each chunk against the manifest (length, SHA-256), lays it out as
/// a segment record in a page-aligned batch in memory (``RecordBatch``), and — when it is the
/// next chunk in content order — checks that it is canonical and feeds it to the SHA-256 of the
/// whole asset, so ``commit()`` never re-reads what arrived in order. Every `receiveBatchBytes`
/// (256 KiB by default; or 30 s) once the previous batch is done, and at the commit, the batch is
/// written to a segment by one aligned write (`O_DIRECT` where the file system allows: no copy
/// into the page cache) and made durable (`fdatasync`) on a Dispatch worker while chunks keep
/// arriving, and only then stored (indexed); the manifest is written after the last batch. A
/// stored chunk is therefore always complete and durable, and a manifest never refers to a chunk
/// that a crash could lose or tear (`Spec/assets.md` §5.1 gives the argument). Without fsync
/// (`AssetStore.Configuration.fsync` false) each chunk is appended and stored as it arrives.
///
/// Calls must not overlap (the asset lane makes one at a time per asset); the type is
/// `Sendable` so they may come from different tasks.
public final class IncomingAsset: Sendable {
    /// The manifest the chunks are checked against.
    public let manifest: AssetManifest
    let store: AssetStore
    let pin: AssetPin
    private let state: Mutex<State>
    /// Bytes and chunks of the manifest still wanted, kept beside `State.wanted` once
    /// ``progress`` has been asked for (`State.occurrences` set), so that it reads them without
    /// the lock a chunk's check and write hold.
    private let missingBytes = Atomic<Int>(0)
    private let missingChunks = Atomic<Int>(0)
    private let counting = Atomic<Bool>(false)

    /// The age of the oldest pending record that starts a batch (or
    /// `Configuration.receiveBatchBytes` pending bytes).
    static let batchSeconds: Int64 = 30

    /// The record bytes a batch buffer holds — what piles up behind a batch still in flight
    /// before a receive waits for it: 8 MiB, or the batch size when larger, at most 64 MiB; no
    /// more than the chunks still wanted need; plus room for one record of the largest chunk.
    /// Up to three buffers exist at once (filling, spare, in flight), and at 300 MB/s they fill:
    /// 16 MiB made a 1 GiB transfer peak at about 108 MB RSS, 8 MiB at 90, at the same speed
    /// (Spec/assets.md §9.1).
    static func batchCapacity(batch: Int, wantedBytes: Int, maximumChunk: Int) -> Int {
        min(max(8 << 20, batch), 64 << 20, wantedBytes) + SegmentStore.headerBytes + maximumChunk + 8
    }

    struct State {
        /// Chunk hashes still to receive (not stored when the fetch began, or lost since).
        var wanted: Set<ContentHash>
        /// Chunks received and laid out as records, not yet written (fsync on): the next batch.
        var filling: RecordBatch?
        /// The buffer of a batch that is done, kept to be filled again.
        var spare: RecordBatch?
        /// When the oldest record of ``filling`` arrived.
        var pendingSince: ContinuousClock.Instant?
        /// The previous batch, being made durable on another thread while chunks keep arriving.
        var syncing: BatchSync?
        /// The next manifest index to feed to ``whole``; every chunk before it was checked canonical.
        var next = 0
        var whole = ContentHasher()
        var scratch: [UInt8] = []
        /// Each distinct chunk's bytes and occurrences in the manifest (a chunk that occurs twice
        /// counts twice toward the asset's size): built the first time ``progress`` is asked for,
        /// so a fetch nobody watches never pays for it.
        var occurrences: [ContentHash: (bytes: Int, count: Int)]? = nil
    }

    init(manifest: AssetManifest, store: AssetStore, pin: AssetPin, wanted: Set<ContentHash>) {
        self.manifest = manifest
        self.store = store
        self.pin = pin
        state = Mutex(State(wanted: wanted))
    }

    /// How much of the asset is here: the bytes and chunks of the manifest received so far,
    /// counting those the store held before the fetch began (the total is the asset's size). A
    /// chunk whose batch fails to be made durable, or that is found damaged, counts again as
    /// missing. The first call counts what is missing (one pass over the manifest, waiting for a
    /// chunk being checked or written); later ones are two atomic reads of the counts kept since.
    public var progress: AssetProgress {
        if !counting.load(ordering: .acquiring) {
            state.withLock { s in
                guard s.occurrences == nil else { return }
                var occurrences = [ContentHash: (bytes: Int, count: Int)](minimumCapacity: manifest.chunks.count)
                var bytes = 0, chunks = 0
                for c in manifest.chunks {
                    let o = occurrences[c.hash] ?? (0, 0)
                    occurrences[c.hash] = (o.bytes &+ c.length, o.count &+ 1)
                    if s.wanted.contains(c.hash) {
                        bytes &+= c.length
                        chunks &+= 1
                    }
                }
                s.occurrences = occurrences
                missingBytes.store(bytes, ordering: .relaxed)
                missingChunks.store(chunks, ordering: .relaxed)
                counting.store(true, ordering: .releasing)
            }
        }
        let bytes = missingBytes.load(ordering: .relaxed), chunks = missingChunks.load(ordering: .relaxed)
        return AssetProgress(
            completedBytes: manifest.asset.size &- Int64(bytes), totalBytes: manifest.asset.size,
            chunks: manifest.chunks.count &- chunks)
    }

    /// `hash` is in: no longer wanted.
    private func got(_ hash: ContentHash, _ s: inout State) {
        guard s.wanted.remove(hash) != nil, let o = s.occurrences?[hash] else { return }
        missingBytes.subtract(o.bytes, ordering: .relaxed)
        missingChunks.subtract(o.count, ordering: .relaxed)
    }

    /// `hash` is to be received (again).
    private func want(_ hash: ContentHash, _ s: inout State) {
        guard s.wanted.insert(hash).inserted, let o = s.occurrences?[hash] else { return }
        missingBytes.add(o.bytes, ordering: .relaxed)
        missingChunks.add(o.count, ordering: .relaxed)
    }

    /// Indexes of the chunks still to receive, in content order, one per distinct chunk.
    public var missingIndexes: [Int] {
        state.withLock { s in
            var seen = Set<ContentHash>()
            return manifest.chunks.indices.filter {
                s.wanted.contains(manifest.chunks[$0].hash) && seen.insert(manifest.chunks[$0].hash).inserted
            }
        }
    }

    /// Stores chunk `index` of the manifest after checking its length and SHA-256.
    ///
    /// - Throws: ``AssetError`` `invalidArguments` (no such index, or a chunk in content order
    ///   that is not canonical: the manifest is wrong — drop the fetch), `assetFileModified` (the
    ///   bytes are not that chunk: ask again or another peer), `io`.
    public func receive(_ bytes: [UInt8], index: Int) throws(AssetError) {
        let chunks = manifest.chunks, asset = manifest.asset.hash
        guard index >= 0, index < chunks.count else {
            throw AssetError(
                .invalidArguments, "asset \(asset) has \(chunks.count) chunks; there is no chunk \(index)", hash: asset)
        }
        let c = chunks[index]
        guard bytes.count == c.length else {
            throw .modified(
                "chunk \(index) of asset \(asset) arrived with \(bytes.count) bytes, not the manifest's \(c.length); request it again, or from another peer",
                hash: c.hash)
        }
        let chunkStore = store.chunks, parameters = store.configuration.chunking
        let compress: Bool = if case .zstd = store.configuration.compression { true } else { false }
        let batched = store.configuration.fsync
        let last = index == chunks.count - 1
        try state.withLock { (s) throws(AssetError) in
            // Two lanes (this thread and a second one, ``inTwoLanes(_:_:)``): lane 0 checks the
            // SHA-256 and, for the next chunk in order, adds it to the whole-asset hash (on a copy
            // of the hasher; both hashes in one pass where the processor has SHA instructions);
            // lane 1 lays the record out in the batch (or, without fsync, appends it to a
            // segment) and, for the next chunk in order, checks that it is canonical — so neither
            // waits long for the other. The record is kept only once both checks passed, and
            // taken back if either failed.
            let write = s.wanted.contains(c.hash), feedNow = index == s.next
            let batch = write && batched ? try roomyBatch(for: c.length, &s) : nil
            var hasher = s.whole
            let outcome = withUnsafeMutablePointer(to: &hasher) { h in
                let shared = LaneSlots(h)
                return inTwoLanes(write || feedNow ? 2 : 1) { lane, _ -> ReceiveLane in
                    bytes.withUnsafeBytes { raw in
                        if lane == 1 {
                            if feedNow && !parameters.isCanonical(raw, last: last) {
                                return .written(
                                    nil,
                                    .invalidManifest(
                                        asset,
                                        "chunk \(index) (\(c.hash)) does not end where content-defined chunking cuts (Spec/assets.md §2); the peer chunks differently"
                                    ))
                            }
                            guard write else { return .written(nil, nil) }
                            if let batch {
                                // roomyBatch made room for the largest record this chunk can be.
                                guard
                                    chunkStore.layOut(
                                        c.hash, raw, compressor: compress ? ZstdCompressor() : nil, into: batch)
                                else {
                                    return .written(
                                        nil,
                                        AssetError(
                                            .io,
                                            "chunk \(index) (\(c.hash)) of asset \(asset) did not fit in the receive batch",
                                            hash: c.hash))
                                }
                                return .written(.laidOut, nil)
                            }
                            do throws(AssetError) {
                                return .written(
                                    .record(
                                        try chunkStore.stage(c.hash, raw, compressor: compress ? ZstdCompressor() : nil)
                                    ), nil)
                            } catch {
                                return .written(nil, error)
                            }
                        }
                        // In order, the chunk's hash and the whole's in one pass (ContentHasher).
                        let actual = feedNow ? shared.slots.pointee.updateHashing(raw) : ContentHash.sha256(raw)
                        guard actual == c.hash else {
                            return .checked(
                                .modified(
                                    "bytes received as chunk \(index) (\(c.hash)) of asset \(asset) hash to \(actual): they are not that chunk; request it again, or from another peer",
                                    hash: c.hash))
                        }
                        return .checked(nil)
                    }
                }
            }
            // The hash check first: bytes that are not the chunk say nothing about the chunking.
            var failure: AssetError?
            var staged: Staged?
            for o in outcome {
                switch o {
                case .checked(let e): failure = e ?? failure
                case .written(let f, let e):
                    staged = f
                    if failure == nil { failure = e }
                }
            }
            if let failure {
                switch staged {
                case .record(let r)?: chunkStore.segments.discard([r])
                case .laidOut?: batch?.removeLast()
                case nil: break
                }
                throw failure
            }
            switch staged {
            case .laidOut?:
                if s.pendingSince == nil { s.pendingSince = .now }
                got(c.hash, &s)
            case .record(let r)?:
                // Without fsync (a test or bulk configuration) it is stored at once.
                do throws(AssetError) { try chunkStore.segments.commit([r]) } catch {
                    chunkStore.segments.discard([r])
                    throw error
                }
                got(c.hash, &s)
            case nil: break
            }
            if feedNow {
                s.whole = hasher
                s.next = index + 1
            }
            try advance(&s)
            let pendingBytes = s.filling?.count ?? 0
            if pendingBytes >= store.configuration.receiveBatchBytes
                || (s.pendingSince.map { ContinuousClock.now - $0 > .seconds(Self.batchSeconds) } ?? false),
                s.syncing?.isDone != false
            {
                // The next batch starts once the one in flight is done (group commit); a batch
                // buffer that fills up meanwhile waits for it (roomyBatch).
                flush(&s, wait: false)
            }
        }
    }

    /// The batch to lay a chunk of `length` bytes out in, with room for its record: when the
    /// filling batch is full it is handed over (waiting for the batch in flight first), and a
    /// spare or new buffer takes its place.
    private func roomyBatch(for length: Int, _ s: inout State) throws(AssetError) -> RecordBatch {
        if let b = s.filling, b.fits(stored: length) { return b }
        if s.filling != nil { flush(&s, wait: false) }
        if let b = s.spare ?? s.filling {
            s.spare = nil
            s.filling = b
            if b.fits(stored: length) { return b }
        }
        let wanted = manifest.chunks.reduce(0) { s.wanted.contains($1.hash) ? $0 + $1.length : $0 }
        let b = RecordBatch(
            capacity: Self.batchCapacity(
                batch: store.configuration.receiveBatchBytes, wantedBytes: wanted,
                maximumChunk: store.configuration.chunking.maximumBytes))
        s.filling = b
        guard b.fits(stored: length) else {
            throw AssetError(
                .invalidArguments,
                "chunk of \(length) bytes of asset \(manifest.asset.hash) is over the maximum chunk size \(store.configuration.chunking.maximumBytes)",
                hash: manifest.asset.hash)
        }
        return b
    }

    /// Where lane 1 of ``receive(_:index:)`` put a chunk.
    private enum Staged: Sendable {
        /// Appended to a segment and pending (without fsync: committed at once).
        case record(SegmentStore.Pending)
        /// Laid out as the last record of the filling batch.
        case laidOut
    }

    /// What a lane of ``receive(_:index:)`` did.
    private enum ReceiveLane: Sendable {
        /// Lane 0: nil when the chunk is genuine (and, if next in order, hashed into the whole).
        case checked(AssetError?)
        /// Lane 1: where the chunk went (nil when it was not wanted or writing failed), and the
        /// error — a chunk next in order that is not canonical, or the write's.
        case written(Staged?, AssetError?)
    }

    /// Checks the chunks not fed yet (reading those that were stored before the fetch, verified),
    /// compares the whole content's SHA-256 with the asset's, makes the pending chunks durable and
    /// writes the manifest. Returns the asset.
    ///
    /// - Throws: ``AssetError`` `assetNotAvailable` when chunks are missing — never received, or
    ///   found damaged on disk and removed: ``missingIndexes`` lists them; receive them and commit
    ///   again. `assetFileModified` (the chunks do not make up the asset: the manifest is wrong)
    ///   and `invalidArguments` (a chunk is not canonical): the fetch is over, call ``discard()``.
    ///   `io`.
    @discardableResult
    public func commit() async throws -> Asset {
        let asset = manifest.asset
        try state.withLock { (s) throws(AssetError) in
            try advance(&s)
            if !s.wanted.isEmpty || s.next < manifest.chunks.count {
                throw AssetError(
                    .assetNotAvailable,
                    "\(s.wanted.count) chunks of asset \(asset.hash) are missing (never received, or damaged on disk and removed); fetch the chunks missingIndexes lists and commit again",
                    hash: asset.hash)
            }
            let actual = s.whole.finalize()
            guard actual == asset.hash else {
                throw AssetError.modified(
                    "the chunks of the manifest for asset \(asset.hash) hash to \(actual) together: the manifest is wrong; fetch it again or from another peer",
                    hash: asset.hash)
            }
            flush(&s, wait: true)
            if !s.wanted.isEmpty {
                throw AssetError(
                    .assetNotAvailable,
                    "\(s.wanted.count) chunks of asset \(asset.hash) could not be made durable; fetch them again (missingIndexes) and commit again",
                    hash: asset.hash)
            }
        }
        // flush made the chunks durable and stored them already.
        try await store.storeManifest(manifest, pin: pin)
        return asset
    }

    /// Gives up the chunks not yet made durable (the fetch is abandoned). Chunks already stored
    /// stay until garbage collection.
    public func discard() {
        state.withLock { s in
            s.filling?.removeAll()
            s.pendingSince = nil
        }
    }

    deinit { discard() }

    /// Writes the filling batch, makes it durable and stores it — on another thread unless
    /// `wait`, while the next batch arrives; chunks whose batch fails are wanted again. At most
    /// one batch is in flight: the previous one is waited for first.
    private func flush(_ s: inout State, wait: Bool) {
        finishSyncing(&s)
        s.pendingSince = nil
        guard let batch = s.filling, !batch.isEmpty else { return }
        s.filling = s.spare
        s.spare = nil
        do throws(AssetError) {
            s.syncing = BatchSync(
                batch, at: try store.chunks.segments.reserve(batch), in: store.chunks.segments,
                syncEvery: store.configuration.receiveBatchBytes)
        } catch {
            // No room could be made (a segment could not be created): received again later.
            for e in batch.entries { want(e.hash, &s) }
            batch.removeAll()
            s.spare = batch
        }
        if wait { finishSyncing(&s) }
    }

    /// Waits for the batch in flight, if any; its chunks are wanted again if it failed. Its
    /// buffer becomes the spare.
    private func finishSyncing(_ s: inout State) {
        guard let sync = s.syncing else { return }
        s.syncing = nil
        if !sync.succeeded() { for r in sync.placement.records { want(r.hash, &s) } }
        sync.batch.removeAll()
        if s.spare == nil { s.spare = sync.batch }
    }

    /// Feeds chunks in order from ``State/next``, taking those received out of order from the
    /// filling batch, and reading from disk (verified) those in a batch already written or stored
    /// before the fetch; stops at the first chunk still wanted and at the end. A chunk found
    /// missing or damaged on disk is removed and wanted again.
    private func advance(_ s: inout State) throws(AssetError) {
        let chunks = manifest.chunks
        var decompressor: ZstdDecompressor?
        while s.next < chunks.count {
            let c = chunks[s.next]
            if s.wanted.contains(c.hash) { return }
            // A chunk of the batch in flight is read once that batch is written and stored (or,
            // if it failed, wanted again).
            if s.syncing?.locations[c.hash] != nil {
                finishSyncing(&s)
                continue
            }
            let d = decompressor ?? ZstdDecompressor()
            decompressor = d
            if let batch = s.filling, let e = batch.entry(c.hash) {
                // Checked against its hash as it arrived; this memory is ours.
                guard
                    let bytes = store.chunks.decode(
                        tag: e.tag, batch.stored(e), hash: c.hash, length: c.length, decompressor: d, verify: false)
                else {
                    forget([c.hash], &s)
                    return
                }
                let index = s.next
                try withBytes(of: bytes) { (raw) throws(AssetError) in try feed(raw, index: index, into: &s) }
                continue
            }
            guard let bytes = try readBack(c, &s, decompressor: d) else {
                forget([c.hash], &s)
                return
            }
            let index = s.next
            try withBytes(of: bytes) { (raw) throws(AssetError) in try feed(raw, index: index, into: &s) }
        }
    }

    /// A received or stored chunk's bytes, verified; nil (after dropping it) when it is missing
    /// or damaged.
    private func readBack(_ c: AssetManifest.Chunk, _ s: inout State, decompressor: ZstdDecompressor) throws(AssetError)
        -> [UInt8]?
    {
        do throws(AssetError) {
            return try store.chunks.read(
                c.hash, length: c.length, of: manifest.asset.hash, scratch: &s.scratch, decompressor: decompressor)
        } catch  where error.code == .assetNotAvailable || error.code == .assetFileModified {
            return nil
        }
    }

    /// Marks chunks as to be received again (their files are gone or untrusted). Chunks before
    /// ``State/next`` were fed from verified bytes already; received again, they are only written.
    private func forget(_ hashes: Set<ContentHash>, _ s: inout State) {
        if let batch = s.syncing, hashes.contains(where: { batch.locations[$0] != nil }) {
            finishSyncing(&s)
            // Stored by that batch, but found damaged since.
            for h in hashes { if let l = batch.locations[h] { store.chunks.segments.remove(h, at: l) } }
        }
        for h in hashes {
            s.filling?.drop(h)
            want(h, &s)
        }
        if s.filling?.isEmpty != false { s.pendingSince = nil }
    }

    /// Checks that chunk `index` is canonical and adds it to the whole-content hash.
    private func feed(_ raw: UnsafeRawBufferPointer, index: Int, into s: inout State) throws(AssetError) {
        let last = index == manifest.chunks.count - 1
        guard store.configuration.chunking.isCanonical(raw, last: last) else {
            throw .invalidManifest(
                manifest.asset.hash,
                "chunk \(index) (\(manifest.chunks[index].hash)) does not end where content-defined chunking cuts (Spec/assets.md §2); the peer chunks differently"
            )
        }
        s.whole.update(raw)
        s.next = index + 1
    }
}

/// A batch of received chunks being written (``SegmentStore/write(_:at:)``), made durable and
/// stored (``SegmentStore/commit(_:)``) on a Dispatch worker; the records are discarded if that
/// fails.
final class BatchSync: Sendable {
    /// The records, laid out; read by the worker until ``isDone``.
    let batch: RecordBatch
    let placement: SegmentStore.Placement
    /// Where each record goes, to tell which chunks the batch holds.
    let locations: [ContentHash: SegmentStore.Location]
    private let done = DispatchSemaphore(value: 0)
    private let failed = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    /// Whether the batch is stored or given up (``succeeded()`` will not wait).
    var isDone: Bool { finished.load(ordering: .acquiring) }

    /// Writes `batch` in pieces of `syncEvery` bytes, each made durable before the next
    /// (``SegmentStore/write(_:at:syncEvery:)``), then commits it.
    init(_ batch: RecordBatch, at placement: SegmentStore.Placement, in segments: SegmentStore, syncEvery: Int) {
        self.batch = batch
        self.placement = placement
        locations = Dictionary(placement.records.map { ($0.hash, $0.location) }, uniquingKeysWith: { a, _ in a })
        DispatchQueue.global().async { [self] in
            do throws(AssetError) {
                try segments.write(batch, at: placement, syncEvery: syncEvery)
                try segments.commit(placement.records)
            } catch {
                segments.discard(placement.records)
                failed.store(true, ordering: .relaxed)
            }
            finished.store(true, ordering: .releasing)
            done.signal()
        }
    }

    /// Waits until the batch is stored or given up; true when stored.
    func succeeded() -> Bool {
        done.wait()
        done.signal()
        return !failed.load(ordering: .relaxed)
    }
}
