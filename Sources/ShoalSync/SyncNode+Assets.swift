// SyncNode+Assets: the record engine's side of the asset lane — its public asset calls, the asset
// frames it routes to the node's ``AssetExchange``, and what the exchange may ask of the
// connections (Spec/replication.md §3.7).

public import ShoalWire

/// What ``AssetExchange`` needs to know to serve an asset on a connection.
struct AssetServingTerms {
    /// Whether the connection has a device whose access limits what it is served (a connection
    /// without one, an in-memory transport, may read every asset held, as a zone's owner may).
    var restricted: Bool
    /// The largest frame payload the peer accepts (its hello; this node's own limit before it).
    var maxFramePayloadBytes: Int
}

extension SyncNode {
    // MARK: Fetching

    /// Where asset bytes live; nil: this node neither serves nor fetches assets.
    public var assets: (any AssetProvider)? { exchange.provider }

    /// Starts fetching `asset` from connected peers (nothing to do when it is held already).
    /// Returns the frames to send; ``waitForAsset(_:)`` reports the outcome.
    public func fetchAsset(_ asset: Asset) async -> [ConnectionID: [SyncOutput]] {
        await exchange.fetch(asset, engine: self)
    }

    /// Waits until `asset` is held here (fetched and verified, or already present).
    /// - Throws: ``AssetFetchError`` `assetNotAvailable` when no connected peer could serve it.
    public func waitForAsset(_ asset: Asset) async throws {
        try await exchange.wait(for: asset, engine: self)
    }

    /// Resumes the waiters for `asset` when it is held already: it was fetched while a waiter was
    /// still on its way in (``waitForAsset(_:)``).
    func completeAssetIfHeld(_ asset: Asset) async {
        await exchange.completeIfHeld(asset, engine: self)
    }

    /// A task waiting for `asset` was cancelled: it stops waiting (the fetch goes on for any
    /// other waiter).
    func cancelAssetWait(_ asset: Asset, _ ticket: UInt64) {
        exchange.cancelWait(asset, ticket)
    }

    /// Assets being fetched and the chunks each still lacks (for status and tests).
    public func assetTransfers() -> [Asset: Int] {
        exchange.fetches.chunksLacking
    }

    /// The fetch of `asset` as it stands, if one is under way or parked (for tests).
    func assetTransfer(_ asset: Asset) -> AssetTransfer? {
        exchange.fetches.transfers[asset]
    }

    /// Transfers parked when their connection closed go to another connected peer.
    public func resumeAssetTransfers() async -> [ConnectionID: [SyncOutput]] {
        await exchange.moveTransfers(from: nil, engine: self)
    }

    /// Whether `asset` may be served on connection `id` now (``AssetExchange/mayServe(_:on:engine:)``).
    func mayServe(_ asset: Asset, on id: ConnectionID) async -> Bool {
        await exchange.mayServe(asset, on: id, engine: self)
    }

    // MARK: What the exchange asks of the connections

    /// The established connections whose peers serve assets (hello capability bit 1), in the
    /// order of their IDs, each with its peer.
    func assetServers() -> [(connection: ConnectionID, node: NodeID)] {
        sessions.compactMap { id, session in
            guard session.phase == .established, let peer = session.peer,
                peer.capabilities & Capability.assets != 0
            else { return nil }
            return (id, peer.node)
        }
        .sorted { $0.connection.rawValue < $1.connection.rawValue }
    }

    /// How assets are served on connection `id`; nil when it is not open.
    func assetServingTerms(on id: ConnectionID) -> AssetServingTerms? {
        guard let session = sessions[id] else { return nil }
        return AssetServingTerms(
            restricted: session.device != nil,
            maxFramePayloadBytes: Int(
                clamping: session.peer?.maxFramePayloadBytes ?? UInt64(configuration.limits.maxFramePayloadBytes)))
    }

    /// Whether the device on connection `id` may read `zone`.
    func mayRead(_ zone: RecordZone.ID, on id: ConnectionID) async -> Bool {
        await access(id, zone) >= .read
    }

    // MARK: Frames

    func handleAssetRequest(_ frame: Frame, on id: ConnectionID) async throws(SyncFailure) -> [SyncOutput] {
        let m = try decode { (l) throws(WireError) in try AssetRequestMessage(decoding: frame.payload, limits: l) }
        return await exchange.answer(m, on: id, engine: self)
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
                var all = try await exchange.receive(messages[i..<end], on: id, engine: self)
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
        return try await exchange.receive([m], on: id, engine: self)
    }
}
