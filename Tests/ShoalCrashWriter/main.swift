// shoal-crash-writer: saves records in a loop and prints each acknowledged save, for the
// kill -9 crash-safety test. Usage: shoal-crash-writer <store directory> <run prefix>

import ShoalStore
import ShoalWire
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a line straight to file descriptor 1 (no buffering to lose on kill).
func say(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    var off = 0
    while off < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress! + off, $0.count - off) }
        if n <= 0 { exit(3) }
        off += n
    }
}

let args = CommandLine.arguments
guard args.count == 3 else {
    say("usage: shoal-crash-writer <store directory> <run prefix>")
    exit(2)
}
let zone = RecordZone.ID(name: "crash")
do {
    // A small flush threshold, so kills land between, inside and after index flushes.
    var configuration = Store.Configuration()
    configuration.indexLogFlushRows = 7
    let store = try Store.open(directory: args[1], configuration: configuration)
    try await store.createZone(zone)
    // Declared on `i` and `v`; `iTwin` and `vTwin` hold the same values undeclared, so the test
    // can compare indexed queries with scans after every crash.
    try await store.declareIndex(zone: zone, recordType: "Item", field: "i")
    try await store.declareIndex(zone: zone, recordType: "Item", field: "v")
    var i = 0
    while true {
        if i % 4 == 3 {
            // An atomic batch of three: after a crash, all or none must be there.
            let batch = (0..<3).map { k -> Record in
                var r = Record(recordType: "Item", id: Record.ID(name: "\(args[2])-b\(i)-\(k)", zone: zone))
                r["i"] = .int64(Int64(i))
                r["iTwin"] = .int64(Int64(i))
                return r
            }
            try await store.modify(saving: batch)
            say("B \(args[2])-b\(i)")
        } else if i % 4 == 2, i > 2 {
            // Update an earlier record: the acknowledged version must survive.
            let id = Record.ID(name: "\(args[2])-\(i - 2)", zone: zone)
            var r = try await store.record(for: id)
            r["v"] = .int64(Int64(i % 5))
            r["vTwin"] = .int64(Int64(i % 5))
            r["vFull"] = .int64(Int64(i))
            let s = try await store.save(r)
            say("U \(id.name) \(i) \(s.changeTag ?? "")")
        } else {
            var r = Record(recordType: "Item", id: Record.ID(name: "\(args[2])-\(i)", zone: zone))
            r["i"] = .int64(Int64(i))
            r["iTwin"] = .int64(Int64(i))
            r["pad"] = .bytes([UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 150))
            try await store.save(r)
            say("S \(args[2])-\(i)")
        }
        i += 1
    }
} catch {
    say("E \(error)")
    exit(1)
}
