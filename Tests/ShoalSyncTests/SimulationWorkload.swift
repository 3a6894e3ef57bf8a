// SimulationWorkload: the simulation's random workload (writes, deliveries, resets, crashes, purges) and
// its checks — convergence, every acknowledged save present or superseded, deletes that stay.

import Foundation
import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

/// What the workload did and was told succeeded, to check after the run.
struct WorkloadLog {
    /// Acknowledged saves: the record and the write's dot.
    var saves: [(zone: RecordZone.ID, name: String, dot: Dot)] = []
    /// Acknowledged deletes: the record, the deletion's version vector and its dot.
    var deletes: [(zone: RecordZone.ID, name: String, vector: VersionVector, dot: Dot)] = []
    var failures = 0
    /// Writes whose call threw: the record and the writing node.
    var failedWrites: [(zone: RecordZone.ID, name: String, node: NodeID)] = []
    /// Writes a power cut interrupted (the power-loss soak moves them here from `failedWrites`):
    /// in a real cut the process dies with the machine and the call never returns, so the write
    /// may have committed or not.
    var interrupted: [(zone: RecordZone.ID, name: String, node: NodeID)] = []
    /// Tombstones purged by retiring peers.
    var purged = 0
}

extension Simulation {
    static let fieldNames = ["alpha", "beta", "gamma", "delta"]
    /// Whether the workload purges tombstones (by acknowledgements and a retention), retires
    /// peers and has nodes join late, as a node does by default (SHOAL_SIM_PURGE=0 turns it off).
    static let purges = ProcessInfo.processInfo.environment["SHOAL_SIM_PURGE"] != "0"
    /// How long a deletion waits for peers that have not acknowledged it, in simulated time
    /// (SHOAL_SIM_RETENTION_MS; 0: no retention, acknowledgements only).
    static let retention: Duration? = {
        let ms = Int(ProcessInfo.processInfo.environment["SHOAL_SIM_RETENTION_MS"] ?? "") ?? 1_500
        return ms > 0 ? .milliseconds(ms) : nil
    }()
    /// Whether a third of the runs have a node join late (SHOAL_SIM_LATE=0 turns it off).
    static let lateJoiners = ProcessInfo.processInfo.environment["SHOAL_SIM_LATE"] != "0"
    /// Whether purging nodes sometimes retire a peer first (SHOAL_SIM_RETIRE=0 turns it off).
    static let retires = ProcessInfo.processInfo.environment["SHOAL_SIM_RETIRE"] != "0"

    /// One local write on node `n`: save (create or edit one or two fields) or delete — now and
    /// then of a record a bulk write made — or, rarely, a bulk write.
    func write(on n: Int, log: inout WorkloadLog) async {
        let store = nodes[n].store
        let zones = await store.zones()
        guard !zones.isEmpty else { return }
        let zone = zones[int(zones.count)].id
        if bulkWrites && chance(4) {
            await bulkWrite(on: n, zone: zone, log: &log)
            return
        }
        let name = bulkRecords > 0 && chance(25) ? "b\(int(bulkRecords))" : "r\(int(8))"
        let id = Record.ID(name: name, zone: zone)
        let existing = try? await store.record(for: id)
        do {
            if let existing, chance(15) {
                try await store.delete(id)
                var v = existing.versionVector
                v.advance(store.nodeID, to: await store.lastTimestamp)
                log.deletes.append((zone, id.name, v, Dot(node: store.nodeID, hlc: v[store.nodeID])))
            } else {
                var r = existing ?? Record(recordType: "Note", id: id)
                if chance(40) {
                    // A long text, then small edits of it: what travels as delta slots.
                    if case .string(let body)? = r["body"], body.utf8.count >= 200 {
                        var u = Array(body.utf8)
                        let at = int(u.count), end = min(u.count, at + int(4))
                        u.replaceSubrange(at..<end, with: Array("e\(int(100))".utf8))
                        r["body"] = .string(String(decoding: u, as: UTF8.self))
                    } else {
                        r["body"] = .string(String(repeating: "long text \(int(1000)) ", count: 20 + int(100)))
                    }
                }
                for _ in 0...int(2) {
                    let f = Self.fieldNames[int(Self.fieldNames.count)]
                    switch int(4) {
                    case 0: r[f] = nil
                    case 1: r[f] = .string("v\(int(1000))")
                    default: r[f] = .int64(Int64(int(1000)))
                    }
                }
                let saved = try await store.save(r, policy: existing == nil ? .allKeys : .ifServerRecordUnchanged)
                log.saves.append((zone, id.name, Dot(node: store.nodeID, hlc: saved.versionVector[store.nodeID])))
            }
        } catch {
            log.failures += 1
            log.failedWrites.append((zone, id.name, store.nodeID))
        }
        clock.advance(UInt64(int(5)))
        try? await notifyChanges(node: n)
    }

