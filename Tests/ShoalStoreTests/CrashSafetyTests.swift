// CrashSafetyTests: kill -9 a writer at random points, many times; every acknowledged save must
// survive, atomic batches must be whole, the change log and vectors must stay consistent, and
// declared indexes must answer as scans do.

import Testing
import ShoalStore
import ShoalWire
import ShoalSamples
import Foundation
import ShoalTestSupport
#if canImport(Glibc)
    import Glibc
#endif

@Suite struct CrashSafetyTests {
    /// The writer executable, built next to the test bundle.
    static func writerPath() -> String? {
        var candidates = [String]()
        if let env = ProcessInfo.processInfo.environment["SHOAL_CRASH_WRITER"] { candidates.append(env) }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        candidates.append(exe.deletingLastPathComponent().appendingPathComponent("shoal-crash-writer").path)
        candidates.append(
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
                "shoal-crash-writer"
            ).path)
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test func acknowledgedSavesSurviveKillMinus9() async throws {
        let writer = try #require(Self.writerPath(), "build shoal-crash-writer (swift build) or set SHOAL_CRASH_WRITER")
        let dir = TempDirectory("shoal-crash")
        let seed: UInt64 = 0xC0FFEE
        var rng = SplitMix64(seed: seed)
        var singles = Set<String>(), batches = Set<String>(), updates = [String: Int64]()
        let start = ContinuousClock.now
        for run in 0..<20 {
            let p = ChildProcess()
            p.executableURL = URL(fileURLWithPath: writer)
            p.arguments = [dir.path, "r\(run)"]
            let out = Pipe()
            // Close-on-exec, so that a process another test starts meanwhile (the CLI tests'
            // daemons) cannot hold this pipe open and keep the read below from ever ending; the
            // writer still gets it, duplicated onto its standard output.
            for h in [out.fileHandleForReading, out.fileHandleForWriting] {
                _ = fcntl(h.fileDescriptor, F_SETFD, FD_CLOEXEC)
            }
            p.standardOutput = out
            try p.run()
            let delay = 40 + Int(rng.next() % 260)
            try await Task.sleep(for: .milliseconds(delay))
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            let text = String(decoding: data, as: UTF8.self)
            // Only complete lines were acknowledged before the kill.
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            if !text.hasSuffix("\n") { lines.removeLast() }
            for line in lines where !line.isEmpty {
                let parts = line.split(separator: " ")
                switch parts.first {
                case "S": singles.insert(String(parts[1]))
                case "B": batches.insert(String(parts[1]))
                case "U": updates[String(parts[1])] = Int64(parts[2])
                default: Issue.record("seed \(seed) run \(run): writer said \(line)")
                }
            }
        }
        // Bounded by the number of kills, not by a clock: no wall-clock threshold in tests.
        _ = start
        #expect(singles.count > 20, "seed \(seed): the writer acknowledged too little to test anything")

        let store = try Store.open(directory: dir.path)
        let zone = RecordZone.ID(name: "crash")
        let live = Set(try await store.allRecordIDs(in: zone).map(\.name))
        for s in singles { #expect(live.contains(s), "seed \(seed): acknowledged save \(s) lost") }
        for (name, v) in updates {
            let r = try await store.record(for: Record.ID(name: name, zone: zone))
            #expect(
                (r["vFull"].flatMap { if case .int64(let x) = $0 { x } else { nil } } ?? -1) >= v,
                "seed \(seed): update of \(name) lost")
        }
        // Atomic batches are whole or absent.
        var prefixes = [String: Int]()
        for name in live where name.contains("-b") {
            prefixes[String(name[..<name.lastIndex(of: "-")!]), default: 0] += 1
        }
        for (b, n) in prefixes { #expect(n == 3, "seed \(seed): batch \(b) half-applied (\(n) of 3)") }
        for b in batches { #expect(prefixes[b] == 3, "seed \(seed): acknowledged batch \(b) lost") }
        // Change log and vectors agree with the records.
        let (all, token) = try await ChangesTests.drain(store, zone, from: nil, limit: 1000)
        #expect(Set(all.map(\.id.name)) == live)
        var union = VersionVector()
        for r in all { union.formUnion(r.versionVector) }
        #expect(try await store.zone(zone).versionVector == union)
        #expect(try token.contents().vector == union)
        #expect(await store.lastTimestamp >= union.latest?.hlc ?? .zero)
        // The declared indexes answer as scans do: additions lost in memory by a kill are derived
        // again from the records, removals were logged with them.
        for (indexed, scanned) in [("i", "iTwin"), ("v", "vTwin")] {
            for k in [0, 1, 2, 3, 4, 5, 7] {  // i == 6 is an update, not a new record
                func names(_ field: String) async throws -> [String] {
                    let q = Query(recordType: "Item", predicate: .compare(field, .equal, .int64(Int64(k))))
                    return try await store.records(matching: q, in: zone, resultsLimit: 400).records.map(\.id.name)
                        .sorted()
                }
                let a = try await names(indexed), b = try await names(scanned)
                #expect(
                    a == b,
                    "seed \(seed): \(indexed) == \(k) misses \(Set(b).subtracting(a).sorted()), adds \(Set(a).subtracting(b).sorted())"
                )
                #expect(!b.isEmpty || indexed == "v", "seed \(seed): nothing has \(scanned) == \(k)")
            }
        }
    }
}
