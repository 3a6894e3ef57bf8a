// NodesPowerCut: one seeded run of several replicating nodes on the power-cut VFS, the power cut
// below one node at a time while the others go on, and the checks after.

import CShoalPowerCut
import ShoalStore
import ShoalWire
@testable import ShoalSync
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What the multi-node runs' checks found; the soak adds them up.
struct NodesPowerCutFindings {
    var nodes = 0
    var cuts = 0
    /// The power went off inside a store call (at a write, sync, truncation or deletion through the
    /// VFS), not between two calls.
    var cutsInsideACall = 0
    /// Stores that did not open again after a cut.
    var unopenable = 0
    var integrityFailures = 0
    /// Local writes whose call returned and that are gone (on the node at its reopening, or
    /// anywhere after healing); remote versions a cut undid that healing did not bring back.
    var lostAcknowledged = 0
    /// Runs whose nodes did not hold the same zones and records after healing, or did not go
    /// quiet within the bound.
    var diverged = 0
    /// Runs that failed otherwise (a call failed with the power on, files left open).
    var runFailures = 0
    /// Remote versions that a node held (their apply had returned) and a cut undid.
    var undoneVersions = 0
    /// Of those, the ones back on the node after healing (fetched again, or by a full resync).
    var refetchedVersions = 0
    /// Full resyncs completed (a node's knowledge below a peer's purge horizon, or an expired
    /// token: Spec/replication.md §3.5.2).
    var resyncs = 0
    /// Local saves and deletes that returned.
    var saves = 0
    var deletes = 0
    /// The most rounds a run's healing needed.
    var maxRounds = 0
    var sectorsDropped: UInt64 = 0
    var entriesUndone: UInt64 = 0
    /// One line per failure, naming the seed.
    var failures: [String] = []

    var failed: Int { unopenable + integrityFailures + lostAcknowledged + diverged + runFailures }

    mutating func add(_ o: NodesPowerCutFindings) {
        nodes = max(nodes, o.nodes); cuts += o.cuts; cutsInsideACall += o.cutsInsideACall; unopenable += o.unopenable
        integrityFailures += o.integrityFailures; lostAcknowledged += o.lostAcknowledged; diverged += o.diverged
        runFailures += o.runFailures; undoneVersions += o.undoneVersions; refetchedVersions += o.refetchedVersions
        resyncs += o.resyncs; saves += o.saves; deletes += o.deletes; maxRounds = max(maxRounds, o.maxRounds)
        sectorsDropped += o.sectorsDropped; entriesUndone += o.entriesUndone
        failures += o.failures
    }

    func summary(seeds: Int) -> String {
        "power-loss: nodes=\(nodes) seeds=\(seeds) cuts=\(cuts) cuts_inside_a_call=\(cutsInsideACall) "
            + "lost_acknowledged=\(lostAcknowledged) unopenable=\(unopenable) integrity_failures=\(integrityFailures) "
            + "diverged=\(diverged) run_failures=\(runFailures) undone_versions=\(undoneVersions) "
            + "refetched_versions=\(refetchedVersions) resyncs=\(resyncs) saves=\(saves) deletes=\(deletes) "
            + "max_rounds=\(maxRounds) sectors_dropped=\(sectorsDropped) entries_undone=\(entriesUndone)"
    }
}

/// One seeded run: `nodes` ``SyncNode``s in the in-process ``Simulation``, every store on the
/// power-cut VFS (local writes `FULL`, replication `NORMAL`, as a node runs), saving, deleting,
/// replicating, acknowledging and purging tombstones, with connection resets, partitions and
/// kill -9 restarts. Now and then one node is armed: its power goes off at a seeded write, sync,
/// truncation or deletion below its store (inside whatever call is under way), or between two
/// calls; its unsynced writes are dropped, kept, kept in part or torn, its unsynced directory
/// entries possibly undone, while the other nodes go on. It stays down a seeded while, reopens on
/// what is left and rejoins. At each reopening: `integrity_check`, and every local write of the
/// node that returned is there or superseded. After healing: every store intact, every node holds
/// the same records, every write that returned anywhere is there or superseded, and every remote
/// version a cut undid is back.
///
/// A seed replays exactly: one task drives every node, checkpoints run in the committing call and
/// acknowledgements are written inside the call that received them, so the VFS sees the same
/// events in the same order (``fingerprint`` records them).
struct NodesPowerCut {
    let seed: UInt64
    let nodeCount: Int
    /// Where a node's store stands while its power is off: nothing reaches it (the node is down),
    /// and the node's own store and engine are released so their files close.
    let standIn: Store
    /// The steps of the workload before healing.
    var steps = 160
    /// The most rounds healing may take before the run counts as diverged.
    var maxHealingRounds = 400
    /// What happened, in order, for comparing two runs of the seed.
    private(set) var fingerprint: [String] = []

