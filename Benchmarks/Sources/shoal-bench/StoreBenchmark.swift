// StoreBenchmark: the local replica — bulk saves next to raw SQLite inserts, the change feed, queries.

import CSQLiteBench
import Dispatch
import Foundation
import Shoal
import ShoalSamples

/// `shoal-bench store`: `SHOAL_BENCH_RECORDS` records (default 200,000; the targets are for 1,000,000)
/// of about 200 bytes. Lines: `store case=<name> records_per_s=<x> …`; queries report `ms_per_query`.
/// `cpu_records_per_s` divides by the process's CPU time instead of wall time (steadier on a
/// loaded machine); the change feed reports `cpu_s`, as it decodes on every core.
enum StoreBenchmark: BenchmarkSuite {
    static let name = "store"
    static let summary =
        "ShoalStore: bulk-save vs raw-sqlite-insert, changes-stream, indexed-query vs scan-query, churn"

    static var recordCount: Int { Int(ProcessInfo.processInfo.environment["SHOAL_BENCH_RECORDS"] ?? "") ?? 200_000 }
    static let zone = RecordZone.ID(name: "bench")

    static func run() throws { try runBlocking { try await runAsync() } }

    static func runAsync() async throws {
        let n = recordCount
        var rng = SplitMix64(seed: 11)
        let records: [Record] = (0..<n).map { i in
            var r = Record(recordType: "Item", id: Record.ID(name: "item-\(i)", zone: zone))
            r["text"] = .string(NotesCorpus.sentence(words: 6, using: &rng))
            r["category"] = .int64(Int64(i % 1000))
            r["bucket"] = .int64(Int64(i % 1000))
            r["title"] = .string("Item number \(i)")
            r["score"] = .double(Double(i % 1000) / 10)
            r["done"] = .bool(i % 3 == 0)
            return r
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-bench-store-\(UInt32.random(in: 0 ... .max))"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }

        // bulk-save: batches of 2,000 through modify (CloudKit semantics, stamping, change log, indexes).
        let store = try await Store.open(directory: dir)
        try await store.createZone(zone)
        try await store.declareIndex(zone: zone, recordType: "Item", field: "category")
        let t0 = ContinuousClock.now, c0 = cpuSeconds()
        var sample = [Record]()
        for start in stride(from: 0, to: n, by: 2000) {
            let saved = try await store.modify(saving: Array(records[start..<min(n, start + 2000)]), policy: .allKeys)
                .savedRecords
            if sample.isEmpty { sample = saved }
        }
        let saveRate = Double(n) / Harness.seconds(ContinuousClock.now - t0)
        let saveCPURate = Double(n) / (cpuSeconds() - c0)
        // The saved size, from the first batch (encoding every record here would time the benchmark's work).
        let average = sample.reduce(0) { $0 + $1.encoded().count } / max(sample.count, 1)

        // raw-sqlite-insert: the same number of rows of the same size, one prepared statement,
        // transactions of 2,000, WAL and synchronous=FULL like the store.
        let c1 = cpuSeconds()
        let rawRate = try rawInsert(count: n, bytes: average, path: dir + "/raw.sqlite")
        let rawCPURate = Double(n) / (cpuSeconds() - c1)
        print(
            "store case=bulk-save records=\(n) record_bytes=\(average) records_per_s=\(Int(saveRate)) cpu_records_per_s=\(Int(saveCPURate))"
        )
        print(
            "store case=raw-sqlite-insert records=\(n) record_bytes=\(average) records_per_s=\(Int(rawRate)) store_vs_raw=\(fixed(rawRate / saveRate, 2)) cpu_records_per_s=\(Int(rawCPURate)) cpu_store_vs_raw=\(fixed(rawCPURate / saveCPURate, 2))"
        )

        // changes-stream: the whole zone from a nil token.
        let t1 = ContinuousClock.now, c2 = cpuSeconds()
        var token: ChangeToken? = nil
        var streamed = 0
        while true {
            let page = try await store.changes(in: zone, since: token, limit: 10_000)
            streamed += page.records.count
            token = page.token
            if !page.moreComing { break }
        }
        let streamRate = Double(streamed) / Harness.seconds(ContinuousClock.now - t1)
        let streamCPU = cpuSeconds() - c2
        print(
            "store case=changes-stream records=\(streamed) records_per_s=\(Int(streamRate)) cpu_s=\(fixed(streamCPU, 3))"
        )

        // indexed-query vs scan-query: equality on a declared index vs on an undeclared field of the same values.
        func timeQueries(_ field: String, _ repeats: Int) async throws -> (Double, Int) {
            let t = ContinuousClock.now
            var found = 0
            for q in 0..<repeats {
                let query = Query(recordType: "Item", predicate: .compare(field, .equal, .int64(Int64(q * 37 % 1000))))
                found += try await store.records(matching: query, in: zone, resultsLimit: 1000).records.count
            }
            return (Harness.seconds(ContinuousClock.now - t) * 1000 / Double(repeats), found)
        }
        let (indexed, foundIndexed) = try await timeQueries("category", 50)
        let (scan, foundScan) = try await timeQueries("bucket", 3)
        print("store case=indexed-query records=\(n) ms_per_query=\(fixed(indexed, 3)) matches=\(foundIndexed / 50)")
        print(
            "store case=scan-query records=\(n) ms_per_query=\(fixed(scan, 3)) matches=\(foundScan / 3) indexed_speedup=\(fixed(scan / indexed, 1))"
        )

        try await StoreChurnBenchmark.run()
    }

    /// CPU seconds this process has used, all threads: on a machine shared with other work,
    /// records per CPU second is steadier than wall-clock rates (the `cpu_*` fields).
    static func cpuSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Inserts `count` rows of `bytes` random-ish bytes with the SQLite C API; records per second.
    static func rawInsert(count: Int, bytes: Int, path: String) throws -> Double {
        var db: OpaquePointer? = nil
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(
            db,
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t(zone INTEGER, name TEXT, seq INTEGER, bytes BLOB, PRIMARY KEY(zone, name)) WITHOUT ROWID;",
            nil, nil, nil)
        var stmt: OpaquePointer? = nil
        sqlite3_prepare_v2(db, "INSERT INTO t(zone, name, seq, bytes) VALUES(1, ?, ?, ?)", -1, &stmt, nil)
        defer { sqlite3_finalize(stmt) }
        var payload = [UInt8](repeating: 0, count: bytes)
        for i in payload.indices { payload[i] = UInt8(truncatingIfNeeded: i &* 31) }
        let t = ContinuousClock.now
        for start in stride(from: 0, to: count, by: 2000) {
            sqlite3_exec(db, "BEGIN", nil, nil, nil)
            for i in start..<min(count, start + 2000) {
                let name = "item-\(i)"
                sqlite3_reset(stmt)
                sqlite3_bind_text(stmt, 1, name, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
                sqlite3_bind_int64(stmt, 2, Int64(i))
                payload[0] = UInt8(truncatingIfNeeded: i)
                _ = payload.withUnsafeBytes {
                    sqlite3_bind_blob(
                        stmt, 3, $0.baseAddress, Int32($0.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
                }
                sqlite3_step(stmt)
            }
            sqlite3_exec(db, "COMMIT", nil, nil, nil)
        }
        return Double(count) / Harness.seconds(ContinuousClock.now - t)
    }
}
