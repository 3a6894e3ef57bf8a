// DemoCommand: `shoal demo` — three nodes on loopback write, split, conflict, heal and converge, narrated.

import ArgumentParser
import Foundation
import Shoal

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Three nodes on 127.0.0.1 replicate, get partitioned, edit the same records, heal and converge.")

    @Flag(name: .long, help: "Keep the three data directories and print where they are.") var keep = false

    func run() async throws {
        try await reportFailures { try await Self.demo(keep: keep) }
    }

    static let notes = RecordZone.ID(name: "notes")

    static func say(_ text: String = "") { Console.current.line(text) }

    static func demo(keep: Bool) async throws {
        let started = ContinuousClock.now
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-demo-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { if !keep { try? FileManager.default.removeItem(atPath: root) } }
        say("Shoal demo: three nodes on 127.0.0.1, each with its own replica in \(root).")
        say("Every node writes locally, online or not; peers exchange what the other lacks and merge field by field.")
        say()

        var nodes = [(String, ShoalNode, Int)]()
        for name in ["alice", "bob", "carol"] {
            let dir = root + "/" + name
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            var storeConfiguration = Store.Configuration()
            storeConfiguration.synchronous = .normal
            var syncConfiguration = SyncConfiguration()
            syncConfiguration.nodeName = name
            let node = try await ShoalNode.open(directory: dir, store: storeConfiguration, sync: syncConfiguration)
            let port = try await node.listen(host: "127.0.0.1", port: 0)
            nodes.append((name, node, port))
            say(
                "  \(name): node \(node.nodeID.short), device \(node.deviceID.short)…, listening with TLS on 127.0.0.1:\(port)"
            )
        }
        let (alice, bob, carol) = (nodes[0].1, nodes[1].1, nodes[2].1)
        // Pairing, as `shoal peer add` does on separate machines: each trusts the others' device IDs.
        for (_, node, _) in nodes {
            for (other, peer, _) in nodes where peer !== node { try await node.trustDevice(peer.deviceID, name: other) }
        }
        say(
            "  each trusts the other two by device ID (shoal peer add); a device it does not trust is refused after the TLS handshake."
        )

        say()
        say(
            "1. alice creates the zone \"notes\", shares it read-write with bob and carol (shoal zone share) and writes"
        )
        say("   three notes; bob and carol dial her and each other.")
        try await alice.createZone(notes)
        for peer in [bob, carol] { try await alice.shareZone(notes, with: peer.deviceID, role: .readWrite) }
        for (i, title) in ["Groceries", "Trip plan", "Ideas"].enumerated() {
            var r = Record(recordType: "Note", id: Record.ID(name: "note-\(i + 1)", zone: notes))
            r["title"] = .string(title)
            r["done"] = .bool(false)
            try await alice.save(r)
        }
        await bob.connect(to: "127.0.0.1", port: nodes[0].2)
        await carol.connect(to: "127.0.0.1", port: nodes[0].2)
        await carol.connect(to: "127.0.0.1", port: nodes[1].2)
        let t1 = ContinuousClock.now
        try await converge(nodes, expecting: 3)
        say(
            "   bob and carol hold all 3 notes (\(ms(ContinuousClock.now - t1)) ms): the zone, with alice's signed share, comes in her hello; each"
        )
        say("   subscribes and receives batches of the latest record versions.")

        say()
        say("2. carol goes offline. While split, the same notes are edited on both sides:")
        await carol.goOffline()
        try await edit(alice, "note-1") { $0["title"] = .string("Groceries (milk, eggs)") }
        say("   alice renames note-1 to \"Groceries (milk, eggs)\"")
        try await Task.sleep(for: .milliseconds(5))
        try await edit(carol, "note-1") {
            $0["title"] = .string("Groceries for Sunday"); $0["tags"] = .list(.string(["weekend"]))
        }
        say("   carol (offline) renames it to \"Groceries for Sunday\" and adds tags [weekend]")
        try await bob.delete(Record.ID(name: "note-2", zone: notes))
        say("   bob deletes note-2")
        try await edit(carol, "note-2") { $0["done"] = .bool(true) }
        say("   carol (offline) marks note-2 done")
        var n4 = Record(recordType: "Note", id: Record.ID(name: "note-4", zone: notes))
        n4["title"] = .string("Written offline")
        try await carol.save(n4)
        say("   carol (offline) writes note-4")
        let a = try await alice.digest(of: notes), c = try await carol.digest(of: notes)
        say("   digests differ while split: alice \(a.description.prefix(12))…, carol \(c.description.prefix(12))…")

        say()
        say("3. carol comes back online; nodes exchange what the other lacks.")
        let t2 = ContinuousClock.now
        try await carol.goOnline()
        try await converge(nodes, expecting: 4)
        let d = try await alice.digest(of: notes)
        say(
            "   converged in \(ms(ContinuousClock.now - t2)) ms: all three digests are \(d.description.prefix(16))… over \(d.recordCount) notes"
        )

        say()
        say("4. What every node now holds, computed independently, without any coordinator:")
        let n1 = try await bob.record(for: Record.ID(name: "note-1", zone: notes))
        say(
            "   note-1 title = \"\(n1["title"].map(RecordFormatting.text) ?? "")\": both sides changed it, so the later write wins"
        )
        say("          (hybrid logical clock, then node ID: every node picks the same winner)")
        say(
            "   note-1 tags = \(n1["tags"].map(RecordFormatting.text) ?? "none"): only carol changed tags, so her edit merges in"
        )
        let n2 = try await alice.record(for: Record.ID(name: "note-2", zone: notes))
        say(
            "   note-2 is \(n2.isDeleted ? "deleted" : "alive, done = \(n2["done"].map(RecordFormatting.text) ?? "")"): an edit concurrent with a delete keeps the record"
        )
        say("          (modification beats deletion, as in Syncthing)")
        let n4b = try await alice.record(for: Record.ID(name: "note-4", zone: notes))
        say(
            "   note-4 \"\(n4b["title"].map(RecordFormatting.text) ?? "")\" reached alice and bob after carol came back"
        )

        for (_, node, _) in nodes { await node.shutdown() }
        say()
        say(
            "Done in \(ms(ContinuousClock.now - started)) ms. Try it on two machines: see the README's LAN quick start."
        )
        if keep { say("Data kept in \(root) (one directory per node; open them with shoal --data DIR).") }
    }

    static func edit(_ node: ShoalNode, _ name: String, _ change: (inout Record) -> Void) async throws {
        var r = try await node.record(for: Record.ID(name: name, zone: notes))
        change(&r)
        try await node.save(r)
    }

    /// Waits until all nodes hold `expecting` live notes with equal digests (bounded: 30 s).
    static func converge(_ nodes: [(String, ShoalNode, Int)], expecting count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            var digests = Set<String>()
            var counts = Set<Int>()
            for (_, node, _) in nodes {
                if let d = try? await node.digest(of: notes) {
                    digests.insert(d.description); counts.insert(d.recordCount)
                } else {
                    digests.insert("missing")
                }
            }
            if digests.count == 1 && counts == [count] { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CommandFailure(
            .failure, "the nodes did not converge within 30 s; this is a bug — please report it with this output")
    }

    static func ms(_ d: Duration) -> Int {
        Int(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
    }
}