    /// SHOAL_POWERLOSS_NODES_TRACE set: every line of the fingerprint is printed as it happens.
    static let tracing = ProcessInfo.processInfo.environment["SHOAL_POWERLOSS_NODES_TRACE"] != nil
    /// SHOAL_POWERLOSS_NODES_TRACE=engines: the engines' own trace lines too.
    static let tracingEngines = ProcessInfo.processInfo.environment["SHOAL_POWERLOSS_NODES_TRACE"] == "engines"

    private mutating func note(_ line: String) {
        if Self.tracing { print("seed \(seed): \(line)") }
        fingerprint.append(line)
    }

    init(seed: UInt64, nodes: Int = 3, standIn: Store) {
        self.seed = seed
        self.nodeCount = nodes
        self.standIn = standIn
    }

    /// A remote version a cut undid on a node: to be back after healing.
    struct Undone {
        let node: Int
        let zone: RecordZone.ID
        let name: String
        let vector: VersionVector
    }

    /// The node whose power the next cut takes, and until when it is down.
    enum Power {
        case steady
        /// Armed: its power goes off at the VFS event, or at the step `deadline` at the latest
        /// (then between two calls).
        case armed(node: Int, deadline: Int)
        /// Off until `step`.
        case down(node: Int, until: Int)
    }

    mutating func run() async -> NodesPowerCutFindings {
        var f = NodesPowerCutFindings()
        f.nodes = nodeCount
        do {
            try await runThrowing(&f)
        } catch {
            f.runFailures += 1
            f.failures.append("seed \(seed): the run itself failed: \(error)")
        }
        // Disarmed, whatever happened: the next run starts from a clean VFS.
        shoal_powercut_reset(0, 0)
        return f
    }

    static func storeSetup(checkpointPages: Int) -> @Sendable (inout Store.Configuration) -> Void {
        { c in
            c.synchronous = .full
            c.replicationSynchronous = .normal
            c.vfsName = SHOAL_POWERCUT_VFS_NAME
            c.checkpointPages = checkpointPages
            c.checkpointsInBackground = false
        }
    }

