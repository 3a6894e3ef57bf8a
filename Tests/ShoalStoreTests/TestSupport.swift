// TestSupport: temporary store directories and small record builders shared by the store tests.

import ShoalStore
import ShoalWire
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
    func read() -> UInt64 { now.withLock { $0 += 1; return $0 } }
}

extension Store {
    static func temporary(_ dir: TempDirectory, _ configure: (inout Configuration) -> Void = { _ in }) async throws -> Store {
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
