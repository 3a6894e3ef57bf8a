// generate-seeds: writes the seed corpora Fuzz/Corpus/<target>/ from ShoalWire's own encoders.
//
// The fuzz package is built with `--sanitize=fuzzer`, which links libFuzzer's `main` into every
// executable, so this tool does its work in libFuzzer's `LLVMFuzzerInitialize` hook and exits
// before any fuzzing starts: `Fuzz/.build/release/generate-seeds Fuzz/Corpus`.

import ShoalSamples
import ShoalWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Required by libFuzzer; never reached, since `initialize` exits first.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt { 0 }

/// Writes the seeds into the directory named by the first argument, then exits.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>
) -> CInt {
    guard argc.pointee == 2, let arg = argv.pointee[1] else {
        print("usage: generate-seeds CORPUS_DIR   (writes CORPUS_DIR/<target>/<seed>)")
        exit(2)
    }
    let root = String(cString: arg)
    var failed = false
    for target in FuzzChecks.Target.allCases {
        let seeds = Seeds.make(target).filter { $0.bytes.count <= Seeds.maxSeedBytes }
        let dir = "\(root)/\(target.rawValue)"
        mkdir(root, 0o755)
        mkdir(dir, 0o755)
        var total = 0
        var valid = 0
        for (name, bytes) in seeds.prefix(Seeds.maxSeeds) {
            if Seeds.decodes(target, bytes) { valid += 1 }
            do {
                try target.check(bytes)
            } catch {
                print("seed \(name) fails its own check: \(error)")
                failed = true
            }
            Seeds.write(bytes, to: "\(dir)/\(name)")
            total += bytes.count
        }
        print("\(target.rawValue): \(min(seeds.count, Seeds.maxSeeds)) seeds (\(valid) decode), \(total) bytes")
    }
    exit(failed ? 1 : 0)
}

/// The seeds of each target, built with the encoders from records, deltas, tokens and frames.
enum Seeds {
    static let maxSeeds = 200
    static let maxSeedBytes = 16 << 10

    typealias Seed = (name: String, bytes: [UInt8])

    static func make(_ target: FuzzChecks.Target) -> [Seed] {
        switch target {
        case .record: return records()
        case .delta: return deltas()
        case .tombstone: return tombstones()
        case .token: return tokens()
        case .control: return controls()
        case .frame: return frames()
        case .frameStream: return streams()
        case .compressed: return compressedPayloads()
        case .messages: return messages()
        case .segment: return FuzzChecks.segmentSeeds()
        case .discovery: return announcements()
        case .compressedStream: return streamPieces()
        case .cABI: return cABISeeds()
        }
    }

    /// Whether the target's decoder accepts `bytes` (a seed that is rejected still explores
    /// the error paths, but most seeds should decode so that mutations start deep).
    static func decodes(_ target: FuzzChecks.Target, _ bytes: [UInt8]) -> Bool {
        switch target {
        case .record: return (try? Record(decoding: bytes)) != nil
        case .delta: return (try? RecordDelta(decoding: bytes, zone: FuzzChecks.deltaZone)) != nil
        case .tombstone: return (try? Tombstone(decoding: bytes)) != nil
        case .token: return (try? ChangeToken(bytes: bytes).contents()) != nil
        case .control:
            return (try? ErrorMessage(decoding: bytes)) != nil || (try? PingMessage(decoding: bytes)) != nil
                || (try? GoodbyeMessage(decoding: bytes)) != nil
        case .frame: return (try? FrameReader.decodeOne(bytes)) != nil
        case .messages: return (try? FuzzChecks.messages(bytes)) != nil && bytes.count > 1
        case .segment: return (try? FuzzChecks.segment(bytes)) != nil && !bytes.isEmpty
        case .discovery: return (try? DiscoveryAnnouncement(decoding: bytes)) != nil
        case .frameStream:
            var reader = FrameReader()
            return (try? reader.frames(in: bytes)) != nil
        case .compressedStream:
            var reader = FrameReader(limits: FuzzChecks.boundedLimits, acceptsStreamCompression: true)
            let wire = FuzzChecks.wrapStream(FuzzChecks.streamPieces(bytes))
            return !bytes.isEmpty && (try? reader.frames(in: wire)) != nil && reader.bufferedByteCount == 0
        case .compressed:
            guard let mode = bytes.first else { return false }
            let frame = FuzzChecks.wrap(
                Array(bytes.dropFirst()),
                compression: mode & 1 == 0 ? .zstd : .dictionary(id: BuiltInDictionaries.recordsID))
            return (try? FrameReader.decodeOne(frame, limits: FuzzChecks.boundedLimits)) != nil
        case .cABI: return bytes.count > 1
        }
    }

