// AssetExchange: the asset transfers of one node beside its record engine — fetching an asset
// from peers with a bounded window, verification, failover and resumption, and serving manifests
// and chunks to the devices that may read them (Spec/replication.md §3.7).

import ShoalWire

/// Why an asset may be served on a connection: a live record of `zone` referenced it when the
/// store's count of removed asset references (``Store/assetReferenceRemovals``) was `removals`.
struct AssetGrant {
    /// Grants a connection remembers; a full set is cleared.
    static let perConnection = 16

    var zone: RecordZone.ID
    var removals: UInt64
}

/// The asset transfers of one node: the fetches under way (``AssetFetches``), the asset store,
/// and what each connection was lately found allowed to read.
///
/// It owns no connection. The record engine that does (``SyncNode``) hands it decoded asset
/// messages and every method runs on the engine's actor (its `engine` parameter is isolated), so
/// what it reads of the connections — ``SyncNode/assetServers()``,
/// ``SyncNode/assetServingTerms(on:)``, ``SyncNode/mayRead(_:on:)`` — cannot change between a
/// read and the change made from it. It asks the asset store, decides, and returns the frames to
/// send; the engine sends them.
final class AssetExchange {
    /// Where asset bytes live; nil: this node neither serves nor fetches assets.
    let provider: (any AssetProvider)?
    /// The assets being fetched and the tasks waiting for them.
    private(set) var fetches = AssetFetches()
    /// Assets lately found servable on each connection, so the chunk requests after a manifest
    /// skip the store (``mayServe(_:on:engine:)``); at most ``AssetGrant/perConnection`` each.
    private var grants: [ConnectionID: [Asset: AssetGrant]] = [:]

    init(provider: (any AssetProvider)?) {
        self.provider = provider
    }

    // MARK: Connections

    /// The connection `id` closed: its grants go, and the fetches asking its peer are parked
    /// until ``moveTransfers(from:engine:)`` gives them to another.
    func closed(_ id: ConnectionID) {
        grants[id] = nil
        fetches.parkAll(on: id)
    }

    // MARK: Fetching

    /// Starts fetching `asset` from connected peers (nothing to do when it is held already).
    /// Returns the frames to send; ``wait(for:engine:)`` reports the outcome.
    func fetch(_ asset: Asset, engine: isolated SyncNode) async -> [ConnectionID: [SyncOutput]] {
        guard let provider else {
            fail(
                asset,
                AssetFetchError(
                    code: .assetUnsupported, asset: asset,
                    message: "node \(engine.nodeID.short) has no asset store; open it with one to fetch assets"),
                engine: engine)
            return [:]
        }
        if await provider.manifest(of: asset) != nil {
            fetches.complete(asset)
            return [:]
        }
        guard fetches.want(asset) else { return [:] }  // already under way
        return await askNextPeer(asset, engine: engine)
    }

