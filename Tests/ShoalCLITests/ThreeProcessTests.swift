// ThreeProcessTests: three `shoal serve` processes on 127.0.0.1, writers on all three, one SIGKILLed and restarted.

import Foundation
import Testing

@Suite(.serialized) struct ThreeProcessTests {
    @Test func convergesAfterKillNine() async throws {
        try #require(Shoal.binary != nil)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-3p-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dirs = ["a", "b", "c"].map { root + "/" + $0 }
        for d in dirs { #expect(try await Shoal.run(["init", "--data", d]).status == 0) }
        // Each trusts the other two by device ID (the daemons' --peer dials; TLS checks who answers).
        try await Shoal.pair(dirs)

        try await Shoal.withDaemons { daemons in
            // A listens; B dials A; C dials A and B. Ports are ephemeral, read from the logs.
            let a = try daemons.start(["--data", dirs[0], "--listen", "127.0.0.1:0"])
            let portA = try #require(await a.port())
            let b = try daemons.start(["--data", dirs[1], "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(portA)"])
            let portB = try #require(await b.port())
            let c = try daemons.start([
                "--data", dirs[2], "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(portA)", "--peer",
                "127.0.0.1:\(portB)"
            ])
            _ = try #require(await c.port())
            #expect(try await Shoal.run(["zone", "create", "notes", "--data", dirs[0]]).status == 0)
            for d in dirs.dropFirst() {
                #expect(
                    try await Shoal.run([
                        "zone", "share", "notes", try await Shoal.deviceID(d), "--read-write", "--data", dirs[0]
                    ]).status == 0)
            }
            #expect(
                try await Shoal.eventually {
                    try await Shoal.run(["zone", "list", "--data", dirs[2]]).output.contains("notes")
                })

            // Concurrent writers on all three nodes, shared records to conflict on.
            let acks = Acks()
            async let writers: Void = withTaskGroup(of: Void.self) { group in
                for n in 0..<3 { group.addTask { await Self.writer(n, rounds: 12, dir: dirs[n], acks: acks) } }
            }
            // Mid-sync, kill B with SIGKILL and restart it on the same directory.
            try await Task.sleep(for: .milliseconds(400))
            kill(b.process.processIdentifier, SIGKILL)
            #expect(await Shoal.waitForExit(b.process, seconds: 20), "B outlived SIGKILL")
            try await Task.sleep(for: .milliseconds(200))
            let restarted = try daemons.start([
                "--data", dirs[1], "--listen", "127.0.0.1:\(portB)", "--peer", "127.0.0.1:\(portA)"
            ])
            _ = try #require(await restarted.port(), "B did not restart: \(restarted.log)")
            await writers
            let acknowledged = acks.all
            #expect(acknowledged.count >= 30, "writers were acknowledged \(acknowledged.count) times")

            // Convergence by digest, then every acknowledged write is there (its own field, by node).
            let converged = try await Shoal.eventually {
                var d = [String]()
                for dir in dirs { d.append(try await Shoal.run(["digest", "notes", "--data", dir]).output) }
                return Set(d).count == 1 && !d[0].isEmpty
            }
            var digests = [String]()
            for dir in dirs { digests.append(try await Shoal.run(["digest", "notes", "--data", dir]).output) }
            #expect(converged, "digests differ: \(digests)")
            for ack in acknowledged where !ack.name.hasPrefix("shared") {
                let got = try await Shoal.run(["get", "notes", ack.name, "--data", dirs[(ack.node + 1) % 3]])
                #expect(
                    got.output.contains("v = \(ack.value)"),
                    "acknowledged \(ack.name)=\(ack.value) on node \(ack.node) is missing: \(got.output)\(got.error)")
            }
        }
    }

    /// Puts records through node `n`'s daemon; records each acknowledged write.
    static func writer(_ n: Int, rounds: Int, dir: String, acks: Acks) async {
        for i in 0..<rounds {
            let name = i % 3 == 0 ? "shared\(i % 6)" : "n\(n)-\(i)"
            let value = "v\(n)-\(i)"
            if let r = try? await Shoal.run([
                "put", "notes", name, "--type", "Note", "v=\(value)", "w\(n):=\(i)", "--data", dir
            ]), r.status == 0 {
                acks.add((n, name, value))
            }
        }
    }
}

/// Acknowledged writes, collected from several threads.
final class Acks: @unchecked Sendable {
    private let lock = NSLock()
    private var list = [(node: Int, name: String, value: String)]()
    func add(_ a: (node: Int, name: String, value: String)) { lock.lock(); list.append(a); lock.unlock() }
    var all: [(node: Int, name: String, value: String)] { lock.lock(); defer { lock.unlock() }; return list }
}