    /// fuzz-c-abi: the other targets' seeds behind the selector byte of their C entry point
    /// (FuzzChecks.cABI): records, tombstones, tokens, deltas, messages (fuzz-messages' kinds
    /// mapped to the C interface's; zone shares alone have no entry point), frames, inspect,
    /// control payloads (error, ping, goodbye), discovery announcements and device ID texts.
    static func cABISeeds() -> [Seed] {
        let kinds: [UInt8: UInt8] = [0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 7, 8: 8, 9: 5, 10: 9]
        var out = [Seed]()
        func add(_ selector: UInt8, _ seeds: [Seed], _ limit: Int) {
            out += seeds.prefix(limit).map { ("c\(selector)-\($0.name)", [selector] + $0.bytes) }
        }
        add(0, records(), 30)
        add(1, tombstones(), 15)
        add(2, tokens(), 15)
        add(3, deltas(), 30)
        for m in messages() {
            guard let selector = m.bytes.first, let kind = kinds[selector % 11] else { continue }
            out.append(("c5-\(m.name)", [5, kind] + m.bytes.dropFirst()))
        }
        add(6, frames(), 30)
        add(7, records(), 10)
        let controlKinds: [String: UInt8] = ["error": 0, "ping": 1, "goodbye": 2]
        for c in controls() {
            guard let kind = controlKinds[String(c.name.prefix { $0 != "-" })] else { continue }
            out.append(("c8-\(c.name)", [8, kind] + c.bytes))
        }
        add(9, announcements(), 10)
        // The first device IDs of Spec/vectors/device-ids.json, as text.
        let ids = [
            String(repeating: "00", count: 32), String(repeating: "ff", count: 32),
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        ]
        for (i, hex) in ids.enumerated() {
            guard let id = DeviceID(hex: hex) else { continue }
            out.append((name("c10-device", i), [10] + Array(id.text.utf8)))
        }
        return out
    }

    static func write(_ bytes: [UInt8], to path: String) {
        guard let f = fopen(path, "wb") else {
            print("cannot write \(path)")
            exit(1)
        }
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }

    static func name(_ prefix: String, _ i: Int) -> String {
        let digits = String(i)
        return prefix + "-" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }

    // MARK: Records

    static func records() -> [Seed] {
        var out = NotesCorpus.records(count: 40, seed: 0xF022).enumerated().map {
            (name("note", $0.offset), $0.element.encoded())
        }
        var gen = RandomRecords(seed: 0xF022_0001)
        var i = 0
        while out.count < 140 {
            let r = gen.record()
            let bytes = r.encoded()
            if bytes.count <= 4096 || i % 10 == 0 { out.append((name("random", i), bytes)) }
            i += 1
        }
        out.append(
            (
                "empty-unsaved",
                Record(recordType: "A", id: Record.ID(name: "a", zone: RecordZone.ID(name: "z"))).encoded()
            ))
        // Saved records' system fields alone (Record.encodedSystemFields(), Spec/wire-format.md §6.6).
        for (k, note) in NotesCorpus.records(count: 4, seed: 0xF022_0006).enumerated() {
            out.append((name("system-fields", k), note.encodedSystemFields()))
        }
        out.append((name("concurrent-slots", 0), concurrentSlots.encoded()))
        return out
    }

    /// A merge of three concurrent saves that kept every write of `color` and `title` side by
    /// side: concurrent slots (Spec/wire-format.md §6.3), a removed-field marker among them.
    static let concurrentSlots: Record = {
        let n = NotesCorpus.nodes
        func dot(_ node: NodeID, _ ms: UInt64) -> Dot {
            Dot(node: node, hlc: HLC(milliseconds: 1_790_000_000_000 + ms, logical: 0))
        }
        let a = dot(n[0], 300), b = dot(n[1], 400), c = dot(n[2], 500)
        return Record(
            recordType: "Note", id: Record.ID(name: "merged", zone: NotesCorpus.zone), parent: nil,
            creation: dot(n[0], 0),
            versionVector: VersionVector([(n[0], a.hlc), (n[1], b.hlc), (n[2], c.hlc)]),
            heads: n.map { Record.Head(node: $0, isDeletion: false) },
            fields: [
                Record.Field(name: "body", value: .string("shared draft"), stamp: dot(n[0], 0)),
                Record.Field(name: "color", value: nil, stamp: c),
                Record.Field(name: "color", value: .string("red"), stamp: b),
                Record.Field(name: "title", value: .string("Plan C"), stamp: c),
                Record.Field(name: "title", value: .string("Plan B"), stamp: b),
                Record.Field(name: "title", value: .string("Plan A"), stamp: a)
            ],
            extensions: [])
    }()

