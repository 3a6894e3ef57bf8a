// SyncNode+Assets: the asset lane — serving manifests and chunks, and fetching an asset from
// peers with a bounded window, verification, failover and resumption (Spec/replication.md §3.7).

public import ShoalWire

/// Why an asset may be served on a connection: a live record of `zone` referenced it when the
/// store's count of removed asset references (``Store/assetReferenceRemovals``) was `removals`.
struct AssetGrant {
    /// Grants a connection remembers; a full set is cleared.
    static let perConnection = 16

    var zone: RecordZone.ID
    var removals: UInt64
}

extension SyncNode {
    // MARK: Fetching

    /// Starts fetching `asset` from connected peers (nothing to do when it is held already).
    /// Returns the frames to send; ``waitForAsset(_:)`` reports the outcome.
    public func fetchAsset(_ asset: Asset) async -> [ConnectionID: [SyncOutput]] {
        guard let assets else {
            fail(
                asset,
                AssetFetchError(
                    code: .assetUnsupported, asset: asset,
                    message: "node \(nodeID.short) has no asset store; open it with one to fetch assets"))
            return [:]
        }
        if await assets.manifest(of: asset) != nil {
            fetches.complete(asset)
            return [:]
        }
        guard fetches.want(asset) else { return [:] }  // already under way
        return await askNextPeer(asset)
    }

