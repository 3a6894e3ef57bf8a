// PowerCut: one seeded run of a node's store up to a power cut below it, and the checks after.

import CSQLite
import CShoalPowerCut
import ShoalWire
@testable import ShoalStore
import Synchronization
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What a run's checks found; the soak adds them up.
struct PowerCutFindings {
    var cuts = 0
    /// The power went off inside a store call (the call failed), not between calls.
    var cutsInsideACall = 0
    var unopenable = 0
    var integrityFailures = 0
    /// Local writes whose call returned and that are gone (neither present nor superseded), and
    /// replicated batches committed before such a write that are gone.
    var lostAcknowledged = 0
    /// Knowledge or positions that survived without the versions they were written with.
    var overclaims = 0
    /// Runs whose replica, after fetching again from its knowledge, differed from the peer's.
    var divergentAfterResync = 0
    /// Runs whose store refused a write after reopening.
    var unusableAfterReopen = 0
    /// Replicated batches whose apply returned, lost with their knowledge (NORMAL commits the
    /// cut undid), and fetched again.
    var refetchedBatches = 0
    var sectorsDropped: UInt64 = 0
    var sectorsKept: UInt64 = 0
    var entriesUndone: UInt64 = 0
    /// One line per failure, naming the seed.
    var failures: [String] = []

    var failed: Int {
        unopenable + integrityFailures + lostAcknowledged + overclaims + divergentAfterResync + unusableAfterReopen
    }

    mutating func add(_ o: PowerCutFindings) {
        cuts += o.cuts; cutsInsideACall += o.cutsInsideACall; unopenable += o.unopenable
        integrityFailures += o.integrityFailures; lostAcknowledged += o.lostAcknowledged
        overclaims += o.overclaims; divergentAfterResync += o.divergentAfterResync
        unusableAfterReopen += o.unusableAfterReopen; refetchedBatches += o.refetchedBatches
        sectorsDropped += o.sectorsDropped; sectorsKept += o.sectorsKept; entriesUndone += o.entriesUndone
        failures += o.failures
    }

    func summary(seeds: Int) -> String {
        "power-loss: seeds=\(seeds) cuts=\(cuts) cuts_inside_a_call=\(cutsInsideACall) lost_acknowledged=\(lostAcknowledged) "
            + "unopenable=\(unopenable) integrity_failures=\(integrityFailures) overclaims=\(overclaims) "
            + "divergent_after_resync=\(divergentAfterResync) unusable_after_reopen=\(unusableAfterReopen) "
            + "refetched_batches=\(refetchedBatches) "
            + "sectors_dropped=\(sectorsDropped) sectors_kept=\(sectorsKept) entries_undone=\(entriesUndone)"
    }
}

/// One seeded run: a peer's batches prepared on a store of its own; the node under test saves
/// locally (`synchronous=FULL`), applies the peer's batches with their knowledge and positions
/// (`NORMAL`), acknowledges and purges, through the power-cut VFS, until the power goes off at a
/// seeded event; then it reopens through the default VFS and checks Spec/store.md §2.3.
///
/// A seed replays the same workload, identities, cut event and loss choices. The background
/// checkpointer runs on its own thread, so which commit a given event number falls in can move
/// between runs of a seed; rerun a failing seed a few times (`SHOAL_POWERLOSS_FIRST_SEED=<seed>
/// SHOAL_POWERLOSS_SEEDS=1`) to see it again.
struct PowerCut {
    let seed: UInt64
    var rng: SeededRandom
    let localZone = RecordZone.ID(name: "local")
    let remoteZone = RecordZone.ID(name: "remote")
    let clock = SteppingClock()
    let identifiers: SeededIdentifiers
    /// A broken ordering for the tests that show the checks catch one: knowledge committed in a
    /// transaction of its own before the versions it claims, instead of with them.
    var knowledgeBeforeVersions = false

