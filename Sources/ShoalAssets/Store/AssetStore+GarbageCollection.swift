// AssetStore+GarbageCollection: removing manifests and chunks that no kept or pinned asset needs.

public import ShoalWire
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What ``AssetStore/collectGarbage(keeping:)`` removed and kept.
public struct GarbageCollectionReport: Hashable, Sendable, CustomStringConvertible {
    /// Manifests removed (assets neither kept nor pinned).
    public var manifestsRemoved = 0
    /// Manifests kept.
    public var manifestsKept = 0
    /// Chunks removed (needed by no kept manifest and not pinned).
    public var chunksRemoved = 0
    /// Chunks kept.
    public var chunksKept = 0
    /// Bytes of what was removed as stored on disk: chunk records (with their headers), chunk
    /// files of older stores, manifests and temporary files.
    public var bytesRemoved: Int64 = 0
    /// Segment files rewritten or removed because at least half of their bytes were dead
    /// (`Spec/assets.md` §7). A removed chunk's record stays in its segment until then.
    public var segmentsCompacted = 0
    /// Disk space that compaction gave back: the segments' sizes minus the live records moved.
    public var segmentBytesFreed: Int64 = 0
    /// Kept manifests that did not decode and were removed (their assets must be fetched again).
    public var damagedManifestsRemoved = 0
    /// Leftover temporary files of interrupted writes removed (older than an hour).
    public var temporaryFilesRemoved = 0

    /// Creates an empty report.
    public init() {}

    /// One line: what was removed and kept.
    public var description: String {
        "removed \(manifestsRemoved) manifests, \(chunksRemoved) chunks (\(bytesRemoved) bytes), \(temporaryFilesRemoved) temporary files; kept \(manifestsKept) manifests, \(chunksKept) chunks; compacted \(segmentsCompacted) segments (\(segmentBytesFreed) bytes freed)"
            + (damagedManifestsRemoved > 0 ? "; \(damagedManifestsRemoved) damaged manifests removed" : "")
    }
}

extension AssetStore {
    /// Starts a collection whose keep set is computed over time: from now until
    /// ``collectGarbage(keeping:dryRun:)`` (or ``endCollection()``), everything pinned — now or
    /// later — is kept by it, even once unpinned.
    public func beginCollection() {
        pinnedSinceCollectionBegan = Set(pinnedChunks.keys).union(pinnedAssets.keys)
    }

    /// Abandons a collection begun with ``beginCollection()`` without collecting.
    public func endCollection() {
        pinnedSinceCollectionBegan = nil
    }

    /// Temporary files older than this (seconds) belong to writes that were interrupted.
    static let temporaryFileLifetime = 3600

    /// Removes every manifest whose asset is neither in `keep` nor pinned, then every chunk
    /// that no remaining manifest lists and no pin holds, and leftover temporary files.
    ///
    /// The store passes the assets referenced by live records and by tombstones within the purge
    /// horizon. Runs on the actor without suspending, so no pin can be taken meanwhile: an import
    /// or insert pins each chunk before it checks for or writes the file, and its asset before it
    /// writes the manifest, so collection never removes what an import in progress relies on.
    /// Readers of an asset that is neither kept nor pinned may find it gone.
    ///
    /// With `dryRun`, nothing is removed or compacted: the report says what would be removed
    /// (``GarbageCollectionReport/segmentsCompacted`` stays 0: compaction depends on the removal).
    ///
    /// - Throws: ``AssetError`` `io` when a folder cannot be listed or a file removed; files
    ///   removed until then stay removed, and running it again finishes the work.
    ///
    /// A caller that computes `keep` over time (reading records while saves go on) calls
    /// ``beginCollection()`` before it starts: what is pinned from then on is kept even if its pin
    /// is released before this runs (a save that committed, and unpinned, after its zone was read).
    @discardableResult
    public func collectGarbage(keeping keep: Set<ContentHash>, dryRun: Bool = false) throws(AssetError)
        -> GarbageCollectionReport
    {
        let held = pinnedSinceCollectionBegan ?? []
        pinnedSinceCollectionBegan = nil
        let keep = held.isEmpty ? keep : keep.union(held)
        /// Removes a file (or, in a dry run, only measures it), returning its size.
        func removedBytes(_ path: String) throws(AssetError) -> Int64 {
            if dryRun { return try FileSystem.status(path, in: configuration.fileSystem)?.size ?? 0 }
            return try self.removedBytes(path)
        }
        var report = GarbageCollectionReport()
        var live: Set<ContentHash> = []
        for asset in try manifests.allHashes() {
            guard keep.contains(asset) || pinnedAssets[asset] != nil else {
                report.bytesRemoved += try removedBytes(manifests.path(of: asset))
                report.manifestsRemoved += 1
                continue
            }
            var bytes: [UInt8] = []
            let limit = 64 + Int(configuration.maxAssetBytes / Int64(configuration.chunking.minimumBytes) + 1) * 37
            guard try manifests.read(asset, into: &bytes, maxBytes: limit),
                let manifest = try? AssetManifest(decoding: bytes)
            else {
                report.bytesRemoved += try removedBytes(manifests.path(of: asset))
                report.damagedManifestsRemoved += 1
                continue
            }
            report.manifestsKept += 1
            for c in manifest.chunks { live.insert(c.hash) }
        }
        var dead: [ContentHash] = []
        for chunk in chunks.segments.hashes() {
            if live.contains(chunk) || pinnedChunks[chunk] != nil || held.contains(chunk) {
                report.chunksKept += 1
            } else {
                dead.append(chunk)
            }
        }
        if dryRun {
            for chunk in dead {
                guard let at = chunks.segments.location(of: chunk) else { continue }
                report.chunksRemoved += 1
                report.bytesRemoved += Int64(at.recordBytes)
            }
        } else {
            let removed = chunks.segments.remove(dead)
            report.chunksRemoved += removed.count
            report.bytesRemoved += removed.bytes
        }
        if let legacy = chunks.legacy {
            for chunk in try legacy.allHashes() {
                if live.contains(chunk) || pinnedChunks[chunk] != nil || held.contains(chunk) {
                    if !chunks.segments.contains(chunk) { report.chunksKept += 1 }
                } else {
                    report.bytesRemoved += try removedBytes(legacy.path(of: chunk))
                    report.chunksRemoved += 1
                }
            }
        }
        if !dryRun {
            let compaction = try chunks.segments.compact()
            report.segmentsCompacted = compaction.segmentsRewritten + compaction.segmentsRemoved
            report.segmentBytesFreed = compaction.bytesFreed
        }
        let now = Int(time(nil))
        for name in try FileSystem.contents(of: temporary, in: configuration.fileSystem) {
            let path = temporary + "/" + name
            if let st = try FileSystem.status(path, in: configuration.fileSystem),
                now - st.modifiedSeconds > Self.temporaryFileLifetime
            {
                _ = try removedBytes(path)
                report.temporaryFilesRemoved += 1
            }
        }
        return report
    }

    /// Removes a file, returning its size (0 if it was already gone).
    private func removedBytes(_ path: String) throws(AssetError) -> Int64 {
        let size = try FileSystem.status(path, in: configuration.fileSystem)?.size ?? 0
        return try FileSystem.remove(path, in: configuration.fileSystem) ? size : 0
    }
}