    private mutating func runThrowing(_ f: inout NodesPowerCutFindings) async throws {
        _ = shoal_powercut_register()
        guard await Self.filesClosed(under: "/") else {
            f.runFailures += 1
            f.failures.append("seed \(seed): \(shoal_powercut_open_files()) files of an earlier run are still open")
            return
        }
        shoal_powercut_reset(0, 0)
        var configuration = SyncConfiguration()
        configuration.writesAcknowledgementsInline = true
        let checkpointPages = [2, 8, 64, 256][Int(seed % 4)]
        let sim = try await Simulation(
            seed: seed, nodes: nodeCount, configuration: configuration, identities: seed % 4 >= 2,
            storeSetup: Self.storeSetup(checkpointPages: checkpointPages))
        if Self.tracingEngines { await sim.enableTrace() }
        for n in sim.nodes.indices { note("node \(n) is \(sim.nodes[n].store.nodeID.short)") }
        var log = WorkloadLog()
        if sim.nodes[0].signer != nil {
            try await sim.createSharedZone(RecordZone.ID(name: "notes"), on: 0)
            try await sim.createSharedZone(RecordZone.ID(name: "lab"), on: 1)
        } else {
            _ = try await sim.nodes[0].store.createZone(RecordZone.ID(name: "notes"))
            _ = try await sim.nodes[1].store.createZone(RecordZone.ID(name: "lab"))
            _ = try await sim.nodes[nodeCount - 1].store.createZone(RecordZone.ID(name: "lab"))
        }
        for a in sim.nodes.indices { for b in sim.nodes.indices where a < b { try await sim.connect(a, b) } }

        var power = Power.steady
        var snapshot: [RecordZone.ID: [String: VersionVector]] = [:]
        var undone: [Undone] = []
        for step in 0..<steps {
            switch power {
            case .steady where sim.chance(12):
                let v = sim.int(nodeCount)
                // About 5–15 events a commit: a cut within the next few dozen calls of the node.
                let at = UInt64(1 + sim.int(150))
                shoal_powercut_arm(sim.nodes[v].directory, sim.rng.next(), at)
                power = .armed(node: v, deadline: step + 15 + sim.int(50))
                note("arm \(v) at \(at) step \(step)")
                snapshot = try await Self.vectors(sim, v)
            case .armed(let v, let deadline) where step >= deadline:
                _ = shoal_powercut_cut_now()
                note("cut \(v) between calls at step \(step)")
                guard try await powerOff(sim, v, &f, &power, step: step) else { return }
            case .down(let v, let until) where step >= until:
                guard try await powerOn(sim, v, &f, log: log, snapshot: snapshot, undone: &undone) else { return }
                power = .steady
            default:
                break
            }
            let (savesBefore, crashesBefore) = (log.saves.count, sim.crashes)
            let deletesBefore = log.deletes.count, failedBefore = log.failedWrites.count
            defer {
                for s in log.saves[savesBefore...] {
                    note("step \(step): saved \(s.zone)/\(s.name) at \(s.dot), event \(shoal_powercut_events())")
                }
                for d in log.deletes[deletesBefore...] {
                    note("step \(step): deleted \(d.zone)/\(d.name) at \(d.vector), event \(shoal_powercut_events())")
                }
                if sim.crashes > crashesBefore { note("step \(step): a node restarted (kill -9)") }
            }
            do {
                try await self.step(sim, &log, power: power)
            } catch  where shoal_powercut_is_cut() != 0 {
                // A restart the cut interrupted (its open failed): the node is taken down below.
                note("step \(step) failed at the cut: \(error)")
            }
            if case .armed(let v, _) = power {
                if shoal_powercut_is_cut() != 0 {
                    f.cutsInsideACall += 1
                    note("cut \(v) inside a call at step \(step), event \(shoal_powercut_events())")
                    // The write the cut interrupted never returned: it may have committed.
                    for w in log.failedWrites[failedBefore...] where w.node == sim.nodes[v].store.nodeID {
                        log.interrupted.append(w)
                        note("step \(step): the cut interrupted a write of \(w.zone)/\(w.name)")
                    }
                    guard try await powerOff(sim, v, &f, &power, step: step) else { return }
                } else {
                    snapshot = try await Self.vectors(sim, v)
                }
            }
        }
        // Healing: the power back on, no partitions, every pair connected, until quiet.
        switch power {
        case .armed:
            shoal_powercut_reset(0, 0)
        case .down(let v, _):
            guard try await powerOn(sim, v, &f, log: log, snapshot: snapshot, undone: &undone) else { return }
        case .steady:
            break
        }
        sim.partitions.removeAll()
        for a in sim.nodes.indices { for b in sim.nodes.indices where a < b { try await sim.connect(a, b) } }
        guard let rounds = try await sim.runRoundsUntilQuiet(maxRounds: maxHealingRounds) else {
            f.diverged += 1
            f.failures.append("seed \(seed): the network did not go quiet within \(maxHealingRounds) rounds")
            return
        }
        f.maxRounds = rounds
        note("healed in \(rounds) rounds, \(sim.framesDelivered) frames, \(sim.bytesDelivered) bytes")
        try await checkAfterHealing(sim, &f, log: log, undone: undone)
    }