    /// Waits until `asset` is held here (fetched and verified, or already present).
    /// - Throws: ``AssetFetchError`` `assetNotAvailable` when no connected peer could serve it.
    public func waitForAsset(_ asset: Asset) async throws {
        if let e = fetches.takeFailure(of: asset) { throw e }
        if let assets, await assets.manifest(of: asset) != nil { return }
        // The fetch may have finished while that check was suspended (it runs on the asset lane,
        // which a transfer keeps busy): nobody would ever resume a waiter registered after it.
        // So the failure is looked up and the waiter registered with no suspension between, and
        // the asset is checked again once the waiter is in place.
        if let e = fetches.takeFailure(of: asset) { throw e }
        let ticket = fetches.nextTicket()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    c.resume(throwing: CancellationError())
                    return
                }
                fetches.wait(for: asset, ticket: ticket, c)
                Task { await self.completeIfHeld(asset) }
            }
        } onCancel: {
            Task { await self.cancelWait(asset, ticket) }
        }
    }

    /// Resumes the waiters for `asset` when it is held already: it was fetched while a waiter was
    /// still on its way in (``waitForAsset(_:)``).
    func completeIfHeld(_ asset: Asset) async {
        guard fetches.isAwaited(asset), let assets, await assets.manifest(of: asset) != nil else {
            return
        }
        fetches.complete(asset)
    }

    /// A waiting task was cancelled: it stops waiting (the fetch goes on for any other waiter).
    func cancelWait(_ asset: Asset, _ ticket: UInt64) {
        fetches.cancelWait(for: asset, ticket: ticket)
    }

    /// Assets being fetched and the chunks each still lacks (for status and tests).
    public func assetTransfers() -> [Asset: Int] {
        fetches.chunksLacking
    }

    /// Asks the next connected peer that has not refused `asset`: for the chunks still missing
    /// when a manifest is kept (a resumed transfer), else for the manifest.
    ///
    /// The transfer is claimed for that peer's connection before the asset store is asked what
    /// is missing, and afterwards only the fields this call owns are set, on the transfer as it
    /// is then: the node takes other calls while the store answers. A copy written back over it
    /// dropped a waiter registered meanwhile (``waitForAsset(_:)``, which then never returned),
    /// and undid a close of the connection (``closed(_:)``), leaving the fetch on a connection
    /// that no longer existed.
    func askNextPeer(_ asset: Asset) async -> [ConnectionID: [SyncOutput]] {
        guard let assets, let refused = fetches.refusers(of: asset) else { return [:] }
        let candidates = sessions.filter {
            $0.value.phase == .established
                && $0.value.peer.map { $0.capabilities & Capability.assets != 0 && !refused.contains($0.node) }
                    ?? false
        }
        .keys.sorted { $0.rawValue < $1.rawValue }
        guard let id = candidates.first else {
            let connected = sessions.values.contains {
                $0.phase == .established && ($0.peer?.capabilities ?? 0) & Capability.assets != 0
            }
            if connected || refused.isEmpty == false {
                fail(
                    asset,
                    AssetFetchError(
                        code: .assetNotAvailable, asset: asset,
                        message:
                            "no connected peer can serve \(asset) (\(refused.count) refused or sent bytes that did not verify); try again when another peer that holds it is connected"
                    ))
            } else {
                // Nobody to ask: park until a peer connects.
                fetches.park(asset)
            }
            return [:]
        }
        fetches.claim(asset, for: id)
        let missing = await assets.missingChunks(of: asset)
        // Meanwhile the transfer may have ended (fetched or failed) or left `id` (its connection
        // closed): whoever moved it asks for it now, or it is parked until a peer connects.
        guard fetches.isAsking(asset, on: id) else { return [:] }
        if let missing {
            fetches.noteMissing(missing, of: asset)
            if missing.isEmpty { return await finishTransfer(asset) }
            return [id: requestChunks(asset)]
        }
        fetches.noteManifestRequested(asset)
        return [
            id: [
                .send(Frame(type: .assetRequest, payload: AssetRequestMessage(asset: asset, part: .manifest).encoded()))
            ]
        ]
    }

    /// Requests pending chunks while the window allows, in runs of consecutive indexes.
    func requestChunks(_ asset: Asset) -> [SyncOutput] {
        fetches.nextRequests(asset, window: configuration.assetWindow).map {
            .send(Frame(type: .assetRequest, payload: $0.encoded()))
        }
    }

    /// The peer on `id` failed `asset` (refused it, or sent bytes that did not verify): ask another.
    /// Nothing is done when the transfer has left `id` since (its connection closed while the
    /// answer was checked): another call has it.
    func refuse(_ asset: Asset, on id: ConnectionID) async -> [ConnectionID: [SyncOutput]] {
        guard fetches.refuse(asset, on: id, peer: sessions[id]?.peer?.node) else { return [:] }
        return await askNextPeer(asset)
    }

    func finishTransfer(_ asset: Asset) async -> [ConnectionID: [SyncOutput]] {
        guard let assets, let id = fetches.transfers[asset]?.connection else { return [:] }
        if await assets.finish(asset) {
            statistics.assetsFetched &+= 1
            fetches.complete(asset)
            return [:]
        }
        // Chunks this node held turned out missing or damaged (the manifest is kept and lists
        // them): fetch them again from the same peer, a bounded number of times.
        if let missing = await assets.missingChunks(of: asset), !missing.isEmpty,
            fetches.repair(asset, on: id, missing: missing)
        {
            return [id: requestChunks(asset)]
        }
        // Every chunk matched the manifest but the content does not match the asset: the
        // manifest lied. That peer is refused; the next one starts from its manifest.
        return await refuse(asset, on: id)
    }

    /// Transfers parked when their connection closed go to another connected peer.
    public func resumeAssetTransfers() async -> [ConnectionID: [SyncOutput]] {
        await moveTransfers(from: nil)
    }

    /// The fetch of `asset` failed: the asset store drops what it kept of it, and the waiters
    /// throw `error` (nobody waits yet when the fetch ran first: the next wait reports it).
    func fail(_ asset: Asset, _ error: AssetFetchError) {
        if let assets { Task { await assets.abandon(asset) } }
        statistics.assetFetchesFailed &+= 1
        fetches.fail(asset, error)
    }

    /// Transfers that were on `id` (now closed), or parked, go to another peer; the chunks
    /// already stored stay, so each resumes from the first missing one.
    func moveTransfers(from id: ConnectionID?) async -> [ConnectionID: [SyncOutput]] {
        var out = [ConnectionID: [SyncOutput]]()
        for asset in fetches.assets(on: id) where fetches.isAsking(asset, on: id) {
            fetches.park(asset)
            for (c, o) in await askNextPeer(asset) { out[c, default: []] += o }
        }
        return out
    }

    /// Assets referenced by `records` that this node does not hold, in a zone fetched eagerly.
    func eagerAssets(in records: [Record], zone: RecordZone.ID) async -> [Asset] {
        guard let assets, configuration.assetFetch[zone] == .eager else { return [] }
        var wanted = Set<Asset>()
        for r in records where !r.isDeleted {
            for f in r.fields {
                switch f.value {
                case .asset(let a)?: wanted.insert(a)
                case .list(.asset(let list))?: wanted.formUnion(list)
                default: break
                }
            }
        }
        var out = [Asset]()
        for a in wanted.sorted(by: { $0.hash < $1.hash }) where fetches.transfers[a] == nil {
            if await assets.manifest(of: a) == nil { out.append(a) }
        }
        return out
    }

    // MARK: Serving

    /// Whether `asset` may be served on connection `id`: a live record of a zone its device may
    /// read (``ZoneAccess/read`` or more) references it (Spec/replication.md §3.7). A connection
    /// without a device (an in-memory transport, which may do whatever a zone's owner may) is
    /// served any asset held.
    ///
    /// The zones come from the store's index of asset references, one indexed read. The zone
    /// that allowed it is remembered on the connection (``AssetGrant``) so the chunk requests that
    /// follow a manifest do not wait for the store: a grant holds while the device may still read
    /// that zone — checked again on every request, so a share that changes its access ends it at
    /// once — and no asset reference has been removed from the store since it was looked up; any
    /// removal (a record changed or deleted, a zone deleted) sends the next request to the store.
    func mayServe(_ asset: Asset, on id: ConnectionID) async -> Bool {
        guard let session = sessions[id] else { return false }
        guard session.device != nil else { return true }
        // Read before the lookup: a removal during it makes the grant stale, never the reverse.
        let removals = store.assetReferenceRemovals
        if let grant = session.assetGrants[asset], grant.removals == removals, await access(id, grant.zone) >= .read {
            return true
        }
        let zones = (try? await store.zones(referencing: asset)) ?? []
        for zone in zones {
            guard await access(id, zone) >= .read else { continue }
            if (sessions[id]?.assetGrants.count ?? 0) >= AssetGrant.perConnection {
                sessions[id]?.assetGrants.removeAll()
            }
            sessions[id]?.assetGrants[asset] = AssetGrant(zone: zone, removals: removals)
            return true
        }
        sessions[id]?.assetGrants.removeValue(forKey: asset)
        return false
    }

    // MARK: Frames

    func handleAssetRequest(_ frame: Frame, on id: ConnectionID) async throws(SyncFailure) -> [SyncOutput] {
        let m = try decode { (l) throws(WireError) in try AssetRequestMessage(decoding: frame.payload, limits: l) }
        func answer(_ part: AssetChunkMessage.Part) -> SyncOutput {
            .send(Frame(type: .assetChunk, payload: AssetChunkMessage(asset: m.asset, part: part).encoded()))
        }
        // Served only to a device that may read a zone whose live records reference the asset;
        // to any other the answer is the one for an asset this node lacks, decided before the
        // asset store is asked, so neither the answer nor its timing says whether it is held.
        guard let assets, await mayServe(m.asset, on: id) else { return [answer(.unavailable)] }
        // No frame larger than the peer accepts (its hello's max frame payload): a part that
        // would be is answered `unavailable`, so the fetch fails there, named, instead of the
        // peer's reader closing the connection on a frame it refuses (Spec/replication.md §3.7).
        let peerLimit = Int(
            clamping: sessions[id]?.peer?.maxFramePayloadBytes ?? UInt64(configuration.limits.maxFramePayloadBytes))
        switch m.part {
        case .manifest:
            guard let manifest = await assets.manifest(of: m.asset) else { return [answer(.unavailable)] }
            let out = answer(.manifest(manifest))
            if case .send(let f) = out, f.payload.count > peerLimit {
                statistics.assetPartsTooLargeForPeer &+= 1
                return [answer(.unavailable)]
            }
            return [out]
        case let .chunks(first, count):
            // The decoder bounds count (1…maxChunks) and first + count (below 2^64).
            guard first <= UInt64(Int.max) - count else { return [answer(.unavailable)] }
            // Each chunk comes laid out in its answer's payload already (read into it, once).
            let found = await assets.chunkPayloads(Int(first)..<Int(first &+ count), of: m.asset)
            var out = [SyncOutput]()
            out.reserveCapacity(found.count + 1)
            var served = 0
            for payload in found {
                guard payload.count <= peerLimit else {
                    statistics.assetPartsTooLargeForPeer &+= 1
                    break
                }
                served += 1
                // Whether the asset compresses is tried once, on the first chunk served (its
                // payload: the chunk behind a few dozen bytes of header); chunks of one that does
                // not (most media) go out without a compression attempt.
                let compressible = fetches.compressibility(of: m.asset, sample: payload)
                out.append(.send(Frame(type: .assetChunk, payload: payload, mayCompress: compressible)))
                statistics.assetChunksSent &+= 1
            }
            if served < count { out.append(answer(.unavailable)) }
            return out
        }
    }

    /// Handles asset frames that arrived together (the transport's asset lanes hand over every
    /// frame waiting), in order: each run of chunk frames from one connection is decoded at once
    /// and each run of chunks of one asset in it checked and stored with one call to the asset
    /// store (``AssetProvider/receiveChunks(_:of:)``); other frames go through
    /// ``receive(_:on:)``. Returns the frames to send.
    package func receiveAssetFrames(_ frames: [(ConnectionID, Frame)]) async -> [ConnectionID: [SyncOutput]] {
        var result = [ConnectionID: [SyncOutput]]()
        var i = 0
        while i < frames.count {
            let (id, frame) = frames[i]
            var end = i + 1
            while frame.type == .assetChunk, end < frames.count, frames[end].0 == id, frames[end].1.type == .assetChunk
            { end += 1 }
            let more: [ConnectionID: [SyncOutput]]
            if end - i > 1, sessions[id]?.phase == .established {
                more = await settle(await handleAssetChunks(frames[i..<end].map(\.1), on: id), on: id)
            } else {
                more = await receive(frame, on: id)
                end = i + 1
            }
            for (c, o) in more { result[c, default: []] += o }
            i = end
        }
        return result
    }

    /// Handles chunk frames from `id` (an established connection) like ``handle(_:on:decoded:)``:
    /// returns what to send on `id`, sets aside what goes to other connections, and closes `id`
    /// when a frame is malformed or breaks the protocol (then none of them is used).
    func handleAssetChunks(_ frames: [Frame], on id: ConnectionID) async -> [SyncOutput] {
        do throws(SyncFailure) {
            var messages = [AssetChunkMessage]()
            messages.reserveCapacity(frames.count)
            for f in frames {
                messages.append(
                    try decode { (l) throws(WireError) in try AssetChunkMessage(decoding: f.payload, limits: l) })
            }
            var mine = [SyncOutput]()
            var i = 0
            while i < messages.count {
                var end = i + 1
                if case .chunk = messages[i].part {
                    while end < messages.count, messages[end].asset == messages[i].asset,
                        case .chunk = messages[end].part
                    { end += 1 }
                }
                var all = try await handleAssetAnswers(messages[i..<end], on: id)
                mine += all.removeValue(forKey: id) ?? []
                for (c, more) in all { extraOutputs[c, default: []] += more }
                i = end
            }
            return mine
        } catch {
            sessions[id]?.lastError = error.message
            sessions[id]?.phase = .closed
            return [.close(ErrorMessage(code: error.code.name, message: error.message))]
        }
    }

    func handleAssetChunk(_ frame: Frame, on id: ConnectionID) async throws(SyncFailure) -> [ConnectionID: [SyncOutput]]
    {
        let m = try decode { (l) throws(WireError) in try AssetChunkMessage(decoding: frame.payload, limits: l) }
        return try await handleAssetAnswers([m], on: id)
    }

    /// Handles one answer to an asset request, or a run of chunks of one asset.
    func handleAssetAnswers(_ run: ArraySlice<AssetChunkMessage>, on id: ConnectionID) async throws(SyncFailure)
        -> [ConnectionID: [SyncOutput]]
    {
        guard let m = run.first else { return [:] }
        // An answer for a transfer no longer on this connection (moved, finished) is dropped.
        guard let assets, let t = fetches.transfers[m.asset], t.connection == id else { return [:] }
        switch m.part {
        case .unavailable:
            return await refuse(m.asset, on: id)
        case .manifest(let bytes):
            guard fetches.awaitsManifest(m.asset), await assets.receiveManifest(bytes, for: m.asset) != nil,
                let missing = await assets.missingChunks(of: m.asset)
            else {
                return await refuse(m.asset, on: id)
            }
            // The transfer may have moved (connection closed) while the manifest was stored.
            guard fetches.isAsking(m.asset, on: id) else { return [:] }
            fetches.noteMissing(missing, of: m.asset)
            if missing.isEmpty { return await finishTransfer(m.asset) }
            return [id: requestChunks(m.asset)]
        case .chunk:
            var chunks = [(bytes: [UInt8], index: Int)]()
            chunks.reserveCapacity(run.count)
            var seen = Set<Int>()
            for c in run {
                guard case let .chunk(index, bytes) = c.part else { continue }
                guard index <= UInt64(Int.max), t.inFlight.contains(Int(index)), seen.insert(Int(index)).inserted else {
                    throw SyncFailure(
                        .protocolViolation, "chunk \(index) of \(m.asset) was not requested on this connection")
                }
                chunks.append((bytes, Int(index)))
            }
            let stored = await assets.receiveChunks(chunks, of: m.asset)
            statistics.assetChunksReceived &+= stored
            // The transfer may have moved (connection closed) while the chunks were stored.
            guard fetches.isAsking(m.asset, on: id) else { return [:] }
            fetches.noteStored(chunks.prefix(stored).map(\.index), of: m.asset)
            guard stored == chunks.count else { return await refuse(m.asset, on: id) }
            if fetches.hasAllChunks(m.asset) { return await finishTransfer(m.asset) }
            return [id: requestChunks(m.asset)]
        }
    }
}