    init(seed: UInt64) {
        self.seed = seed
        rng = SeededRandom(state: seed &* 0x2545_F491_4F6C_DD1D &+ 1)
        identifiers = SeededIdentifiers(seed: seed ^ 0x5EED)
    }

    /// What the node knows it was told: the last acknowledged write of each local name.
    enum LocalState { case saved(VersionVector), deleted }

    /// The call under way when the power went off.
    enum InFlight { case none, save([String]), delete(String), apply(Int), other }

    func configuration(vfs: Bool, checkpointPages: Int) -> Store.Configuration {
        var c = Store.Configuration()
        // Through the VFS, local writes FULL and replication NORMAL, as a node runs. Elsewhere
        // (setting up, checking) what the real disk syncs does not matter: NORMAL saves fsyncs.
        c.synchronous = vfs ? .full : .normal
        c.replicationSynchronous = .normal
        c.checkpointPages = checkpointPages
        c.busyTimeout = .milliseconds(200)
        let clock = self.clock
        c.wallClock = { clock.read() }
        let identifiers = self.identifiers
        c.newIdentifier = { identifiers.next() }
        c.vfsName = vfs ? SHOAL_POWERCUT_VFS_NAME : nil
        return c
    }

    static func encode(_ n: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(n).littleEndian) { Array($0) } }
    static func decode(_ b: [UInt8]?) -> Int {
        guard let b, b.count == 4 else { return 0 }
        return Int(UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24)
    }

    /// Where the soak keeps what it applied of the peer's batches, as replication keeps its
    /// knowledge of the remote zone.
    static let knowledgeKey = SyncStateKey.knowledge(zone: RecordZone.ID(name: "remote"))
    /// Where the soak keeps a position, as replication keeps one per peer and zone.
    static let positionKey = SyncStateKey.position(peer: NodeID(high: 0, low: 1), zone: RecordZone.ID(name: "remote"))

    static func record(_ name: String, zone: RecordZone.ID, _ value: Int) -> Record {
        var r = Record(recordType: "Item", id: Record.ID(name: name, zone: zone))
        r["value"] = .int64(Int64(value))
        r["pad"] = .string(String(repeating: "x", count: value % 700))
        return r
    }

    /// The peer's batches: what it would send, in order, each the versions changed since the last.
    mutating func peerBatches(_ dir: ScratchDirectory) async throws -> (
        batches: [[Record]], peer: NodeID, incarnation: NodeID, digest: ZoneDigest
    ) {
        let c = configuration(vfs: false, checkpointPages: 256)
        let peer = try Store.open(directory: dir.path, configuration: c)
        let incarnation = try await peer.createZone(remoteZone).incarnation
        var batches: [[Record]] = []
        var token: ChangeToken? = nil
        for _ in 0..<(4 + rng.below(10)) {
            for _ in 0..<(1 + rng.below(6)) {
                let name = "r\(rng.below(16))"
                if rng.chance(20) {
                    _ = try? await peer.modify(deleting: [Record.ID(name: name, zone: remoteZone)], policy: .allKeys)
                } else {
                    _ = try await peer.save(Self.record(name, zone: remoteZone, rng.below(10_000)), policy: .allKeys)
                }
            }
            let page = try await peer.changes(in: remoteZone, since: token)
            token = page.token
            if !page.records.isEmpty { batches.append(page.records) }
        }
        return (batches, peer.nodeID, incarnation, try await peer.digest(of: remoteZone))
    }

    /// Runs the seed: one cut, then the checks.
    mutating func run() async -> PowerCutFindings {
        var f = PowerCutFindings()
        do {
            try await runThrowing(&f)
        } catch {
            f.failures.append("seed \(seed): the run itself failed: \(error)")
            f.unusableAfterReopen += 1
        }
        return f
    }

    private mutating func runThrowing(_ f: inout PowerCutFindings) async throws {
        let peerDir = ScratchDirectory("shoal-powercut-peer"), dir = ScratchDirectory("shoal-powercut-node")
        let (batches, peerID, incarnation, peerDigest) = try await peerBatches(peerDir)
        let checkpointPages = [2, 8, 64, 256][rng.below(4)]
        let fresh = rng.chance(25)
        let opCount = 10 + rng.below(30)
        // About 15 events a call (about 100 more to create a store): a cut anywhere in the run,
        // or after it (then at its end).
        let cutAt = UInt64(1 + rng.below(opCount * 17 + (fresh ? 120 : 0)))
        let cutSeed = rng.next()

        var local: [String: LocalState] = [:]
        var appliedThrough = 0  // the last batch whose apply returned
        var durableThrough = 0  // the last batch applied before a local write returned
        var inFlight = InFlight.none
        var zonesCreated = false
        var openedAs: NodeID? = nil  // the node ID of the first open through the VFS that returned

        let migrates = !fresh && rng.chance(30)
        if !fresh {
            let s = try Store.open(
                directory: dir.path, configuration: configuration(vfs: false, checkpointPages: checkpointPages))
            try await s.createZone(localZone)
            try await s.createZone(remoteZone, incarnation: incarnation)
            for i in 0..<4 {
                let saved = try await s.save(Self.record("l\(i)", zone: localZone, i), policy: .allKeys)
                local["l\(i)"] = .saved(saved.versionVector)
            }
            zonesCreated = true
        }
        if migrates {
            // Back to schema 6, as SchemaMigrationTests does: the open below migrates to 11
            // through the VFS (asset references listed again, the base column added, the
            // writer logs started).
            if let problem = Self.execute(
                dir.path + "/store.sqlite",
                "DROP TABLE writer_entries; DROP TABLE writer_logs; DROP TABLE writer_checkpoints; ALTER TABLE zones DROP COLUMN log_seq; ALTER TABLE zones DROP COLUMN log_hlc; "
                    + "ALTER TABLE zones DROP COLUMN log_chain; DROP TABLE asset_refs; ALTER TABLE records DROP COLUMN base; "
                    + "UPDATE meta SET value = 6 WHERE key = 'schema'")
            {
                f.failures.append("seed \(seed): cannot go back to schema 6: \(problem)")
                f.unusableAfterReopen += 1
                return
            }
        }
        _ = shoal_powercut_register()
        shoal_powercut_reset(cutSeed, cutAt)
        let vfsConfiguration = configuration(vfs: true, checkpointPages: checkpointPages)
        var store: Store? = nil
        do {
            inFlight = .other
            store = try Store.open(directory: dir.path, configuration: vfsConfiguration)
            openedAs = store!.nodeID
            if !zonesCreated {
                try await store!.createZone(localZone)
                try await store!.createZone(remoteZone, incarnation: incarnation)
                zonesCreated = true
            }
            inFlight = .none
            var nextBatch = 1
            for _ in 0..<opCount {
                let roll = rng.below(100)
                if roll >= 96 {
                    // A clean restart through the VFS: the close checkpoints and deletes the log
                    // (a deletion whose directory entry is not synced), and the open recovers.
                    inFlight = .other
                    store = nil
                    if !(await Self.filesClosed()) {
                        f.failures.append("seed \(seed): a closed store kept \(shoal_powercut_open_files()) files open")
                        f.unusableAfterReopen += 1
                        return
                    }
                    store = try Store.open(directory: dir.path, configuration: vfsConfiguration)
                    inFlight = .none
                    continue
                }
                let s = store!
                if roll < 28 {
                    let name = "l\(rng.below(24))"
                    inFlight = .save([name])
                    let saved = try await s.save(
                        Self.record(name, zone: localZone, rng.below(10_000)), policy: .allKeys)
                    local[name] = .saved(saved.versionVector)
                    durableThrough = appliedThrough
                } else if roll < 36 {
                    var names: [String] = []
                    for _ in 0..<(2 + rng.below(4)) {
                        let name = "l\(rng.below(24))"
                        if !names.contains(name) { names.append(name) }
                    }
                    var records: [Record] = []
                    for name in names { records.append(Self.record(name, zone: localZone, rng.below(10_000))) }
                    inFlight = .save(names)
                    let saved = try await s.modify(saving: records, policy: .allKeys)
                    for r in saved.savedRecords { local[r.id.name] = .saved(r.versionVector) }
                    durableThrough = appliedThrough
                } else if roll < 44 {
                    let live = local.filter { if case .saved = $0.value { true } else { false } }.keys.sorted()
                    guard let name = live.isEmpty ? nil : live[rng.below(live.count)] else { continue }
                    inFlight = .delete(name)
                    try await s.modify(deleting: [Record.ID(name: name, zone: localZone)], policy: .allKeys)
                    local[name] = .deleted
                    durableThrough = appliedThrough
                } else if roll < 80 {
                    guard nextBatch <= batches.count else { continue }
                    inFlight = .apply(nextBatch)
                    if knowledgeBeforeVersions {
                        try await s.setSyncValue(Self.knowledgeKey, Self.encode(nextBatch))
                        try await s.apply(remoteChanges: batches[nextBatch - 1])
                    } else {
                        try await s.apply(
                            remoteChanges: batches[nextBatch - 1],
                            syncState: [Self.knowledgeKey: Self.encode(nextBatch)])
                    }
                    appliedThrough = nextBatch
                    nextBatch += 1
                } else if roll < 88 {
                    inFlight = .other
                    try await s.setSyncValue(Self.positionKey, Self.encode(appliedThrough))
                } else {
                    inFlight = .other
                    let vector = try await s.zone(localZone).versionVector
                    try await s.acknowledge(peer: peerID, zone: localZone, vector: vector)
                    try await s.purgeTombstones()
                }
                inFlight = .none
            }
        } catch {
            // The power went off inside the call: it did not return, so nothing is acknowledged.
            if shoal_powercut_is_cut() == 0 {
                f.failures.append("seed \(seed): a call failed before the cut: \(error)")
                f.unusableAfterReopen += 1
            }
            f.cutsInsideACall += 1
        }
        if shoal_powercut_is_cut() == 0 { inFlight = .none }
        _ = shoal_powercut_cut_now()
        f.cuts += 1
        var kept: UInt64 = 0, dropped: UInt64 = 0, undone: UInt64 = 0
        shoal_powercut_last_cut(&kept, &dropped, &undone)
        f.sectorsKept += kept; f.sectorsDropped += dropped; f.entriesUndone += undone
        store = nil
        _ = store
        // The abandoned store's connections close on release (their I/O fails after the cut).
        if !(await Self.filesClosed()) {
            f.failures.append("seed \(seed): the abandoned store kept \(shoal_powercut_open_files()) files open")
            f.unusableAfterReopen += 1
            return
        }
        shoal_powercut_reset(0, 0)
        try await check(
            &f, dir: dir, local: local, appliedThrough: appliedThrough, durableThrough: durableThrough,
            inFlight: inFlight, zonesCreated: zonesCreated, openedAs: openedAs, batches: batches,
            peerDigest: peerDigest,
            checkpointPages: checkpointPages)
    }

    /// Whether every file opened through the VFS is closed, waiting a bounded while for a
    /// released store to close its connections.
    static func filesClosed() async -> Bool {
        var waited = 0
        while shoal_powercut_open_files() > 0 && waited < 2_000 {
            await Task.yield()
            waited += 1
        }
        return shoal_powercut_open_files() == 0
    }

    /// Runs `sql` on a connection of its own; nil when it succeeded.
    static func execute(_ path: String, _ sql: String) -> String? {
        var h: OpaquePointer? = nil
        guard sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let h else {
            sqlite3_close_v2(h)
            return "cannot open \(path)"
        }
        defer { sqlite3_close_v2(h) }
        return sqlite3_exec(h, sql, nil, nil, nil) == SQLITE_OK ? nil : String(cString: sqlite3_errmsg(h))
    }

    /// The first column of the first row `sql` returns, on a connection of its own.
    static func scalar(_ path: String, _ sql: String) -> String? {
        var h: OpaquePointer? = nil
        guard sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let h else {
            sqlite3_close_v2(h)
            return nil
        }
        defer { sqlite3_close_v2(h) }
        var stmt: OpaquePointer? = nil
        guard sqlite3_prepare_v2(h, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else { return nil }
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_ROW else { return nil }
        return sqlite3_column_text(stmt, 0).map { String(cString: $0) }
    }

    /// `PRAGMA integrity_check` on a connection of its own; nil when it says ok. `readOnly` for a
    /// database a store holds open (the check then writes nothing, nor checkpoints when it closes).
    static func integrityProblem(_ path: String, readOnly: Bool = false) -> String? {
        var h: OpaquePointer? = nil
        guard sqlite3_open_v2(path, &h, readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, nil) == SQLITE_OK,
            let h
        else {
            sqlite3_close_v2(h)
            return "cannot open \(path)"
        }
        defer { sqlite3_close_v2(h) }
        var stmt: OpaquePointer? = nil
        guard sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &stmt, nil) == SQLITE_OK, let stmt else {
            return String(cString: sqlite3_errmsg(h))
        }
        defer { sqlite3_finalize(stmt) }
        var lines: [String] = []
        while sqlite3_step(stmt) == SQLITE_ROW, lines.count < 8 {
            lines.append(sqlite3_column_text(stmt, 0).map { String(cString: $0) } ?? "")
        }
        return lines == ["ok"] ? nil : lines.joined(separator: "; ")
    }

    /// Every version of `zone` the store holds, tombstones included.
    static func everything(_ s: Store, _ zone: RecordZone.ID) async throws -> [Record.ID: Record] {
        var all: [Record.ID: Record] = [:]
        var token: ChangeToken? = nil
        for _ in 0..<10_000 {
            let page = try await s.changes(in: zone, since: token)
            for r in page.records { all[r.id] = r }
            token = page.token
            if !page.moreComing { break }
        }
        return all
    }

    private func check(
        _ f: inout PowerCutFindings, dir: ScratchDirectory, local: [String: LocalState], appliedThrough: Int,
        durableThrough: Int, inFlight: InFlight, zonesCreated: Bool, openedAs: NodeID?, batches: [[Record]],
        peerDigest: ZoneDigest, checkpointPages: Int
    ) async throws {
        func fail(_ what: String) { f.failures.append("seed \(seed): \(what)") }
        let path = dir.path + "/store.sqlite"
        // A new store's file may be gone altogether (its directory entry never synced): then
        // there is nothing to check, and the zone check below says whether that lost anything.
        if FileManager.default.fileExists(atPath: path), let problem = Self.integrityProblem(path) {
            f.integrityFailures += 1
            fail("integrity_check: \(problem)")
        }
        let s: Store
        do {
            s = try Store.open(
                directory: dir.path, configuration: configuration(vfs: false, checkpointPages: checkpointPages))
        } catch {
            f.unopenable += 1
            fail("the store does not open: \(error)")
            return
        }
        if let openedAs, s.nodeID != openedAs {
            f.lostAcknowledged += 1
            fail("the store opened as \(openedAs) and reopens as \(s.nodeID)")
        }
        if let schema = Self.scalar(path, "SELECT value FROM meta WHERE key = 'schema'"), schema != "11" {
            f.unusableAfterReopen += 1
            fail("the reopened store is at schema \(schema), not 11")
        }
        let zones = await s.zones().map(\.id)
        guard zones.contains(localZone), zones.contains(remoteZone) else {
            // A zone's creation is a local write: once `createZone` returned it stays.
            if zonesCreated {
                f.lostAcknowledged += 1
                fail("the zones are gone: \(zones)")
            }
            return
        }
        // Local writes: every one that returned is there, or superseded by the call under way.
        let held = try await Self.everything(s, localZone)
        for (name, state) in local.sorted(by: { $0.key < $1.key }) {
            let stored = held[Record.ID(name: name, zone: localZone)]
            var inFlightDeletes = false, inFlightSaves = false
            switch inFlight {
            case .save(let names): inFlightSaves = names.contains(name)
            case .delete(let n): inFlightDeletes = n == name
            default: break
            }
            switch state {
            case .saved(let v):
                guard let stored, v.isDominated(by: stored.versionVector) else {
                    f.lostAcknowledged += 1
                    fail(
                        "the save of \(name) returned, and the store holds \(stored.map { "\($0.versionVector)" } ?? "nothing") under \(v)"
                    )
                    continue
                }
                if stored.isDeleted && !inFlightDeletes {
                    f.lostAcknowledged += 1
                    fail("the save of \(name) returned, and it is deleted")
                }
            case .deleted:
                if let stored, !stored.isDeleted, !inFlightSaves {
                    f.lostAcknowledged += 1
                    fail("the delete of \(name) returned, and it is live again")
                }
            }
        }
        // Replicated batches: what knowledge and positions claim is held; what a local write
        // synced is held; nothing is claimed that was never applied.
        let knowledge = Self.decode(try await s.syncValue(Self.knowledgeKey))
        let position = Self.decode(try await s.syncValue(Self.positionKey))
        var applying = 0
        if case .apply(let n) = inFlight { applying = n }
        if knowledge < durableThrough {
            f.lostAcknowledged += 1
            fail(
                "batches through \(durableThrough) were applied before a local write returned; knowledge says \(knowledge)"
            )
        }
        if position > knowledge || knowledge > max(appliedThrough, applying) {
            f.overclaims += 1
            fail("position \(position), knowledge \(knowledge), applied \(appliedThrough) (applying \(applying))")
        }
        let remote = try await Self.everything(s, remoteZone)
        let horizon = try await s.purgeHorizon(of: remoteZone)
        for (i, batch) in batches.prefix(knowledge).enumerated() {
            for v in batch {
                if let stored = remote[v.id] {
                    if v.versionVector.isDominated(by: stored.versionVector) { continue }
                } else if v.versionVector.isDominated(by: horizon) {
                    continue  // its tombstone (this version's or a later one's) was purged
                }
                f.overclaims += 1
                fail("knowledge \(knowledge) claims batch \(i + 1), and \(v.id.name) \(v.versionVector) is not held")
            }
        }
        // Healing: the peer sends again what the knowledge does not claim; the replicas agree.
        f.refetchedBatches += max(0, appliedThrough - knowledge)
        for (i, batch) in batches.enumerated().dropFirst(knowledge) {
            try await s.apply(remoteChanges: batch, syncState: [Self.knowledgeKey: Self.encode(i + 1)])
        }
        if try await s.digest(of: remoteZone) != peerDigest {
            f.divergentAfterResync += 1
            fail("after fetching again from knowledge \(knowledge), the replica differs from the peer")
        }
        // Usable: a new local write commits, with a dot above every one the node made before.
        do {
            let before = try await s.zone(localZone).versionVector[s.nodeID]
            let saved = try await s.save(Self.record("after-the-cut", zone: localZone, 1), policy: .allKeys)
            if saved.versionVector[s.nodeID] <= before {
                f.unusableAfterReopen += 1
                fail("a write after reopening reused a timestamp: \(saved.versionVector) at or below \(before)")
            }
        } catch {
            f.unusableAfterReopen += 1
            fail("a write after reopening failed: \(error)")
        }
    }
}
