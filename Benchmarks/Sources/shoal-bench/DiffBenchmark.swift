// DiffBenchmark: the `diff` suite — ShoalDiff's diff, apply and merges against the naive encode-and-compare.

import Foundation
import ShoalDiff
import ShoalSamples
import ShoalWire

/// Diffs, applies and merges versions of one 32-field record of mixed types, in one run.
///
/// The record (``base``) is a note with 32 fields — strings short and long, integers, doubles,
/// bools, dates, small bytes, a reference, an asset, a location and three lists — saved once by
/// one node, as the notes corpus is. Its edited versions are built from it the way an app edits
/// a record (`record["title"] = …`), so unchanged slots share their storage with the base.
///
/// One iteration runs ``opsPerIteration`` operations, each through a non-inlined function so
/// the optimiser cannot hoist work out of the loop; `ns_per_op` is the best run's time per
/// operation. `allocs_per_op` counts allocation calls in a separate, untimed pass.
/// `delta_bytes` is the encoded size of the delta the case computes or applies (0 for merges,
/// which produce a record; for the `field-delta-…-1mib` cases, ``FieldDeltaInputs``, what the
/// sparse record with its delta slot adds to a batch).
enum DiffBenchmark: BenchmarkSuite {
    static let name = "diff"
    static let summary = "record diff/apply/merge (32 fields) vs naive encode-decode-compare"

    static let opsPerIteration = 1_000
    static let zone = NotesCorpus.zone
    static let writer = NotesCorpus.nodes[0]
    static let editor = NotesCorpus.nodes[1]
    static let otherEditor = NotesCorpus.nodes[2]
    static let savedAt = HLC(milliseconds: 1_795_000_000_000, logical: 0)