    /// Node `n` saves 64 to 100 new records in one transaction: a batch of versions each of
    /// which its write made, which a peer takes on the connection's word and keeps implied
    /// (Spec/authenticated-writes.md §5.1) when it arrives in one batch.
    func bulkWrite(on n: Int, zone: RecordZone.ID, log: inout WorkloadLog) async {
        let store = nodes[n].store
        let count = 64 + int(37)
        let records = (bulkRecords..<(bulkRecords + count)).map { k in
            var r = Record(recordType: "Note", id: Record.ID(name: "b\(k)", zone: zone))
            r["alpha"] = .string("bulk \(k) \(int(1000))")
            r["beta"] = .int64(Int64(k))
            return r
        }
        bulkRecords += count
        do {
            let saved = try await store.modify(saving: records, policy: .allKeys).savedRecords
            for r in saved {
                log.saves.append((zone, r.id.name, Dot(node: store.nodeID, hlc: r.versionVector[store.nodeID])))
            }
        } catch {
            log.failures += 1
            for r in records { log.failedWrites.append((zone, r.id.name, store.nodeID)) }
        }
        clock.advance(UInt64(int(5)))
        try? await notifyChanges(node: n)
    }

    /// Runs a random workload of `steps` steps, then heals everything and lets it settle.
    func run(steps: Int) async throws -> WorkloadLog {
        var log = WorkloadLog()
        if nodes[0].signer != nil {
            // With identities: each zone owned by one node and shared read-write with the others.
            try await createSharedZone(RecordZone.ID(name: "notes"), on: 0)
            try await createSharedZone(RecordZone.ID(name: "lab"), on: 1 % nodes.count)
        } else {
            // Open zones: one created on node 0, one created independently on two nodes.
            _ = try await nodes[0].store.createZone(RecordZone.ID(name: "notes"))
            _ = try await nodes[1 % nodes.count].store.createZone(RecordZone.ID(name: "lab"))
            _ = try await nodes[nodes.count - 1].store.createZone(RecordZone.ID(name: "lab"))
        }
        // In a third of the runs the last node joins late: it writes alone for the first half,
        // and meets the others after they may have purged deletions (a device that was never a
        // member of what they purged).
        let late = purging && Self.lateJoiners && int(3) == 0 ? nodes.count - 1 : nil
        if let late { for other in nodes.indices where other != late { partitions.insert(pairKey(late, other)) } }
        for a in nodes.indices { for b in nodes.indices where a < b { try await connect(a, b) } }
        for step in 0..<steps {
            if let late, step == steps / 2 {
                for other in nodes.indices where other != late { partitions.remove(pairKey(late, other)) }
            }
            let r = int(100)
            if r < 30 {
                let n = int(nodes.count)
                if nodes[n].up { await write(on: n, log: &log) }
            } else if r < 75 {
                let p = pending
                if !p.isEmpty {
                    let (i, toB) = p[int(p.count)]
                    try await deliver(link: i, toB: toB)
                }
            } else if r < 82 {
                try await connect(int(nodes.count), int(nodes.count))
            } else if r < 86, !links.isEmpty {
                await reset(int(links.count))
            } else if r < 88 {
                try await crash(int(nodes.count))
            } else if r < 91 {
                let a = int(nodes.count), b = int(nodes.count)
                if a != b {
                    partitions.insert(pairKey(a, b))
                    if let i = links.firstIndex(where: { pairKey($0.a, $0.b) == pairKey(a, b) }) { await reset(i) }
                }
            } else if r < 94, let p = partitions.sorted(by: { $0.lexicographicallyPrecedes($1) }).first {
                partitions.remove(p)
            } else if chance(40) {
                // Tombstone purges, on by default (Spec/replication.md §3.5.3): a node purges what
                // every known peer acknowledged or what is older than the retention. Now and then
                // it first retires a peer (a member that leaves), which may come back and write
                // again: it resyncs, and its versions are taken only once it has.
                let n = int(nodes.count)
                if nodes[n].up, purging {
                    let other = int(nodes.count)
                    if other != n, chance(30), Self.retires {
                        for z in await nodes[n].store.zones() {
                            try? await nodes[n].store.removePeer(nodes[other].store.nodeID, from: z.id)
                        }
                    }
                    log.purged += (try? await nodes[n].sync.purgeTombstones(retention: Self.retention)) ?? 0
                }
            } else {
                clock.advance(UInt64(int(2000)))
                try await sendHeldNews()
                await writeHeldAcknowledgements()
            }
        }
        // Heal: every node up, no partitions, every pair connected, until the network is quiet.
        partitions.removeAll()
        for a in nodes.indices { for b in nodes.indices where a < b { try await connect(a, b) } }
        let quiet = try await runUntilQuiet()
        if !quiet { Issue.record("the network did not go quiet") }
        return log
    }

