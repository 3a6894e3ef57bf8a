// TestSupport: temporary store directories and small record builders shared by the store tests.

import ShoalStore
import ShoalWire
import ShoalSamples
import Synchronization
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A fresh directory under the system temporary directory, removed by `cleanup()`.
final class TempDirectory {
    let path: String
    init(_ name: String = "shoal-store") {
        path = FileManager.default.temporaryDirectory.path + "/\(name)-\(UInt64.random(in: 0...UInt64.max))"
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A deterministic wall clock for simulations: starts at `start` and advances 1 ms per read.
final class FakeClock: Sendable {
    private let now: Mutex<UInt64>
    init(start: UInt64 = 1_795_000_000_000) { now = Mutex(start) }
    func read() -> UInt64 {
        now.withLock {
            $0 += 1; return $0
        }
    }
}

/// A wall clock a test moves by hand.
final class HandClock: Sendable {
    private let now = Mutex<UInt64>(1_795_000_000_000)
    func read() -> UInt64 { now.withLock { $0 } }
    func advance(seconds: UInt64) { now.withLock { $0 += seconds * 1000 } }
}

extension Store {
    static func temporary(_ dir: TempDirectory, _ configure: (inout Configuration) -> Void = { _ in }) async throws
        -> Store
    {
        var c = Configuration()
        c.synchronous = .normal
        configure(&c)
        return try Store.open(directory: dir.path, configuration: c)
    }
}

let notes = RecordZone.ID(name: "notes")

func note(_ name: String, _ title: String, zone: RecordZone.ID = notes) -> Record {
    var r = Record(recordType: "Note", id: Record.ID(name: name, zone: zone))
    r["title"] = .string(title)
    return r
}

@discardableResult
func expectCode(_ code: ShoalError.Code, _ body: () async throws -> Void) async -> ShoalError? {
    do {
        try await body()
    } catch let e as ShoalError {
        if e.code != code { Issue.record("expected \(code), got \(e)") }
        return e
    } catch {
        Issue.record("expected ShoalError \(code), got \(error)")
        return nil
    }
    Issue.record("expected \(code), but nothing was thrown")
    return nil
}

import Testing

/// Three stores editing, deleting and syncing one zone at random (for convergence properties).
struct RandomHistory {
    var rng: SplitMix64
    let clock = FakeClock()
    let dirs = [TempDirectory(), TempDirectory(), TempDirectory()]
    var nodes = [Store]()
    let incarnation: NodeID
    /// Every version saved, plus (when asked) every batch applied by a sync step.
    var versions = [Record]()

    /// Runs `steps` random steps over records `r0`…`r<names-1>`; `keepSynced` also collects
    /// the versions sync steps carry.
    init(seed: UInt64, steps: Int, names: UInt64, keepSynced: Bool) async throws {
        rng = SplitMix64(seed: seed)
        for d in dirs { nodes.append(try await Store.temporary(d) { [clock] in $0.wallClock = clock.read }) }
        incarnation = NodeID.random(using: &rng)
        for n in nodes { try await n.createZone(notes, incarnation: incarnation) }
        var tokens = [[ChangeToken?]](repeating: [nil, nil, nil], count: 3)
        for _ in 0..<steps {
            let i = Int(rng.next() % 3)
            let n = nodes[i]
            let id = Record.ID(name: "r\(rng.next() % names)", zone: notes)
            switch rng.next() % 6 {
            case 0, 1, 2:
                var r = (try? await n.record(for: id)) ?? Record(recordType: "Note", id: id)
                r["f\(rng.next() % 4)"] = rng.next() % 5 == 0 ? nil : .int64(Int64(rng.next() % 100))
                if let s = try? await n.save(r, policy: .changedKeys) { versions.append(s) }
            case 3:
                try? await n.delete(id)
            default:
                // Sync from another node j to i through the change feed.
                let j = (i + 1 + Int(rng.next() % 2)) % 3
                let page = try await nodes[j].changes(in: notes, since: tokens[i][j], limit: 5)
                try await n.apply(remoteChanges: page.records)
                if keepSynced { versions += page.records }
                tokens[i][j] = page.token
            }
        }
    }
}