    /// Waits until `asset` is held here (fetched and verified, or already present).
    /// - Throws: ``AssetFetchError`` `assetNotAvailable` when no connected peer could serve it.
    func wait(for asset: Asset, engine: isolated SyncNode) async throws {
        if let e = fetches.takeFailure(of: asset) { throw e }
        if let provider, await provider.manifest(of: asset) != nil { return }
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
                Task { await engine.completeAssetIfHeld(asset) }
            }
        } onCancel: {
            Task { await engine.cancelAssetWait(asset, ticket) }
        }
    }

    /// Resumes the waiters for `asset` when it is held already: it was fetched while a waiter was
    /// still on its way in (``wait(for:engine:)``).
    func completeIfHeld(_ asset: Asset, engine: isolated SyncNode) async {
        guard fetches.isAwaited(asset), let provider, await provider.manifest(of: asset) != nil else { return }
        fetches.complete(asset)
    }

    /// A waiting task was cancelled: it stops waiting (the fetch goes on for any other waiter).
    func cancelWait(_ asset: Asset, _ ticket: UInt64) {
        fetches.cancelWait(for: asset, ticket: ticket)
    }

    /// Asks the next connected peer that has not refused `asset`: for the chunks still missing
    /// when a manifest is kept (a resumed transfer), else for the manifest.
    ///
    /// The transfer is claimed for that peer's connection before the asset store is asked what
    /// is missing, and afterwards only the fields this call owns are set, on the transfer as it
    /// is then: the node takes other calls while the store answers. A copy written back over it
    /// dropped a waiter registered meanwhile (``wait(for:engine:)``, which then never returned),
    /// and undid a close of the connection (``closed(_:)``), leaving the fetch on a connection
    /// that no longer existed.
    func askNextPeer(_ asset: Asset, engine: isolated SyncNode) async -> [ConnectionID: [SyncOutput]] {
        guard let provider, let refused = fetches.refusers(of: asset) else { return [:] }
        let servers = engine.assetServers()
        guard let id = servers.first(where: { !refused.contains($0.node) })?.connection else {
            if !servers.isEmpty || !refused.isEmpty {
                fail(
                    asset,
                    AssetFetchError(
                        code: .assetNotAvailable, asset: asset,
                        message:
                            "no connected peer can serve \(asset) (\(refused.count) refused or sent bytes that did not verify); try again when another peer that holds it is connected"
                    ), engine: engine)
            } else {
                // Nobody to ask: park until a peer connects.
                fetches.park(asset)
            }
            return [:]
        }
        fetches.claim(asset, for: id)
        let missing = await provider.missingChunks(of: asset)
        // Meanwhile the transfer may have ended (fetched or failed) or left `id` (its connection
        // closed): whoever moved it asks for it now, or it is parked until a peer connects.
        guard fetches.isAsking(asset, on: id) else { return [:] }
        if let missing {
            fetches.noteMissing(missing, of: asset)
            if missing.isEmpty { return await finishTransfer(asset, engine: engine) }
            return [id: requestChunks(asset, engine: engine)]
        }
        fetches.noteManifestRequested(asset)
        return [
            id: [
                .send(Frame(type: .assetRequest, payload: AssetRequestMessage(asset: asset, part: .manifest).encoded()))
            ]
        ]
    }

    /// Requests pending chunks while the window allows, in runs of consecutive indexes.
    func requestChunks(_ asset: Asset, engine: isolated SyncNode) -> [SyncOutput] {
        fetches.nextRequests(asset, window: engine.configuration.assetWindow).map {
            .send(Frame(type: .assetRequest, payload: $0.encoded()))
        }
    }

    /// The peer on `id` failed `asset` (refused it, or sent bytes that did not verify): ask another.
    /// Nothing is done when the transfer has left `id` since (its connection closed while the
    /// answer was checked): another call has it.
    func refuse(_ asset: Asset, on id: ConnectionID, engine: isolated SyncNode) async -> [ConnectionID: [SyncOutput]] {
        guard fetches.refuse(asset, on: id, peer: engine.peer(of: id)) else { return [:] }
        return await askNextPeer(asset, engine: engine)
    }

    func finishTransfer(_ asset: Asset, engine: isolated SyncNode) async -> [ConnectionID: [SyncOutput]] {
        guard let provider, let id = fetches.transfers[asset]?.connection else { return [:] }
        if await provider.finish(asset) {
            engine.statistics.assetsFetched &+= 1
            fetches.complete(asset)
            return [:]
        }
        // Chunks this node held turned out missing or damaged (the manifest is kept and lists
        // them): fetch them again from the same peer, a bounded number of times.
        if let missing = await provider.missingChunks(of: asset), !missing.isEmpty,
            fetches.repair(asset, on: id, missing: missing)
        {
            return [id: requestChunks(asset, engine: engine)]
        }
        // Every chunk matched the manifest but the content does not match the asset: the
        // manifest lied. That peer is refused; the next one starts from its manifest.
        return await refuse(asset, on: id, engine: engine)
    }

    /// The fetch of `asset` failed: the asset store drops what it kept of it, and the waiters
    /// throw `error` (nobody waits yet when the fetch ran first: the next wait reports it).
    func fail(_ asset: Asset, _ error: AssetFetchError, engine: isolated SyncNode) {
        if let provider { Task { await provider.abandon(asset) } }
        engine.statistics.assetFetchesFailed &+= 1
        fetches.fail(asset, error)
    }

    /// Transfers that were on `id` (now closed), or parked (`id` nil), go to another peer; the
    /// chunks already stored stay, so each resumes from the first missing one.
    func moveTransfers(from id: ConnectionID?, engine: isolated SyncNode) async -> [ConnectionID: [SyncOutput]] {
        var out = [ConnectionID: [SyncOutput]]()
        for asset in fetches.assets(on: id) where fetches.isAsking(asset, on: id) {
            fetches.park(asset)
            for (c, o) in await askNextPeer(asset, engine: engine) { out[c, default: []] += o }
        }
        return out
    }

    /// Assets referenced by `records` that this node does not hold, in a zone fetched eagerly.
    func eagerAssets(in records: [Record], zone: RecordZone.ID, engine: isolated SyncNode) async -> [Asset] {
        guard let provider, engine.configuration.assetFetch[zone] == .eager else { return [] }
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
            if await provider.manifest(of: a) == nil { out.append(a) }
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
    /// that allowed it is remembered for the connection (``AssetGrant``) so the chunk requests
    /// that follow a manifest do not wait for the store: a grant holds while the device may still
    /// read that zone — checked again on every request, so a share that changes its access ends
    /// it at once — and no asset reference has been removed from the store since it was looked
    /// up; any removal (a record changed or deleted, a zone deleted) sends the next request to
    /// the store.
    func mayServe(_ asset: Asset, on id: ConnectionID, engine: isolated SyncNode) async -> Bool {
        guard let terms = engine.assetServingTerms(on: id) else { return false }
        guard terms.restricted else { return true }
        // Read before the lookup: a removal during it makes the grant stale, never the reverse.
        let removals = engine.store.assetReferenceRemovals
        if let grant = grants[id]?[asset], grant.removals == removals, await engine.mayRead(grant.zone, on: id) {
            return true
        }
        let zones = (try? await engine.store.zones(referencing: asset)) ?? []
        for zone in zones {
            guard await engine.mayRead(zone, on: id) else { continue }
            // A connection that closed meanwhile keeps no grant (``closed(_:)`` ran already).
            guard engine.assetServingTerms(on: id) != nil else { return true }
            if (grants[id]?.count ?? 0) >= AssetGrant.perConnection { grants[id] = nil }
            grants[id, default: [:]][asset] = AssetGrant(zone: zone, removals: removals)
            return true
        }
        grants[id]?.removeValue(forKey: asset)
        return false
    }

    /// Answers the asset request `m` that came on `id`.
    func answer(_ m: AssetRequestMessage, on id: ConnectionID, engine: isolated SyncNode) async -> [SyncOutput] {
        func answer(_ part: AssetChunkMessage.Part) -> SyncOutput {
            .send(Frame(type: .assetChunk, payload: AssetChunkMessage(asset: m.asset, part: part).encoded()))
        }
        // Served only to a device that may read a zone whose live records reference the asset;
        // to any other the answer is the one for an asset this node lacks, decided before the
        // asset store is asked, so neither the answer nor its timing says whether it is held.
        guard let provider, await mayServe(m.asset, on: id, engine: engine) else { return [answer(.unavailable)] }
        // No frame larger than the peer accepts (its hello's max frame payload): a part that
        // would be is answered `unavailable`, so the fetch fails there, named, instead of the
        // peer's reader closing the connection on a frame it refuses (Spec/replication.md §3.7).
        let peerLimit =
            engine.assetServingTerms(on: id)?.maxFramePayloadBytes ?? engine.configuration.limits.maxFramePayloadBytes
        switch m.part {
        case .manifest:
            guard let manifest = await provider.manifest(of: m.asset) else { return [answer(.unavailable)] }
            let out = answer(.manifest(manifest))
            if case .send(let f) = out, f.payload.count > peerLimit {
                engine.statistics.assetPartsTooLargeForPeer &+= 1
                return [answer(.unavailable)]
            }
            return [out]
        case let .chunks(first, count):
            // The decoder bounds count (1…maxChunks) and first + count (below 2^64).
            guard first <= UInt64(Int.max) - count else { return [answer(.unavailable)] }
            // Each chunk comes laid out in its answer's payload already (read into it, once).
            let found = await provider.chunkPayloads(Int(first)..<Int(first &+ count), of: m.asset)
            var out = [SyncOutput]()
            out.reserveCapacity(found.count + 1)
            var served = 0
            for payload in found {
                guard payload.count <= peerLimit else {
                    engine.statistics.assetPartsTooLargeForPeer &+= 1
                    break
                }
                served += 1
                // Whether the asset compresses is tried once, on the first chunk served (its
                // payload: the chunk behind a few dozen bytes of header); chunks of one that does
                // not (most media) go out without a compression attempt.
                let compressible = fetches.compressibility(of: m.asset, sample: payload)
                out.append(.send(Frame(type: .assetChunk, payload: payload, mayCompress: compressible)))
                engine.statistics.assetChunksSent &+= 1
            }
            if served < count { out.append(answer(.unavailable)) }
            return out
        }
    }

    // MARK: Answers to this node's requests

    /// Handles one answer to an asset request, or a run of chunks of one asset, from `id`.
    /// - Throws: `protocolViolation` for a chunk that was not requested on `id`.
    func receive(_ run: ArraySlice<AssetChunkMessage>, on id: ConnectionID, engine: isolated SyncNode)
        async throws(SyncFailure) -> [ConnectionID: [SyncOutput]]
    {
        guard let m = run.first else { return [:] }
        // An answer for a transfer no longer on this connection (moved, finished) is dropped.
        guard let provider, let t = fetches.transfers[m.asset], t.connection == id else { return [:] }
        switch m.part {
        case .unavailable:
            return await refuse(m.asset, on: id, engine: engine)
        case .manifest(let bytes):
            guard fetches.awaitsManifest(m.asset), await provider.receiveManifest(bytes, for: m.asset) != nil,
                let missing = await provider.missingChunks(of: m.asset)
            else {
                return await refuse(m.asset, on: id, engine: engine)
            }
            // The transfer may have moved (connection closed) while the manifest was stored.
            guard fetches.isAsking(m.asset, on: id) else { return [:] }
            fetches.noteMissing(missing, of: m.asset)
            if missing.isEmpty { return await finishTransfer(m.asset, engine: engine) }
            return [id: requestChunks(m.asset, engine: engine)]
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
            let stored = await provider.receiveChunks(chunks, of: m.asset)
            engine.statistics.assetChunksReceived &+= stored
            // The transfer may have moved (connection closed) while the chunks were stored.
            guard fetches.isAsking(m.asset, on: id) else { return [:] }
            fetches.noteStored(chunks.prefix(stored).map(\.index), of: m.asset)
            guard stored == chunks.count else { return await refuse(m.asset, on: id, engine: engine) }
            if fetches.hasAllChunks(m.asset) { return await finishTransfer(m.asset, engine: engine) }
            return [id: requestChunks(m.asset, engine: engine)]
        }
    }
}