    /// Checks convergence and the workload's invariants; returns problems found.
    func check(_ log: WorkloadLog) async throws -> [String] {
        var problems = [String]()
        let zones0 = await nodes[0].store.zones().map(\.id)
        var states = [RecordZone.ID: [String: [UInt8]]]()
        // Purges drop tombstones on each node at its own time: compare live records then (the
        // digests also leave tombstones out), and count a write as superseded once a purge
        // horizon covers it.
        func comparable(_ s: [String: [UInt8]]) -> [String: [UInt8]] {
            log.purged == 0 ? s : s.filter { (try? Record(decoding: $0.value))?.isDeleted == false }
        }
        var horizon = VersionVector()
        for n in nodes.indices {
            for z in zones0 { horizon.formUnion((try? await nodes[n].store.purgeHorizon(of: z)) ?? VersionVector()) }
        }
        var raw = [RecordZone.ID: [String: [UInt8]]]()
        for z in zones0 {
            raw[z] = try await state(of: z, on: 0)
            states[z] = comparable(raw[z] ?? [:])
        }
        for n in nodes.indices.dropFirst() {
            let zs = await nodes[n].store.zones().map(\.id)
            if zs != zones0 { problems.append("node \(n) holds zones \(zs), node 0 holds \(zones0)"); continue }
            for z in zs {
                let s = comparable(try await state(of: z, on: n))
                if s != states[z] {
                    let differing = Set(s.keys).union(states[z]?.keys ?? [:].keys).filter { s[$0] != states[z]?[$0] }
                        .sorted()
                    problems.append("zone \(z) differs between node 0 and node \(n) in records \(differing)")
                }
                let d0 = try await nodes[0].store.digest(of: z), dn = try await nodes[n].store.digest(of: z)
                if d0 != dn { problems.append("digest of \(z) differs between node 0 and node \(n)") }
            }
        }
        // Every acknowledged save is present or causally superseded.
        for s in log.saves where !horizon.covers(s.dot) {
            guard let bytes = raw[s.zone]?[s.name], let r = try? Record(decoding: bytes) else {
                problems.append("acknowledged save of \(s.zone)/\(s.name) at \(s.dot) is missing")
                continue
            }
            if !r.versionVector.covers(s.dot) {
                problems.append("acknowledged save \(s.dot) of \(s.name) is not covered by \(r.versionVector)")
            }
        }
        // A delete stays unless a save not causally before it exists.
        for d in log.deletes {
            let resurrecting = log.saves.contains { $0.zone == d.zone && $0.name == d.name && !d.vector.covers($0.dot) }
            guard !resurrecting else { continue }
            if let bytes = raw[d.zone]?[d.name], let r = try? Record(decoding: bytes), !r.isDeleted {
                // A write a cut interrupted may have committed: its node's entry past the delete's.
                let interrupted = log.interrupted.contains {
                    $0.zone == d.zone && $0.name == d.name && r.versionVector[$0.node] > d.vector[$0.node]
                }
                if interrupted { continue }
                problems.append("record \(d.name) deleted at \(d.vector) came back with no later or concurrent save")
            }
        }
        problems += try await checkWriterLogs(in: zones0)
        return problems
    }

    /// Every writer's log held on every node, entries kept implied included (read back, they
    /// are proven here), is a prefix of the log the writer keeps itself
    /// (Spec/authenticated-writes.md §5.1): taking a peer's writes on its word never loses,
    /// reorders or alters an entry, and no checkpoint between honest nodes is dropped.
    func checkWriterLogs(in zones: [RecordZone.ID]) async throws -> [String] {
        var problems = [String]()
        for z in zones {
            var own = [NodeID: [WriteEntry]]()
            for w in nodes {
                own[w.store.nodeID] = try await w.store.entries(of: w.store.nodeID, in: z, after: 0, limit: .max)
            }
            for (n, node) in nodes.enumerated() {
                for w in nodes where w.store.nodeID != node.store.nodeID {
                    let writer = w.store.nodeID
                    let held: [WriteEntry]
                    do {
                        held = try await node.store.entries(of: writer, in: z, after: 0, limit: .max)
                    } catch {
                        problems.append("node \(n) cannot read \(writer.short)'s log for \(z): \(error)")
                        continue
                    }
                    let theirs = own[writer] ?? []
                    // A node may hold entries of a log whose writer lost them since (a zone
                    // deleted and created again there): compare what both hold.
                    let common = min(held.count, theirs.count)
                    if held.prefix(common) != theirs.prefix(common) {
                        problems.append("node \(n) holds \(writer.short)'s log for \(z) otherwise than its writer")
                    }
                }
            }
        }
        for (n, node) in nodes.enumerated() where await node.store.impliedCheckpointsDropped > 0 {
            problems.append("node \(n) dropped a checkpoint of an honest writer's implied entries")
        }
        return problems
    }
}