    // MARK: Deltas

    static func deltas() -> [Seed] {
        var gen = RandomRecords(seed: 0xF022_0002)
        let zone = FuzzChecks.deltaZone
        let notes = NotesCorpus.records(count: 30, seed: 0xF022_0003)
        var out = [Seed]()
        for (i, note) in notes.enumerated() {
            let withSystem = i % 3 != 0
            let system = withSystem ? RecordDelta.SystemFields(of: note) : nil
            func stamp(_ field: String) -> Dot? {
                withSystem ? note.fields.first { $0.name == field }?.stamp : nil
            }
            var ops = [RecordDelta.Operation]()
            switch i % 5 {
            case 0:
                ops = [.set(Record.Field(name: "title", value: .string(gen.string()), stamp: stamp("title")))]
            case 1:
                ops = [
                    .drop(name: "color"),
                    .set(Record.Field(name: "done", value: nil, stamp: stamp("done"))),
                    .patch(
                        name: "text", stamp: stamp("text"),
                        edits: [
                            RecordDelta.BytePatch(offset: 0, deleteCount: 4, insert: Array("ship".utf8)),
                            RecordDelta.BytePatch(offset: 9, deleteCount: 2, insert: [])
                        ])
                ]
            case 2:
                ops = [
                    .splice(
                        name: "tags", stamp: stamp("tags"),
                        edits: [
                            RecordDelta.ListSplice(offset: 0, deleteCount: 1, insert: .string(["urgent"])),
                            RecordDelta.ListSplice(offset: 2, deleteCount: 0, insert: .string(["travel", "later"]))
                        ])
                ]
            case 3:
                var names = Set<String>()
                for _ in 0..<(1 + i % 6) { names.insert(gen.identifier()) }
                for n in names.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
                    ops.append(
                        .set(
                            Record.Field(
                                name: n, value: gen.value(zone: zone),
                                stamp: withSystem ? note.versionVector.latest : nil)))
                }
            default:
                ops = []  // system fields only (or an empty delta)
            }
            let delta = RecordDelta(baseTag: note.versionFingerprint, system: system, operations: ops)
            out.append((name("delta", i), delta.encoded(zone: zone)))
        }
        // Splices of every element kind.
        for (k, kind) in FieldValue.Kind.allCases.enumerated() {
            let a = ListValue((0..<2).map { _ in gen.scalar(kind, zone: zone) }, kind: kind)!
            let b = ListValue([], kind: kind)!
            let delta = RecordDelta(
                baseTag: UInt32(k),
                operations: [
                    .splice(
                        name: "list\(k)", stamp: nil,
                        edits: [
                            RecordDelta.ListSplice(offset: 1, deleteCount: 0, insert: a),
                            RecordDelta.ListSplice(offset: 3, deleteCount: 2, insert: b)
                        ])
                ])
            out.append((name("splice", k), delta.encoded(zone: zone)))
        }
        // System fields with a parent, extensions and several heads, from random saved records.
        for k in 0..<20 {
            var r = gen.record()
            r.parent = Reference(recordID: Record.ID(name: "parent\(k)", zone: zone))
            let saved = gen.saved(r)
            let delta = RecordDelta(baseTag: saved.versionFingerprint, system: .init(of: saved), operations: [])
            out.append((name("system", k), delta.encoded(zone: zone)))
        }
        // A set per concurrent slot (Spec/wire-format.md §7.3), the later stamp first.
        let merged = concurrentSlots
        let sets = merged.fields.filter { $0.name == "color" || $0.name == "title" }.map {
            RecordDelta.Operation.set($0)
        }
        let concurrent = RecordDelta(baseTag: merged.versionFingerprint, system: .init(of: merged), operations: sets)
        out.append((name("concurrent-sets", 0), concurrent.encoded(zone: zone)))
        return out
    }

    // MARK: Tombstones and tokens

    static func tombstones() -> [Seed] {
        var gen = RandomRecords(seed: 0xF022_0004)
        var out = [Seed]()
        for k in 0..<40 {
            let r = gen.saved(gen.record())
            let entry = r.versionVector.entries[k % r.versionVector.count]
            let back = k % 2 == 0 ? 0 : UInt64(k) % entry.hlc.rawValue
            let t = Tombstone(
                id: r.id, recordType: r.recordType, versionVector: r.versionVector,
                deletion: Dot(node: entry.node, hlc: HLC(rawValue: entry.hlc.rawValue - back)))
            out.append((name("tombstone", k), t.encoded()))
        }
        for (k, note) in NotesCorpus.records(count: 10, seed: 0xF022_0005).enumerated() {
            let latest = note.versionVector.latest!
            let t = Tombstone(
                id: note.id, recordType: note.recordType, versionVector: note.versionVector, deletion: latest)
            out.append((name("note", k), t.encoded()))
        }
        return out
    }

    static func tokens() -> [Seed] {
        var rng = SplitMix64(seed: 0xF022_0006)
        var out = [Seed]()
        for k in 0..<40 {
            var vv = VersionVector()
            for _ in 0..<(k % 6) {
                let node = k % 4 == 0 ? NotesCorpus.nodes[Int(rng.next() % 3)] : NodeID.random(using: &rng)
                vv.advance(node, to: HLC(rawValue: 1 + rng.next() % (k % 3 == 0 ? 1 << 62 : 1000)))
            }
            let cursor =
                k % 2 == 0
                ? nil
                : ChangeToken.Contents.Cursor(
                    source: NodeID.random(using: &rng), sequence: k % 4 == 1 ? UInt64.max : rng.next() % 10_000)
            let contents = ChangeToken.Contents(
                kind: k % 3 == 0 ? .database : .zone, incarnation: NodeID.random(using: &rng), vector: vv,
                cursor: cursor)
            out.append((name(cursor == nil ? "token" : "token-cursor", k), ChangeToken(contents).bytes))
        }
        return out
    }

    // MARK: Discovery announcements

    static func announcements() -> [Seed] {
        var rng = SplitMix64(seed: 0xF022_D15C)
        var out = [Seed]()
        for k in 0..<24 {
            guard let device = DeviceID(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) }) else {
                continue
            }
            var endpoints = [DiscoveryAnnouncement.Endpoint]()
            for i in 0...(k % 5) {
                let port = UInt16(truncatingIfNeeded: 1 + rng.next() % 65_535) | 1
                switch (k + i) % 3 {
                case 0: endpoints.append(.init(host: .source, port: port))
                case 1:
                    endpoints.append(
                        .init(
                            host: .ipv4(0x0A4D_0000 | UInt32(truncatingIfNeeded: rng.next() % 65_535) | 1), port: port))
                default:
                    endpoints.append(
                        .init(
                            host: .ipv6(high: 0xFD00_0000_0000_0000 | rng.next() % 1000, low: rng.next() | 1),
                            port: port))
                }
            }
            out.append(
                (
                    name("announcement", k),
                    DiscoveryAnnouncement(
                        device: device, instance: k % 4 == 0 ? UInt64.max : rng.next(), endpoints: endpoints
                    ).encoded()
                ))
        }
        return out
    }

    // MARK: Control payloads

    static func controls() -> [Seed] {
        var out = [Seed]()
        let errors = [
            ErrorMessage(code: "limitExceeded", message: "frame payload is 5000000 bytes, over the limit of 4194304"),
            ErrorMessage(code: "requestRateLimited", retryAfterMilliseconds: 1500, message: "slow down"),
            ErrorMessage(code: "requestRateLimited", retryAfterMilliseconds: UInt64.max, message: ""),
            ErrorMessage(
                code: "changeTokenExpired", retryAfterMilliseconds: 0,
                message: "token older than the tombstone horizon; resync"),
            ErrorMessage(code: "partialFailure", message: "Zürich 日本語 🐟"),
            ErrorMessage(code: "zoneNotFound", message: "zone notes/_defaultOwner"),
            ErrorMessage(code: "serverRecordChanged", retryAfterMilliseconds: 127, message: "x"),
            ErrorMessage(
                code: "invalidArguments", retryAfterMilliseconds: 128, message: String(repeating: "long ", count: 100))
        ]
        out += errors.enumerated().map { (name("error", $0.offset), $0.element.encoded()) }
        let nonces: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 32, UInt64.max, 0x0123_4567_89AB_CDEF]
        out += nonces.enumerated().map { (name("ping", $0.offset), PingMessage(nonce: $0.element).encoded()) }
        let reasons = ["", "shutting down", "idle timeout", "Zürich 🐟", String(repeating: "bye ", count: 64)]
        out += reasons.enumerated().map { (name("goodbye", $0.offset), GoodbyeMessage(reason: $0.element).encoded()) }
        return out
    }

    // MARK: Replication messages

    /// One or more of each message kind behind its selector byte, including sparse batches and
    /// announcements with zone shares, zone shares alone (selector 7) and live changes (selector 9).
    static func messages() -> [Seed] {
        var out = [Seed]()
        let a = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)
        let b = NodeID(high: 0x0B0B_0000_0000_0002, low: 0x2222_2222_2222_2222)
        let inc = NodeID(high: 0x1AC0_0000_0000_0001, low: 2)
        let zone = NotesCorpus.zone
        let zones = [
            ZoneAnnouncement(zone: zone, incarnation: inc),
            ZoneAnnouncement(zone: RecordZone.ID(name: "lab", owner: "bob"), incarnation: a, isDeleted: true)
        ]
        let t0 = HLC(milliseconds: 1_790_000_000_000, logical: 0), t1 = HLC(milliseconds: 1_790_000_000_250, logical: 3)
        let k = VersionVector([(a, t0), (b, t1)])
        let token = ChangeToken(
            ChangeToken.Contents(kind: .zone, incarnation: inc, vector: k, cursor: .init(source: a, sequence: 42)))
        out.append(
            (name("hello", 0), [0] + HelloMessage(node: a, name: "node-a", capabilities: 1, zones: zones).encoded()))
        out.append((name("hello", 1), [0] + HelloMessage(node: b, dictionaries: [], zones: []).encoded()))
        out.append((name("zones", 0), [1] + ZonesMessage(zones: zones).encoded()))
        out.append(
            (
                name("subscribe", 0),
                [2] + SubscribeMessage(zone: zone, incarnation: inc, token: token, knowledge: k, window: 4).encoded()
            ))
        out.append((name("subscribe", 1), [2] + SubscribeMessage(zone: zone, incarnation: inc, token: nil).encoded()))
        out.append(
            (
                name("ack", 0),
                [3] + AcknowledgementMessage(zone: zone, incarnation: inc, batch: 300, knowledge: k).encoded()
            ))
        let records = NotesCorpus.records(count: 3, seed: 5)
        out.append(
            (
                name("changes", 0),
                [4]
                    + ChangesMessage(
                        zone: zone, incarnation: inc, batch: 1, isCaughtUp: false, token: token, records: records
                    ).encoded()
            ))
        out.append(
            (
                name("changes", 1),
                [4]
                    + ChangesMessage(
                        zone: zone, incarnation: inc, batch: 2, isCaughtUp: true, token: token, knowledge: k,
                        records: []
                    ).encoded()
            ))
        func sparse(_ name: String, _ text: String) -> SparseRecord {
            SparseRecord(
                id: Record.ID(name: name, zone: zone), recordType: "Note", entries: VersionVector([(a, t1)]),
                heads: [Record.Head(node: a, isDeletion: false)],
                fields: [Record.Field(name: "text", value: .string(text), stamp: Dot(node: a, hlc: t1))])
        }
        var rich = sparse("note-9", "x")
        rich.entries = VersionVector([(a, t1), (b, t0)])
        rich.heads = [Record.Head(node: a, isDeletion: false), Record.Head(node: b, isDeletion: true)]
        rich.fields = [
            Record.Field(name: "gone", value: nil, stamp: Dot(node: b, hlc: t0)),
            Record.Field(name: "tags", value: .list(.string(["a", "b"])), stamp: Dot(node: a, hlc: t1))
        ]
        rich.parent = Reference(recordID: Record.ID(name: "folder", zone: zone))
        rich.extensions = [Record.Extension(tag: 3, bytes: [1, 2])]
        // The digest of the omitted parts: the creation and an omitted slot, both below the base.
        let creation = Dot(node: a, hlc: HLC(rawValue: t0.rawValue - 7))
        var omitted = SparseRecord.OmittedDigest(creation: creation)
        omitted.add(Record.Field(name: "title", value: .string("Plan"), stamp: creation))
        var digested = sparse("note-13", "digest")
        digested.digest = omitted.value
        // Concurrent slots travel together: the field name index repeats, the later stamp first.
        let t2 = HLC(milliseconds: 1_790_000_000_300, logical: 0)
        var concurrent = sparse("note-14", "mine")
        concurrent.entries = VersionVector([(a, t1), (b, t2)])
        concurrent.heads = [Record.Head(node: a, isDeletion: false), Record.Head(node: b, isDeletion: false)]
        concurrent.fields = [
            Record.Field(name: "text", value: .string("theirs"), stamp: Dot(node: b, hlc: t2)),
            Record.Field(name: "text", value: .string("mine"), stamp: Dot(node: a, hlc: t1))
        ]
        concurrent.digest = omitted.value
        out.append(
            (
                name("changes-sparse", 0),
                [4]
                    + ChangesMessage(
                        zone: zone, incarnation: inc, batch: 3, isCaughtUp: false, token: token, records: [],
                        sparseRecords: [sparse("note-1", "one"), sparse("note-12", "two"), sparse("note-2", "")],
                        base: k
                    ).encoded()
            ))
        out.append(
            (
                name("changes-sparse", 1),
                [4]
                    + ChangesMessage(
                        zone: zone, incarnation: inc, batch: 4, isCaughtUp: true, token: token, knowledge: k,
                        records: [records[0]], sparseRecords: [rich], base: k
                    ).encoded()
            ))
        out.append(
            (
                name("changes-sparse", 2),
                [4]
                    + ChangesMessage(
                        zone: zone, incarnation: inc, batch: 5, isCaughtUp: false, token: token, records: [],
                        sparseRecords: [digested], base: k
                    ).encoded()
            ))
        out.append(
            (
                name("changes-sparse", 3),
                [4]
                    + ChangesMessage(
                        zone: zone, incarnation: inc, batch: 6, isCaughtUp: false, token: token, records: [],
                        sparseRecords: [concurrent], base: k
                    ).encoded()
            ))
        // Delta slots: a byte patch of a text the base covers, and a list splice, both edits of a
        // slot written at t0 (below the base).
        var patched = sparse("note-15", "")
        patched.fields = []
        patched.entries = VersionVector([(a, t1)])
        patched.deltas = [
            SparseRecord.FieldDelta(
                name: "body", stamp: Dot(node: a, hlc: t1), baseStamp: Dot(node: a, hlc: t0),
                baseDigest: SparseRecord.FieldDelta.digest(of: .string("hello world"), zone: zone),
                edit: .patch([RecordDelta.BytePatch(offset: 5, deleteCount: 1, insert: Array("_".utf8))])),
            SparseRecord.FieldDelta(
                name: "tags", stamp: Dot(node: a, hlc: t1), baseStamp: Dot(node: a, hlc: t0), baseDigest: 7,
                edit: .splice(kind: .int64, [RecordDelta.ListSplice(offset: 1, deleteCount: 0, insert: .int64([4, 5]))])
            )
        ]
        out.append(
            (
                name("changes-sparse-delta", 0),
                [4]
                    + ChangesMessage(
                        zone: zone, incarnation: inc, batch: 7, isCaughtUp: false, token: token, records: [],
                        sparseRecords: [patched], base: k
                    ).encoded()
            ))
        out.append(
            (
                name("want-whole", 0),
                [10] + WantWholeMessage(zone: zone, incarnation: inc, names: ["note-1", "note-15", "日記"]).encoded()
            ))
        guard let hash = ContentHash(bytes: (0..<32).map { UInt8($0) }) else { return out }
        let photo = Asset(hash: hash, size: 300_000)
        out.append((name("asset-request", 0), [5] + AssetRequestMessage(asset: photo, part: .manifest).encoded()))
        out.append(
            (
                name("asset-request", 1),
                [5] + AssetRequestMessage(asset: photo, part: .chunks(first: 3, count: 8)).encoded()
            ))
        out.append(
            (
                name("asset-chunk", 0),
                [6] + AssetChunkMessage(asset: photo, part: .chunk(index: 2, bytes: [9, 9, 9])).encoded()
            ))
        out.append((name("asset-chunk", 1), [6] + AssetChunkMessage(asset: photo, part: .unavailable).encoded()))
        // Live changes (selector 9), decoded in zone `notes`: whole records, and sparse ones with knowledge.
        out.append(
            (
                name("live-changes", 0),
                [9]
                    + LiveChangesMessage(
                        subscription: 1, zone: zone, batch: 2, isCaughtUp: false, tokenKept: 38,
                        tokenTail: [0x2B], records: [records[0]]
                    ).encoded()
            ))
        out.append(
            (
                name("live-changes", 1),
                [9]
                    + LiveChangesMessage(
                        subscription: 3, zone: zone, batch: 9, isCaughtUp: true, tokenKept: 0, tokenTail: token.bytes,
                        knowledge: k, records: [], sparseRecords: [sparse("note-1", "one")], base: k
                    ).encoded()
            ))
        // Writer log sections (Spec/authenticated-writes.md §4): every entry kind, a key and a seal.
        out.append((name("changes-writer-log", 0), [4] + WriterLogSamples.changes.encoded()))
        if let live = WriterLogSamples.liveChanges {
            out.append((name("live-changes-writer-log", 0), [9] + live.encoded()))
        }
        out.append(
            (
                name("upstreams", 0),
                [8]
                    + UpstreamsMessage(
                        zone: RecordZone.ID(name: "notes"), incarnation: NodeID(high: 1, low: 2),
                        nodes: [NodeID(high: 3, low: 4), NodeID(high: 5, low: 6)]
                    ).encoded()
            ))
        // Zone shares (signed by ShareSamples' test key), in announcements and alone.
        let plain = ZoneAnnouncement(zone: RecordZone.ID(name: "notes"), incarnation: ShareSamples.incarnation)
        out.append(
            (
                name("hello-share", 0),
                [0]
                    + HelloMessage(
                        node: a, name: "node-a", zones: [ZoneAnnouncement(share: ShareSamples.twoMembers), plain]
                    ).encoded()
            ))
        out.append(
            (
                name("zones-share", 0),
                [1] + ZonesMessage(zones: [ZoneAnnouncement(share: ShareSamples.twoMembers)]).encoded()
            ))
        out.append(
            (
                name("zones-share", 1),
                [1]
                    + ZonesMessage(zones: [
                        ZoneAnnouncement(share: ShareSamples.deleted), ZoneAnnouncement(share: ShareSamples.noMembers)
                    ]).encoded()
            ))
        out += ShareSamples.all.enumerated().map { (name("share", $0.offset), [7] + $0.element.share.encoded()) }
        return out
    }

    // MARK: Frames

    /// Every payload goes out plain, with zstd and with the built-in dictionary; `force` makes
    /// the encoder compress even small payloads that would not pay.
    static func encoder(_ mode: FrameEncoder.Options.Mode, force: Bool) -> FrameEncoder {
        var options = FrameEncoder.Options(mode: mode)
        if force {
            options.threshold = 1
            options.minimumSavingsPercent = -1000
        }
        return FrameEncoder(options: options)
    }

    static let modes: [(String, FrameEncoder.Options.Mode)] = [
        ("none", .none), ("zstd", .zstd), ("dict", .dictionary(BuiltInDictionaries.records))
    ]

    static func payloads() -> [(FrameType, [UInt8])] {
        let notes = NotesCorpus.records(count: 24, seed: 0xF022_0007)
        var gen = RandomRecords(seed: 0xF022_0008)
        var out: [(FrameType, [UInt8])] = [
            (.ping, PingMessage(nonce: 42).encoded()),
            (.pong, PingMessage(nonce: 42).encoded()),
            (.goodbye, GoodbyeMessage(reason: "done").encoded()),
            (
                .error,
                ErrorMessage(code: "requestRateLimited", retryAfterMilliseconds: 250, message: "slow down").encoded()
            ),
            (
                .acknowledgement,
                ChangeToken(.init(kind: .zone, incarnation: NotesCorpus.nodes[0], vector: notes[0].versionVector)).bytes
            ),
            (.hello, []),
            (FrameType(rawValue: 0x2A), Array("an unknown frame type is delivered, not refused".utf8)),
            (FrameType(rawValue: 0xFF), [0, 1, 2, 3])
        ]
        out.append((.changes, notes[1].encoded()))
        out.append((.changes, notes[2..<6].flatMap { $0.encoded() }))
        out.append((.changes, notes[6..<24].flatMap { $0.encoded() }))
        out.append((.changes, gen.record().encoded()))
        out.append((.assetChunk, (0..<600).map { _ in UInt8(truncatingIfNeeded: gen.rng.next()) }))
        out.append((.assetChunk, [UInt8](repeating: 0x5A, count: 3000)))
        return out
    }

    static func frames() -> [Seed] {
        var out = [Seed]()
        for (p, (type, payload)) in payloads().enumerated() {
            for (modeName, mode) in modes {
                for force in [false, true] where !(mode == .none && force) {
                    guard let bytes = try? encoder(mode, force: force).encode(type, payload: payload) else { continue }
                    out.append((name("frame-\(modeName)\(force ? "-forced" : "")", p), bytes))
                }
            }
        }
        return out
    }

    static func streams() -> [Seed] {
        var rng = SplitMix64(seed: 0xF022_0009)
        let pool = payloads()
        var out = [Seed]()
        for k in 0..<48 {
            var stream = [UInt8]()
            for _ in 0..<(1 + Int(rng.next() % 5)) {
                let (type, payload) = pool[Int(rng.next() % UInt64(pool.count))]
                let (_, mode) = modes[Int(rng.next() % 3)]
                if let bytes = try? encoder(mode, force: rng.next() % 2 == 0).encode(type, payload: payload) {
                    stream += bytes
                }
            }
            if k % 8 == 7 { stream.removeLast(Int(rng.next() % 12) + 1) }  // a frame still in flight
            out.append((name("stream", k), stream))
        }
        return out
    }

    /// `fuzz-stream` inputs: the pieces of a streaming encoder's compression-3 frames, with and
    /// without the built-in dictionary, some cut short, reordered or over the bounded limit.
    static func streamPieces() -> [Seed] {
        var rng = SplitMix64(seed: 0xF022_000A)
        let pool = payloads().map(\.1).filter { !$0.isEmpty }
        var out = [Seed]()
        for k in 0..<40 {
            var options = FrameEncoder.Options(mode: k % 2 == 0 ? .dictionary(BuiltInDictionaries.records) : .zstd)
            options.limits = FuzzChecks.boundedLimits
            let encoder = FrameEncoder(streamingWith: options)
            var pieces = [[UInt8]]()
            for _ in 0..<(1 + Int(rng.next() % 6)) {
                var payload = pool[Int(rng.next() % UInt64(pool.count))]
                if k % 10 == 9 { payload = [UInt8](repeating: 0, count: 60 << 10) }
                guard let frame = try? encoder.encode(.changes, payload: payload), frame[4] == 3 else { continue }
                pieces.append(Array(frame[9..<(frame.count - 4)]))
            }
            switch k % 8 {
            case 5 where pieces.count > 1: pieces.swapAt(0, pieces.count - 1)
            case 6 where pieces.last.map({ $0.count > 3 }) == true:
                pieces[pieces.count - 1].removeLast(1 + Int(rng.next() % 3))
            case 7 where pieces.count > 1: pieces.remove(at: 1)
            default: break
            }
            out.append((name("stream-pieces", k), FuzzChecks.streamInput(pieces)))
        }
        return out
    }

    /// `fuzz-compressed` inputs: a mode byte (0 zstd, 1 built-in dictionary), then a zstd frame.
    static func compressedPayloads() -> [Seed] {
        var out = [Seed]()
        var sources = payloads().map(\.1).filter { !$0.isEmpty }
        sources.append([UInt8](repeating: 0, count: 64 << 10))  // exactly the bounded limit
        sources.append([UInt8](repeating: 0, count: (64 << 10) + 1))  // one byte over it
        sources.append([UInt8](repeating: 7, count: 1 << 20))  // a 1 MiB bomb in a few bytes
        for (p, payload) in sources.enumerated() {
            for (modeName, mode) in modes.dropFirst() {
                guard let frame = try? encoder(mode, force: true).encode(.changes, payload: payload), frame[4] != 0
                else {
                    print("fuzz-compressed: \(modeName) did not compress source \(p); skipped")
                    continue
                }
                let header = frame[4] == 2 ? 13 : 9
                let modeByte: UInt8 = frame[4] == 2 ? 1 : 0
                out.append((name("compressed-\(modeName)", p), [modeByte] + frame[header..<(frame.count - 4)]))
            }
        }
        return out
    }
}

extension FrameEncoder.Options.Mode {
    static func == (a: Self, b: Self) -> Bool {
        switch (a, b) {
        case (.none, .none), (.zstd, .zstd): return true
        case (.dictionary(let x), .dictionary(let y)): return x == y
        default: return false
        }
    }
}