    /// The 32-field note, unsaved.
    static func note() -> Record {
        var rng = SplitMix64(seed: 0xD1FF)
        var r = Record(recordType: "Note", id: Record.ID(name: "note-1", zone: zone))
        r["title"] = .string("Plan the kitchen garden")
        r["text"] = .string(NotesCorpus.sentence(words: 40, using: &rng))
        r["summary"] = .string(NotesCorpus.sentence(words: 8, using: &rng))
        r["author"] = .string("alice")
        r["category"] = .string("home")
        r["status"] = .string("draft")
        r["language"] = .string("en")
        r["url"] = .string("https://example.org/notes/kitchen-garden")
        r["version"] = .int64(12)
        r["views"] = .int64(4_711)
        r["wordCount"] = .int64(40)
        r["priority"] = .int64(2)
        r["revision"] = .int64(1_234_567)
        r["score"] = .double(87.25)
        r["progress"] = .double(0.4)
        r["rating"] = .double(4.5)
        r["done"] = .bool(false)
        r["pinned"] = .bool(true)
        r["archived"] = .bool(false)
        r["shared"] = .bool(true)
        r["created"] = .date(Timestamp(millisecondsSince1970: 1_794_000_000_000))
        r["modified"] = .date(Timestamp(millisecondsSince1970: 1_795_000_000_000))
        r["due"] = .date(Timestamp(millisecondsSince1970: 1_796_000_000_000))
        r["reminder"] = .date(Timestamp(millisecondsSince1970: 1_795_900_000_000))
        r["color"] = .bytes([0x2E, 0x8B, 0x57, 0xFF])
        r["checksum"] = .bytes((0..<16).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        r["folder"] = .reference(Reference(recordID: Record.ID(name: "folder-garden", zone: zone)))
        if let hash = ContentHash(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) }) {
            r["attachment"] = .asset(Asset(hash: hash, size: 1_482_113))
        }
        r["place"] = .location(
            Location(
                latitude: 47.3769, longitude: 8.5417, horizontalAccuracy: 5,
                timestamp: Timestamp(millisecondsSince1970: 1_795_000_000_000)))
        r["tags"] = .list(.string(["home", "garden", "spring"]))
        r["collaborators"] = .list(.string(["alice", "bob"]))
        r["sizes"] = .list(.int64([120, 80, 45, 300]))
        return r
    }

    /// The field the one-field cases change, and its two new values.
    static let changedField = "title"
    static let newTitle = FieldValue.string("Plan the herb garden")
    static let otherTitle = FieldValue.string("Plant the herb garden")

    static func run() throws {
        let unsaved = note()
        guard unsaved.fields.count == 32 else {
            throw BenchmarkError("the note has \(unsaved.fields.count) fields, not 32")
        }
        let base = Stamping.saved(unsaved, by: writer, at: savedAt)
        // A copy of the base (same storage), as a caller holding two references to one version has.
        let baseCopy = base

        // One field changed by a local, not yet saved edit (stamp nil; system fields unchanged).
        // (`let`s, so the timed closures capture the records themselves, not boxes they copy from.)
        let edited = edit(base, changedField, newTitle)
        let edited2 = edit(base, changedField, otherTitle)
        // The same edit saved by another node: stamped, the vector advanced, a new head.
        let saved = savedEdit(
            base, changedField, newTitle, by: editor, at: HLC(milliseconds: 1_795_000_100_000, logical: 0))
        let saved2 = savedEdit(
            base, changedField, otherTitle, by: editor, at: HLC(milliseconds: 1_795_000_200_000, logical: 0))
        // Equal to the base, but decoded separately: equal values in different storage.
        let decodedBase = try Record(decoding: base.encoded())
        // Concurrent saves by two nodes, on different fields and on the same field.
        let left = savedEdit(
            base, "status", .string("review"), by: editor, at: HLC(milliseconds: 1_795_000_100_000, logical: 0))
        let right = savedEdit(
            base, "priority", .int64(1), by: otherEditor, at: HLC(milliseconds: 1_795_000_100_001, logical: 0))
        let conflicting = savedEdit(
            base, "status", .string("done"), by: otherEditor, at: HLC(milliseconds: 1_795_000_100_001, logical: 0))

        // Check every case's result before timing it.
        let oneField = diff(base, edited), savedDelta = diff(base, saved)
        try check(apply(oneField, to: base) == edited, "apply(diff(base, edited)) != edited")
        try check(apply(savedDelta, to: base) == saved, "apply(diff(base, saved)) != saved")
        try check(oneField.operations.count == 1 && oneField.system == nil, "the one-field delta is \(oneField)")
        try check(
            diff(base, base).isEmpty && diff(base, decodedBase).isEmpty, "identical records gave a non-empty delta")
        let naive = try naiveDiff(base, edited)
        try check(naive == oneField, "the naive diff differs: \(naive) vs \(oneField)")
        let forward = diff(edited, edited2), backward = diff(edited2, edited)
        let savedForward = diff(saved, saved2), savedBackward = diff(saved2, saved)
        try check(
            apply(forward, to: edited) == edited2 && apply(backward, to: edited2) == edited, "flip deltas do not flip")
        try check(
            apply(savedForward, to: saved) == saved2 && apply(savedBackward, to: saved2) == saved,
            "saved flip deltas do not flip")
        let disjoint = try merge(left, right)
        try check(
            disjoint["status"] == .string("review") && disjoint["priority"] == .int64(1), "disjoint merge lost an edit")
        let conflict = try merge(left, conflicting)
        try check(conflict["status"] == .string("done"), "conflict merge did not keep the later write")
        try check(try merge(ancestor: base, local: left, remote: right) == disjoint, "three-way disjoint merge differs")

        let changedValueBytes = valueSize(newTitle)
        printNote(
            "32-field note, \(base.encoded().count) bytes encoded, vector of \(base.versionVector.count); changed field '\(changedField)', new value \(changedValueBytes) bytes (tag + payload); \(opsPerIteration) ops per iteration, best of \(Harness.runs) runs of at least \(Harness.minimumSeconds) s"
        )

        var inPlace = edited, savedInPlace = saved
        let large = try FieldDeltaInputs()
        let allCases: [(name: String, bytes: Int, op: () throws -> Int)] = [
            ("one-field-diff", size(oneField), { diffOp(base, edited) }),
            (
                "one-field-apply", size(forward),
                {
                    try applyOp(&inPlace, forward) &+ applyOp(&inPlace, backward)
                }
            ),
            ("one-field-apply-copy", size(oneField), { try applyCopyOp(oneField, base) }),
            ("identical-diff", size(diff(base, base)), { diffOp(base, baseCopy) }),
            ("identical-decoded-diff", size(diff(base, decodedBase)), { diffOp(base, decodedBase) }),
            ("naive-one-field-diff", size(naive), { try naiveOp(base, edited) }),
            ("saved-one-field-diff", size(savedDelta), { diffOp(base, saved) }),
            (
                "saved-one-field-apply", size(savedForward),
                {
                    try applyOp(&savedInPlace, savedForward) &+ applyOp(&savedInPlace, savedBackward)
                }
            ),
            ("merge-disjoint", 0, { try mergeOp(left, right) }),
            ("merge-conflict", 0, { try mergeOp(left, conflicting) }),
            ("merge3-disjoint", 0, { try merge3Op(base, left, right) }),
            ("merge3-conflict", 0, { try merge3Op(base, left, conflicting) }),
            (
                "field-delta-encode-1mib", large.sparseBytes,
                { encodeEditsOp(large.sparse, large.previous, large.knowledge) }
            ),
            (
                "field-delta-apply-1mib", large.sparseBytes,
                { try expandOp(large.encoded, large.knowledge, large.previous) }
            )
        ]
        // SHOAL_BENCH_CASES=a,b runs only the named cases (for profiling one at a time).
        let wanted = ProcessInfo.processInfo.environment["SHOAL_BENCH_CASES"].map {
            Set($0.split(separator: ",").map(String.init))
        }
        let cases = allCases.filter { wanted?.contains($0.name) ?? true }
        // The flip cases do two applies per op.
        let opsPerCall = cases.map { $0.name.hasSuffix("-apply") && !$0.name.hasPrefix("field-delta") ? 2 : 1 }
        // The 1 MiB cases take about a millisecond an op: fewer per iteration.
        let ops = cases.map { $0.name.hasSuffix("-1mib") ? FieldDeltaInputs.opsPerIteration : opsPerIteration }

        // SHOAL_BENCH_FIXED_OPS=n: run each case n times untimed and stop, so that
        // `perf stat -e instructions:u` divided by n is a load-independent cost per operation.
        if let fixed = ProcessInfo.processInfo.environment["SHOAL_BENCH_FIXED_OPS"].flatMap({ Int($0) }) {
            var n = 0
            for c in cases { for _ in 0..<fixed { n &+= try c.op() } }
            blackHole(n)
            printNote("ran \(cases.count) case(s) \(fixed) times each")
            return
        }
        var allocations = [Double?]()
        for (i, c) in cases.enumerated() {
            let n = try countAllocations {
                for _ in 0..<ops[i] { blackHole(try c.op()) }
            }
            allocations.append(n.map { Double($0) / Double(ops[i]) })
        }
        let timed = cases.enumerated().map { i, c in
            TimedCase(label: c.name) {
                var n = 0
                for _ in 0..<ops[i] { n &+= try c.op() }
                return n
            }
        }
        let seconds = try Harness.bestSecondsPerIteration(timed)
        var nanoseconds = [String: Double]()
        for (i, c) in cases.enumerated() {
            let perCall = Double(opsPerCall[i])
            let ns = seconds[i] / Double(ops[i]) / perCall * 1e9
            nanoseconds[c.name] = ns
            let allocs = allocations[i].map { fixed($0 / perCall, 2) } ?? "n/a"
            print("diff case=\(c.name) ns_per_op=\(fixed(ns, 1)) allocs_per_op=\(allocs) delta_bytes=\(c.bytes)")
        }
        guard let naiveNS = nanoseconds["naive-one-field-diff"], let diffNS = nanoseconds["one-field-diff"] else {
            return
        }
        let ratio = naiveNS / diffNS
        print("diff ratio naive_vs_diff=\(fixed(ratio, 1)) changed_value_bytes=\(changedValueBytes)")
    }

    // MARK: Inputs

    /// `record` with `field` set to `value` by a local, not yet saved edit, as an app makes it.
    static func edit(_ record: Record, _ field: String, _ value: FieldValue) -> Record {
        var r = record
        r[field] = value
        return r
    }

    /// `record` with `field` set to `value` and saved by `node` at `hlc`, as a store would.
    static func savedEdit(_ record: Record, _ field: String, _ value: FieldValue, by node: NodeID, at hlc: HLC)
        -> Record
    {
        var r = record
        r[field] = value
        return Stamping.saved(r, by: node, at: hlc)
    }

    static func size(_ d: RecordDelta) -> Int { d.encoded(zone: zone).count }

    /// A value's encoded size as the Spec writes a standalone value: its type tag and payload.
    /// (A delta setting the value, less one setting a removed-field marker, plus the tag byte.)
    static func valueSize(_ v: FieldValue) -> Int {
        let set = RecordDelta(baseTag: 0, operations: [.set(Record.Field(name: changedField, value: v))])
        let marker = RecordDelta(baseTag: 0, operations: [.set(Record.Field(name: changedField, value: nil))])
        return size(set) - size(marker) + 1
    }

    static func check(_ condition: Bool, _ what: @autoclosure () -> String) throws {
        if !condition { throw BenchmarkError(what()) }
    }

    // MARK: One operation each (not inlined, so nothing is hoisted out of the timing loop)

    @inline(never) static func diffOp(_ a: Record, _ b: Record) -> Int {
        let d = diff(a, b)
        return d.operations.count &+ Int(d.baseTag & 0xFF)
    }

    @inline(never) static func applyOp(_ r: inout Record, _ d: RecordDelta) throws -> Int {
        try r.apply(d)
        return r.fields.count
    }

    @inline(never) static func applyCopyOp(_ d: RecordDelta, _ r: Record) throws -> Int {
        try apply(d, to: r).fields.count
    }

    @inline(never) static func naiveOp(_ a: Record, _ b: Record) throws -> Int {
        let d = try naiveDiff(a, b)
        return d.operations.count &+ Int(d.baseTag & 0xFF) &+ (d.system == nil ? 0 : 1)
    }

    @inline(never) static func mergeOp(_ a: Record, _ b: Record) throws -> Int {
        try merge(a, b).fields.count
    }

    @inline(never) static func merge3Op(_ ancestor: Record, _ a: Record, _ b: Record) throws -> Int {
        try merge(ancestor: ancestor, local: a, remote: b).fields.count
    }

    // MARK: The naive approach

    /// What a diff without ShoalDiff looks like: encode both records with ShoalWire, decode each
    /// into a dictionary from field name to slot, compare the dictionaries name by name, and
    /// build the delta from the names that differ (system fields compared whole).
    static func naiveDiff(_ old: Record, _ new: Record) throws -> RecordDelta {
        let a = try Record(decoding: old.encoded()), b = try Record(decoding: new.encoded())
        var before = [String: Record.Field](minimumCapacity: a.fields.count)
        for f in a.fields { before[f.name] = f }
        var after = [String: Record.Field](minimumCapacity: b.fields.count)
        for f in b.fields { after[f.name] = f }
        var operations = [RecordDelta.Operation]()
        for (name, f) in after where before[name] != f { operations.append(.set(f)) }
        for name in before.keys where after[name] == nil { operations.append(.drop(name: name)) }
        operations.sort { $0.fieldName.utf8.lexicographicallyPrecedes($1.fieldName.utf8) }
        let system = RecordDelta.SystemFields(of: b)
        let stamped = operations.contains { if case .set(let f) = $0 { f.stamp != nil } else { false } }
        let same = system == RecordDelta.SystemFields(of: a) && !stamped
        return RecordDelta(baseTag: a.versionFingerprint, system: same ? nil : system, operations: operations)
    }
}
