// AssetFetches: the assets a node is fetching — which peer each is asked of, the chunks requested
// and still missing, the tasks waiting — and what it remembers of the assets it serves
// (Spec/replication.md §3.7). It holds no store and sends nothing: ``AssetExchange`` asks the
// asset store and the peers, and tells it what happened.

import ShoalWire

/// One asset being fetched.
struct AssetTransfer {
    var asset: Asset
    /// The connection asked now; nil while parked (no peer to ask yet).
    var connection: ConnectionID? = nil
    /// Peers that said they lack it or sent bytes that did not verify.
    var refused: Set<NodeID> = []
    /// Chunk indexes not requested yet, in order (a slice: requesting drops from the front
    /// without moving the rest).
    var pending: ArraySlice<Int> = []
    /// Chunk indexes requested and not answered.
    var inFlight: Set<Int> = []
    /// Whether the manifest request is out.
    var awaitingManifest = false
    /// Times the final check found chunks missing (damaged on disk) and asked for them again.
    var repairs = 0
    /// Tasks waiting for the outcome, by a number that lets one of them cancel alone.
    var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
}

/// The asset fetches of one node, and the tasks waiting for them.
struct AssetFetches {
    /// Times a transfer asks its peer again for chunks that turned out missing or damaged once
    /// the asset store checked the whole.
    static let maxRepairs = 2
    /// Failures remembered for a wait that has not started yet.
    static let maxRecentFailures = 64
    /// Assets whose compressibility is remembered.
    static let maxCompressibility = 256

    /// The transfers under way or parked.
    private(set) var transfers: [Asset: AssetTransfer] = [:]
    /// Whether assets served compress (a trial on their first chunk).
    private var compressible: [Asset: Bool] = [:]
    /// The last number given to a waiting task.
    private var lastTicket: UInt64 = 0
    /// Fetches that failed before anyone waited for them.
    private var recentFailures: [Asset: AssetFetchError] = [:]

    // MARK: Starting and waiting

    /// Notes that `asset` is wanted; true when no peer is being asked for it yet.
    mutating func want(_ asset: Asset) -> Bool {
        if transfers[asset] == nil { transfers[asset] = AssetTransfer(asset: asset) }
        return transfers[asset]?.connection == nil
    }

    /// The failure of a fetch of `asset` that ended before anyone waited for it, once.
    mutating func takeFailure(of asset: Asset) -> AssetFetchError? {
        recentFailures.removeValue(forKey: asset)
    }

    /// A new number for a waiting task.
    mutating func nextTicket() -> UInt64 {
        lastTicket &+= 1
        return lastTicket
    }

    /// Registers `waiter`, numbered `ticket`, for the outcome of `asset`.
    mutating func wait(for asset: Asset, ticket: UInt64, _ waiter: CheckedContinuation<Void, any Error>) {
        if transfers[asset] == nil { transfers[asset] = AssetTransfer(asset: asset) }
        transfers[asset]?.waiters[ticket] = waiter
    }

    /// Whether a task waits for `asset`.
    func isAwaited(_ asset: Asset) -> Bool {
        transfers[asset]?.waiters.isEmpty == false
    }

    /// The task numbered `ticket` stops waiting for `asset`: it is resumed with a cancellation.
    mutating func cancelWait(for asset: Asset, ticket: UInt64) {
        transfers[asset]?.waiters.removeValue(forKey: ticket)?.resume(throwing: CancellationError())
    }

    /// Each transfer and the chunks it still lacks.
    var chunksLacking: [Asset: Int] {
        transfers.mapValues { $0.pending.count + $0.inFlight.count }
    }

    // MARK: Asking peers

    /// The peers that refused `asset` or sent bytes that did not verify (nil: not being fetched).
    func refusers(of asset: Asset) -> Set<NodeID>? {
        transfers[asset]?.refused
    }

    /// Whether `asset` is being fetched and asked of the peer on `id` (nil: whether it is parked).
    func isAsking(_ asset: Asset, on id: ConnectionID?) -> Bool {
        transfers[asset].map { $0.connection == id } ?? false
    }

    /// The transfer of `asset` turns to the peer on `id`, from nothing requested.
    mutating func claim(_ asset: Asset, for id: ConnectionID) {
        transfers[asset]?.connection = id
        transfers[asset]?.pending = []
        transfers[asset]?.inFlight = []
        transfers[asset]?.awaitingManifest = false
    }

    /// The transfer of `asset` waits for a peer to connect.
    mutating func park(_ asset: Asset) {
        transfers[asset]?.connection = nil
    }

    /// Transfers asking the peer on `id`, which is gone, wait for another one; what they had
    /// requested is asked again there.
    mutating func parkAll(on id: ConnectionID) {
        for (asset, t) in transfers where t.connection == id {
            transfers[asset]?.connection = nil
            transfers[asset]?.pending = []
            transfers[asset]?.inFlight = []
        }
    }