    /// One step of the workload, as ``Simulation/run(steps:)`` takes them, on the nodes that are up.
    private func step(_ sim: Simulation, _ log: inout WorkloadLog, power: Power) async throws {
        var down: Int? = nil
        if case .down(let v, _) = power { down = v }
        let r = sim.int(100)
        if r < 30 {
            let n = sim.int(nodeCount)
            if sim.nodes[n].up { await sim.write(on: n, log: &log) }
        } else if r < 75 {
            let p = sim.pending
            if !p.isEmpty {
                let (i, toB) = p[sim.int(p.count)]
                try await sim.deliver(link: i, toB: toB)
            }
        } else if r < 82 {
            try await sim.connect(sim.int(nodeCount), sim.int(nodeCount))
        } else if r < 86, !sim.links.isEmpty {
            await sim.reset(sim.int(sim.links.count))
        } else if r < 88 {
            // kill -9 and restart: what the node wrote and did not sync stays in the page cache.
            let n = sim.int(nodeCount)
            if n != down { try await sim.crash(n) }
        } else if r < 91 {
            let a = sim.int(nodeCount), b = sim.int(nodeCount)
            if a != b {
                sim.partitions.insert(sim.pairKey(a, b))
                if let i = sim.links.firstIndex(where: { sim.pairKey($0.a, $0.b) == sim.pairKey(a, b) }) {
                    await sim.reset(i)
                }
            }
        } else if r < 94, let p = sim.partitions.sorted(by: { $0.lexicographicallyPrecedes($1) }).first {
            sim.partitions.remove(p)
        } else if sim.chance(40) {
            // Tombstone purges by acknowledgements and a retention, sometimes retiring a peer first.
            let n = sim.int(nodeCount)
            if sim.nodes[n].up {
                let other = sim.int(nodeCount)
                if other != n, sim.chance(30) {
                    for z in await sim.nodes[n].store.zones() {
                        try? await sim.nodes[n].store.removePeer(sim.nodes[other].store.nodeID, from: z.id)
                    }
                }
                do {
                    log.purged += try await sim.nodes[n].sync.purgeTombstones(retention: Simulation.retention)
                } catch  where shoal_powercut_is_cut() != 0 {
                    // The call the cut interrupted never returns; its purge of record tombstones
                    // may have committed before the cut (the zone tombstones' purge follows it).
                    log.purged += 1
                } catch {}
            }
        } else {
            sim.clock.advance(UInt64(sim.int(2000)))
            try await sim.sendHeldNews()
        }
    }

    /// The power of node `v` went off: its connections drop (bytes in flight are lost), its
    /// engine and store are released, and once their files are closed the disk is as the cut
    /// left it. False when the run cannot go on.
    private mutating func powerOff(
        _ sim: Simulation, _ v: Int, _ f: inout NodesPowerCutFindings, _ power: inout Power, step: Int
    ) async throws -> Bool {
        f.cuts += 1
        var kept: UInt64 = 0, dropped: UInt64 = 0, entries: UInt64 = 0
        shoal_powercut_last_cut(&kept, &dropped, &entries)
        f.sectorsDropped += dropped
        f.entriesUndone += entries
        note("cut kept \(kept) dropped \(dropped) undid \(entries)")
        while let i = sim.links.firstIndex(where: { $0.a == v || $0.b == v }) { await sim.reset(i) }
        sim.nodes[v].up = false
        sim.nodes[v].store = standIn
        sim.nodes[v].sync = SyncNode(store: standIn, configuration: sim.configuration, signer: sim.nodes[v].signer)
        guard await Self.filesClosed(under: sim.nodes[v].directory + "/") else {
            f.runFailures += 1
            f.failures.append(
                "seed \(seed): node \(v)'s released store kept \(shoal_powercut_open_files_under(sim.nodes[v].directory + "/")) files open"
            )
            return false
        }
        shoal_powercut_restore()
        power = .down(node: v, until: step + 1 + sim.int(25))
        return true
    }