    /// The transfers asking the peer on `id` (nil: the parked ones), in a fixed order.
    func assets(on id: ConnectionID?) -> [Asset] {
        transfers.filter { $0.value.connection == id }.keys.sorted { $0.hash < $1.hash }
    }

    /// Whether the manifest of `asset` was asked of its peer and has not come.
    func awaitsManifest(_ asset: Asset) -> Bool {
        transfers[asset]?.awaitingManifest ?? false
    }

    /// The manifest of `asset` is asked of its peer.
    mutating func noteManifestRequested(_ asset: Asset) {
        transfers[asset]?.awaitingManifest = true
    }

    /// The chunks of `asset` still to request, in order, once its manifest is held.
    mutating func noteMissing(_ missing: [Int], of asset: Asset) {
        transfers[asset]?.awaitingManifest = false
        transfers[asset]?.pending = missing[...]
    }

    /// The requests for the chunks of `asset` that the window (`window` chunks in flight) has room
    /// for, in runs of consecutive indexes of at most ``AssetRequestMessage/maxChunks``.
    mutating func nextRequests(_ asset: Asset, window: Int) -> [AssetRequestMessage] {
        // Taken out of the dictionary while it changes, so its arrays are not copied.
        guard var t = transfers.removeValue(forKey: asset) else { return [] }
        var out = [AssetRequestMessage]()
        while t.inFlight.count < window, let first = t.pending.first {
            var count = 1
            while count < t.pending.count, count < window - t.inFlight.count,
                t.pending[t.pending.startIndex + count] == first &+ count, UInt64(count) < AssetRequestMessage.maxChunks
            {
                count &+= 1
            }
            for i in t.pending.prefix(count) { t.inFlight.insert(i) }
            t.pending.removeFirst(count)
            out.append(AssetRequestMessage(asset: asset, part: .chunks(first: UInt64(first), count: UInt64(count))))
        }
        transfers[asset] = t
        return out
    }

    /// Chunks `indexes` of `asset` were answered and stored.
    mutating func noteStored(_ indexes: some Sequence<Int>, of asset: Asset) {
        for i in indexes { transfers[asset]?.inFlight.remove(i) }
    }

    /// Whether every chunk of `asset` was stored: none is left to request or in flight.
    func hasAllChunks(_ asset: Asset) -> Bool {
        guard let t = transfers[asset] else { return false }
        return t.pending.isEmpty && t.inFlight.isEmpty
    }

    /// The peer on `id` (`peer`) failed `asset`: it refused it or sent bytes that did not verify.
    /// It is not asked again; false, and nothing changes, when the transfer is no longer on `id`.
    mutating func refuse(_ asset: Asset, on id: ConnectionID, peer: NodeID?) -> Bool {
        guard var t = transfers[asset], t.connection == id else { return false }
        if let peer { t.refused.insert(peer) }
        t.pending = []
        t.inFlight = []
        t.connection = nil
        transfers[asset] = t
        return true
    }

    /// The whole of `asset` did not check out because chunks held here are missing or damaged:
    /// they are asked again of the same peer, at most ``maxRepairs`` times. False when the
    /// transfer left `id` or used up its repairs.
    mutating func repair(_ asset: Asset, on id: ConnectionID, missing: [Int]) -> Bool {
        guard var t = transfers[asset], t.connection == id, t.repairs < Self.maxRepairs else { return false }
        t.repairs += 1
        t.pending = missing[...]
        t.inFlight = []
        transfers[asset] = t
        return true
    }

    // MARK: Ending

    /// `asset` is held: its waiters return.
    mutating func complete(_ asset: Asset) {
        guard let t = transfers.removeValue(forKey: asset) else { return }
        for w in t.waiters.values { w.resume() }
    }

    /// The fetch of `asset` failed with `error`: its waiters throw it, or, when none waits yet,
    /// the next wait does.
    mutating func fail(_ asset: Asset, _ error: AssetFetchError) {
        guard let t = transfers.removeValue(forKey: asset), !t.waiters.isEmpty else {
            if recentFailures.count >= Self.maxRecentFailures { recentFailures.removeAll() }
            recentFailures[asset] = error
            return
        }
        for w in t.waiters.values { w.resume(throwing: error) }
    }

    // MARK: Serving

    /// Whether `asset` compresses, from a zstd trial on `sample` the first time (remembered for
    /// up to ``maxCompressibility`` assets).
    mutating func compressibility(of asset: Asset, sample: [UInt8]) -> Bool {
        if let known = compressible[asset] { return known }
        let saves = sample.withUnsafeBytes { raw in
            ZstdCompressor().compress(raw, level: 1, dictionary: nil, notBelow: max(1, raw.count * 97 / 100)) != nil
        }
        if compressible.count >= Self.maxCompressibility { compressible.removeAll() }
        compressible[asset] = saves
        return saves
    }
}