    /// Node `v`'s power is back: it reopens on what the cut left (some seconds later, as a
    /// machine restarts), is checked, and rejoins. False when it does not open.
    private mutating func powerOn(
        _ sim: Simulation, _ v: Int, _ f: inout NodesPowerCutFindings, log: WorkloadLog,
        snapshot: [RecordZone.ID: [String: VersionVector]], undone: inout [Undone]
    ) async throws -> Bool {
        func fail(_ what: String) { f.failures.append("seed \(seed): node \(v): \(what)") }
        sim.clock.advance(UInt64(2_000 + sim.int(3_000)))
        let store: Store
        do {
            store = try await sim.reopenStore(of: v)
        } catch {
            f.unopenable += 1
            fail("the store does not open after the cut: \(error)")
            return false
        }
        sim.nodes[v].store = store
        sim.nodes[v].sync = SyncNode(store: store, configuration: sim.configuration, signer: sim.nodes[v].signer)
        if Self.tracingEngines { await sim.nodes[v].sync.setTrace { print($0) } }
        sim.nodes[v].up = true
        if let problem = PowerCut.integrityProblem(sim.nodes[v].directory + "/store.sqlite", readOnly: true) {
            f.integrityFailures += 1
            fail("integrity_check after the cut: \(problem)")
        }
        // The node's own writes that returned: there, or superseded (Spec/store.md §2.3).
        var horizons: [RecordZone.ID: VersionVector] = [:]
        for z in await store.zones() { horizons[z.id] = try await store.purgeHorizon(of: z.id) }
        let held = try await Self.vectors(sim, v, deletedToo: true)
        for s in log.saves where s.dot.node == store.nodeID {
            let horizon = horizons[s.zone] ?? VersionVector()
            // Present, superseded (a later version's vector covers it), or purged under the horizon.
            guard held[s.zone]?[s.name]?.vector.covers(s.dot) == true || horizon.covers(s.dot) else {
                f.lostAcknowledged += 1
                fail(
                    "the save of \(s.zone)/\(s.name) at \(s.dot) returned, and the reopened store holds "
                        + "\(held[s.zone]?[s.name].map { "\($0.vector)" } ?? "nothing") (zones \(held.keys.map(\.name).sorted()), horizon \(horizon))"
                )
                continue
            }
        }
        for d in log.deletes where d.dot.node == store.nodeID {
            // Live again at a version the delete had seen: the delete is gone. (Live at a version
            // with a write the delete had not seen is a concurrent save, which keeps the record.)
            if let stored = held[d.zone]?[d.name], !stored.deleted, stored.vector.isDominated(by: d.vector) {
                f.lostAcknowledged += 1
                fail(
                    "the delete of \(d.zone)/\(d.name) at \(d.vector) returned, and the reopened store holds it live at \(stored.vector)"
                )
            }
        }
        // What replication had applied and the cut undid: to be fetched again.
        var lost = 0
        for (zone, records) in snapshot.sorted(by: { $0.key.name < $1.key.name }) {
            let horizon = horizons[zone] ?? VersionVector()
            for (name, vector) in records.sorted(by: { $0.key < $1.key }) {
                if let stored = held[zone]?[name]?.vector, vector.isDominated(by: stored) { continue }
                if vector.isDominated(by: horizon) { continue }
                undone.append(Undone(node: v, zone: zone, name: name, vector: vector))
                lost += 1
            }
        }
        f.undoneVersions += lost
        note("node \(v) reopened, \(lost) versions undone")
        return true
    }

    /// After healing: every store intact; every node holds the same zones and records; every
    /// write that returned anywhere is there or superseded; every version a cut undid is back.
    private func checkAfterHealing(
        _ sim: Simulation, _ f: inout NodesPowerCutFindings, log: WorkloadLog, undone: [Undone]
    ) async throws {
        func fail(_ what: String) { f.failures.append("seed \(seed): \(what)") }
        f.saves += log.saves.count
        f.deletes += log.deletes.count
        for n in sim.nodes.indices {
            if let problem = PowerCut.integrityProblem(sim.nodes[n].directory + "/store.sqlite", readOnly: true) {
                f.integrityFailures += 1
                fail("node \(n): integrity_check: \(problem)")
            }
            f.resyncs += await sim.nodes[n].sync.statistics.resyncsCompleted
        }
        var diverged = false
        for problem in try await sim.check(log) {
            if problem.hasPrefix("acknowledged save") || problem.hasPrefix("record ") {
                f.lostAcknowledged += 1
            } else {
                diverged = true
            }
            fail(problem)
        }
        if diverged { f.diverged += 1 }
        if Self.tracing, !f.failures.isEmpty {
            do {
                for n in sim.nodes.indices {
                    for z in await sim.nodes[n].store.zones() {
                        for (name, bytes) in try await sim.state(of: z.id, on: n).sorted(by: { $0.key < $1.key }) {
                            guard let r = try? Record(decoding: bytes) else { continue }
                            print(
                                "seed \(seed): node \(n) \(z.id.name)/\(name) vv=\(r.versionVector) heads=\(r.heads) deleted=\(r.isDeleted) fields=\(r.fields.map { "\($0.name)=\(String(describing: $0.value).prefix(20))@\(String(describing: $0.stamp))" })"
                            )
                        }
                    }
                    let st = await sim.nodes[n].sync.statistics
                    print(
                        "seed \(seed): node \(n) \(sim.nodes[n].store.nodeID.short) resyncs \(st.resyncsCompleted) deletions \(st.resyncDeletions) held back \(st.knowledgeHeldBackForHorizon)"
                    )
                }
            }
        }
        var horizon = VersionVector()
        let zones = await sim.nodes[0].store.zones().map(\.id)
        // A zone missing on a node is a divergence, counted above.
        for n in sim.nodes.indices {
            for z in zones { horizon.formUnion((try? await sim.nodes[n].store.purgeHorizon(of: z)) ?? VersionVector()) }
        }
        for u in undone {
            let held = try await Self.vectors(sim, u.node, deletedToo: true)
            if let stored = held[u.zone]?[u.name]?.vector, u.vector.isDominated(by: stored) {
                f.refetchedVersions += 1
            } else if u.vector.isDominated(by: horizon) {
                f.refetchedVersions += 1
            } else if let stored = held[u.zone]?[u.name]?.vector, u.vector.isDominated(by: stored.union(horizon)) {
                // Back but for writes a purge has made superseded: a deletion concurrent with the
                // save the node holds, its tombstone purged (the record is live everywhere).
                f.refetchedVersions += 1
            } else {
                f.lostAcknowledged += 1
                fail(
                    "node \(u.node) held \(u.zone)/\(u.name) at \(u.vector) before a cut undid it, and after healing holds \(held[u.zone]?[u.name].map { "\($0.vector)" } ?? "nothing")"
                )
            }
        }
    }

    /// Every record version node `n` holds, by zone and name (tombstones as `deleted`).
    static func vectors(_ sim: Simulation, _ n: Int, deletedToo: Bool) async throws -> [RecordZone.ID: [String: (
        vector: VersionVector, deleted: Bool
    )]] {
        var out: [RecordZone.ID: [String: (vector: VersionVector, deleted: Bool)]] = [:]
        let store = sim.nodes[n].store
        for z in await store.zones() {
            var token: ChangeToken? = nil
            var records: [String: (vector: VersionVector, deleted: Bool)] = [:]
            for _ in 0..<10_000 {
                let page = try await store.changes(in: z.id, since: token, limit: 1000)
                for r in page.records where deletedToo || !r.isDeleted {
                    records[r.id.name] = (r.versionVector, r.isDeleted)
                }
                token = page.token
                if !page.moreComing { break }
            }
            out[z.id] = records
        }
        return out
    }

    /// The versions node `n` holds, tombstones included: what a cut may undo.
    static func vectors(_ sim: Simulation, _ n: Int) async throws -> [RecordZone.ID: [String: VersionVector]] {
        try await vectors(sim, n, deletedToo: true).mapValues { $0.mapValues { $0.vector } }
    }

    /// Whether every file opened through the VFS under `directory` is closed, waiting a bounded
    /// while for released stores to close their connections.
    static func filesClosed(under directory: String) async -> Bool {
        var waited = 0
        while shoal_powercut_open_files_under(directory) > 0 && waited < 2_000 {
            await Task.yield()
            waited += 1
        }
        return shoal_powercut_open_files_under(directory) == 0
    }
}
