// MessageVectorTests: Spec/vectors/messages.json — replication messages both ways, and their invalid forms.

import Foundation
import Testing
import ShoalSamples
@testable import ShoalWire
import ShoalWireJSON

@Suite struct MessageVectorTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Spec/vectors/messages.json")

    struct Vector: Sendable, CustomTestStringConvertible {
        var name: String, kind: String, hex: String, error: String?, offset: Int?
        var json: String  // serialized, so the vector is Sendable
        /// The `omitted` member (sparse items' omitted parts), serialized; nil when absent.
        var omitted: String?
        var testDescription: String { name }
    }

    static let vectors: [Vector] = {
        guard let data = try? Data(contentsOf: file),
            let list = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { return [] }
        return list.map { v in
            let json =
                (v["json"]).flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }.map {
                    String(decoding: $0, as: UTF8.self)
                } ?? ""
            let omitted = (v["omitted"]).flatMap {
                try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys])
            }.map { String(decoding: $0, as: UTF8.self) }
            return Vector(
                name: v["name"] as? String ?? "?", kind: v["kind"] as? String ?? "?", hex: v["hex"] as? String ?? "",
                error: v["error"] as? String, offset: v["offset"] as? Int, json: json, omitted: omitted)
        }
    }()

    @Test func everyMessageKindHasVectors() {
        #expect(
            Self.vectors.contains {
                $0.kind == "changes" && $0.error == nil && $0.json.contains("\"sparse_records\":[{")
            }, "no valid sparse vector")
        for kind in ["hello", "zones"] {
            #expect(
                Self.vectors.contains { $0.kind == kind && $0.error == nil && $0.json.contains("\"share\":{") },
                "no valid \(kind) vector with a share")
        }
        for kind in [
            "hello", "zones", "subscribe", "acknowledgement", "changes", "liveChanges", "assetRequest", "assetChunk",
            "upstreams", "wantWhole"
        ] {
            #expect(Self.vectors.contains { $0.kind == kind && $0.error == nil }, "no valid \(kind) vector")
            #expect(Self.vectors.contains { $0.kind == kind && $0.error != nil }, "no invalid \(kind) vector")
        }
    }

    @Test(arguments: vectors.filter { $0.error == nil })
    func validVector(_ v: Vector) throws {
        let bytes = try #require(Hex.bytes(v.hex))
        let (json, encoded) = try VectorJSON.message(v.kind, bytes)
        #expect(Hex.string(encoded) == v.hex, "decode → encode changed the bytes")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(v.json.utf8)) as? [String: Any])
        #expect(try Hex.string(VectorJSON.encodeMessage(v.kind, expected)) == v.hex, "JSON → encode differs")
        let got = String(
            decoding: try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), as: UTF8.self)
        #expect(got == v.json, "decoded value differs from the vector's JSON")
        // Every share's signature verifies under its owner key, whose device is owner_device.
        for (share, ownerDevice) in try VectorJSON.shares(v.kind, bytes, expected) {
            #expect(
                ShareSignature.verifiedOwner(share)?.hex == ownerDevice,
                "the share of \(share.zone) does not verify as owned by \(ownerDevice)")
        }
        // Every sparse item's digest is the digest of the omitted parts the vector states.
        let omitted = try v.omitted.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) }
        for problem in try SparseOmission.problems(message: expected, omitted: omitted) { Issue.record("\(problem)") }
    }

    @Test(arguments: vectors.filter { $0.error != nil })
    func invalidVector(_ v: Vector) throws {
        let bytes = try #require(Hex.bytes(v.hex))
        do {
            _ = try VectorJSON.message(v.kind, bytes)
            Issue.record("decoded; expected \(v.error ?? "")")
        } catch let e as WireError {
            #expect(e.code.name == v.error, "\(e)")
            #expect(e.offset == v.offset, "\(e)")
        }
    }

    /// Seeded round trips of changes batches built from random records.
    @Test func randomBatchesRoundTrip() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xC4A6_0001)
        var gen = RandomRecords(seed: seed)
        for i in 0..<300 {
            let zone = RecordZone.ID(name: "z\(i % 3)")
            let records = (0..<Int(gen.rng.next() % 6)).compactMap { _ -> Record? in
                let r = gen.record()
                return r.id.zone == zone ? r : nil
            }
            let m = ChangesMessage(
                zone: zone, incarnation: NodeID(high: 1, low: UInt64(i)), batch: UInt64(i + 1), isCaughtUp: i % 2 == 0,
                token: ChangeToken(bytes: [1, 2, 3]),
                knowledge: i % 2 == 0 ? VersionVector([(NodeID(high: 9, low: 9), HLC(rawValue: 77))]) : nil,
                records: records)
            let bytes = m.encoded()
            let back = try ChangesMessage(decoding: bytes)
            #expect(back == m, "seed \(seed) case \(i)")
            // Each record's bytes in the payload are its canonical encoding, and a payload made
            // from those bytes is the same payload.
            let (kept, ranges) = try ChangesMessage.decodeKeepingRecordBytes(bytes)
            #expect(kept == m && ranges.count == records.count, "seed \(seed) case \(i)")
            for (r, range) in zip(records, ranges) {
                #expect(Array(bytes[range]) == r.encoded(), "seed \(seed) case \(i)")
            }
            var header = m
            header.records = []
            #expect(
                header.encoded(count: records.count, recordBytes: records.flatMap { $0.encoded() }) == bytes,
                "seed \(seed) case \(i)")
        }
    }

    /// Writes Spec/vectors/messages.json when SHOAL_WRITE_VECTORS=1.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SHOAL_WRITE_VECTORS"] == "1"))
    func writeMessageVectors() throws {
        var out = [[String: Any]]()
        func valid(_ name: String, _ kind: String, _ bytes: [UInt8]) throws {
            out.append([
                "name": name, "kind": kind, "hex": Hex.string(bytes), "json": try VectorJSON.message(kind, bytes).json
            ])
        }
        /// A valid message with sparse items, and the parts each item leaves out (its digest's inputs).
        func sparse(_ name: String, _ kind: String, _ bytes: [UInt8], omitted: [SparseOmission]) throws {
            try valid(name, kind, bytes)
            out[out.count - 1]["omitted"] = omitted.map(\.json)
            let json = try #require(out[out.count - 1]["json"] as? [String: Any])
            for problem in try SparseOmission.problems(message: json, omitted: omitted.map(\.json)) {
                Issue.record("\(name): \(problem)")
            }
        }
        func invalid(_ name: String, _ kind: String, _ bytes: [UInt8]) {
            do {
                _ = try VectorJSON.message(kind, bytes)
                Issue.record("\(name) decoded")
            } catch let e as WireError {
                out.append([
                    "name": name, "kind": kind, "hex": Hex.string(bytes), "error": e.code.name, "offset": e.offset,
                    "detail": e.detail
                ])
            } catch { Issue.record("\(name): \(error)") }
        }
        let a = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)
        let inc = NodeID(high: 0x1AC0_0000_0000_0001, low: 0x2)
        let notes = RecordZone.ID(name: "notes"), shared = RecordZone.ID(name: "lab", owner: "bob")
        let zones = [
            ZoneAnnouncement(zone: shared, incarnation: inc),
            ZoneAnnouncement(zone: notes, incarnation: inc, isDeleted: true)
        ]
        let hello = HelloMessage(node: a, name: "node-a", zones: zones)
        try valid("hello", "hello", hello.encoded())
        try valid(
            "hello-no-zones-no-dictionaries", "hello", HelloMessage(node: a, dictionaries: [], zones: []).encoded())
        try valid("zones", "zones", ZonesMessage(zones: zones).encoded())
        let token = ChangeToken(
            ChangeToken.Contents(
                kind: .zone, incarnation: inc, vector: VersionVector([(a, HLC(rawValue: 1 << 20))]),
                cursor: .init(source: a, sequence: 42)))
        try valid(
            "subscribe-from-start", "subscribe", SubscribeMessage(zone: notes, incarnation: inc, token: nil).encoded())
        let k = VersionVector([(a, HLC(rawValue: 3 << 20)), (inc, HLC(rawValue: 7 << 20))])
        try valid(
            "subscribe-with-token", "subscribe",
            SubscribeMessage(zone: notes, incarnation: inc, token: token, knowledge: k, window: 8).encoded())
        try valid(
            "subscribe-numbered", "subscribe",
            SubscribeMessage(zone: notes, incarnation: inc, token: token, knowledge: k, window: 8, number: 3).encoded())
        let withHeads = SubscribeMessage(
            zone: notes, incarnation: inc, token: token, knowledge: k, window: 8, number: 3,
            writerLogHeads: [a: 12, inc: 3])
        try valid("subscribe-with-writer-log-heads", "subscribe", withHeads.encoded())
        try valid(
            "subscribe-with-no-writer-log-heads", "subscribe",
            SubscribeMessage(zone: notes, incarnation: inc, token: nil, window: 8, number: 3, writerLogHeads: [:])
                .encoded())
        let numbered = SubscribeMessage(zone: notes, incarnation: inc, token: token, knowledge: k, window: 8, number: 3)
            .encoded()
        func raw(_ n: NodeID) -> [UInt8] {
            withUnsafeBytes(of: n.high.bigEndian, Array.init) + withUnsafeBytes(of: n.low.bigEndian, Array.init)
        }
        invalid("subscribe-writer-log-heads-unsorted", "subscribe", numbered + [2] + raw(inc) + [3] + raw(a) + [12])
        invalid("subscribe-writer-log-head-zero", "subscribe", numbered + [1] + raw(a) + [0])
        try valid(
            "acknowledgement", "acknowledgement",
            AcknowledgementMessage(zone: notes, incarnation: inc, batch: 300, knowledge: k).encoded())
        let records = NotesCorpus.records(count: 2, seed: 21)
        try valid(
            "changes-two-records", "changes",
            ChangesMessage(
                zone: NotesCorpus.zone, incarnation: inc, batch: 1, isCaughtUp: false, token: token, records: records
            ).encoded())
        try valid(
            "changes-caught-up-empty", "changes",
            ChangesMessage(
                zone: notes, incarnation: inc, batch: 2, isCaughtUp: true, token: token,
                knowledge: VersionVector([(a, HLC(rawValue: 5 << 20))]), records: []
            ).encoded())

        try valid(
            "changes-reset", "changes",
            ChangesMessage(
                zone: notes, incarnation: inc, batch: 5, isCaughtUp: false, isReset: true, token: token,
                records: [records[0]].map { r in
                    Record(
                        recordType: r.recordType, id: Record.ID(name: r.id.name, zone: notes), parent: nil,
                        creation: r.creation, versionVector: r.versionVector, heads: r.heads,
                        fields: r.fields.filter { $0.value?.kind != .reference }, extensions: r.extensions)
                }
            ).encoded())
        try valid(
            "changes-with-remaining", "changes",
            ChangesMessage(
                zone: NotesCorpus.zone, incarnation: inc, batch: 1, isCaughtUp: false, token: token,
                remaining: 199_998, records: records
            ).encoded())
        let horizon = VersionVector([(a, HLC(rawValue: 3 << 20))])
        try valid(
            "changes-reset-with-horizon", "changes",
            ChangesMessage(
                zone: notes, incarnation: inc, batch: 1, isCaughtUp: true, isReset: true,
                token: token, knowledge: VersionVector([(a, HLC(rawValue: 5 << 20))]),
                horizon: horizon, records: []
            ).encoded())
        var b = hello.encoded(); b[1] = 0
        invalid("hello-empty-version-range", "hello", b)
        invalid("hello-unsorted-zones", "hello", HelloMessage(node: a, zones: zones.reversed()).encoded())
        invalid("hello-duplicate-dictionary", "hello", HelloMessage(node: a, dictionaries: [7, 7], zones: []).encoded())
        b = ZonesMessage(zones: [zones[0]]).encoded(); b[b.count - 1] = 4
        invalid("zones-reserved-flag", "zones", b)
        invalid(
            "zones-empty-zone-name", "zones",
            ZonesMessage(zones: [ZoneAnnouncement(zone: RecordZone.ID(name: ""), incarnation: inc)]).encoded())
        b = SubscribeMessage(zone: notes, incarnation: inc, token: nil).encoded(); b[b.count - 1] = 0
        invalid("subscribe-zero-window", "subscribe", b)
        invalid(
            "subscribe-number-zero", "subscribe",
            SubscribeMessage(zone: notes, incarnation: inc, token: nil).encoded() + [0])
        invalid(
            "acknowledgement-trailing-byte", "acknowledgement",
            AcknowledgementMessage(zone: notes, incarnation: inc, batch: 1).encoded() + [0])
        b = ChangesMessage(zone: notes, incarnation: inc, batch: 1, isCaughtUp: false, token: token, records: [])
            .encoded()
        let flagsAt = WireSize.zoneID(notes) + 16 + 1
        var c = b; c[flagsAt] = 128
        invalid("changes-writer-log-flag-without-section", "changes", c)
        try valid(
            "changes-with-subscription-number", "changes",
            ChangesMessage(
                zone: notes, incarnation: inc, batch: 1, isCaughtUp: true, token: token,
                knowledge: VersionVector([(a, HLC(rawValue: 5 << 20))]), records: [],
                subscription: 3
            ).encoded())
        c = ChangesMessage(
            zone: notes, incarnation: inc, batch: 1, isCaughtUp: false, token: token, records: [], subscription: 1
        ).encoded()
        c[c.count - 2] = 0
        invalid("changes-subscription-number-zero", "changes", c)
        try liveChangesVectors(valid: valid, sparse: sparse, invalid: invalid)
        c = b; c[flagsAt] = 32
        invalid("changes-horizon-flag-without-vector", "changes", c)
        c = b; c[flagsAt - 1] = 0
        invalid("changes-batch-zero", "changes", c)
        invalid(
            "changes-record-from-other-zone", "changes",
            ChangesMessage(
                zone: shared, incarnation: inc, batch: 1, isCaughtUp: false, token: token, records: [records[0]]
            ).encoded())
        c = b; c[c.count - 1] = 200
        invalid("changes-claims-more-records-than-bytes", "changes", c)
        try writerLogVectors(valid: valid, invalid: invalid)
        try sparseVectors(sparse: sparse, invalid: invalid)
        try sparseRuleVectors(valid: valid, sparse: sparse, invalid: invalid)
        try deltaSlotVectors(valid: valid, sparse: sparse, invalid: invalid)
        // The asset lane (replication.md §3.7).
        let photo = Asset(hash: ContentHash(hex: String(repeating: "ab", count: 32))!, size: 300_000)
        try valid(
            "asset-request-manifest", "assetRequest", AssetRequestMessage(asset: photo, part: .manifest).encoded())
        try valid(
            "asset-request-chunks", "assetRequest",
            AssetRequestMessage(asset: photo, part: .chunks(first: 3, count: 8)).encoded())
        try valid(
            "asset-chunk-manifest", "assetChunk", AssetChunkMessage(asset: photo, part: .manifest([1, 2, 3])).encoded())
        try valid(
            "asset-chunk", "assetChunk",
            AssetChunkMessage(asset: photo, part: .chunk(index: 3, bytes: Array(repeating: 7, count: 20))).encoded())
        try valid(
            "asset-chunk-unavailable", "assetChunk", AssetChunkMessage(asset: photo, part: .unavailable).encoded())
        var q = AssetRequestMessage(asset: photo, part: .chunks(first: 3, count: 8)).encoded()
        q[q.count - 1] = 0
        invalid("asset-request-zero-chunks", "assetRequest", q)
        q[q.count - 1] = 65
        invalid("asset-request-too-many-chunks", "assetRequest", q)
        q = AssetRequestMessage(asset: photo, part: .manifest).encoded()
        q[q.count - 1] = 4
        invalid("asset-request-unknown-part", "assetRequest", q)
        q = AssetChunkMessage(asset: photo, part: .chunk(index: 3, bytes: [1, 2])).encoded()
        invalid("asset-chunk-truncated", "assetChunk", Array(q.dropLast()))
        invalid(
            "asset-chunk-trailing-byte", "assetChunk",
            AssetChunkMessage(asset: photo, part: .unavailable).encoded() + [0])
        try shareVectors(valid: valid, invalid: invalid)
        // Upstreams (replication.md §3.9).
        let upZone = RecordZone.ID(name: "notes"), upInc = NodeID(high: 0x1AC0_0000_0000_0001, low: 0x2)
        let upA = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111),
            upB = NodeID(high: 0x0B0B_0000_0000_0002, low: 0x2222_2222_2222_2222)
        try valid(
            "upstreams-two", "upstreams",
            UpstreamsMessage(zone: upZone, incarnation: upInc, nodes: [upB, upA]).encoded())
        try valid(
            "upstreams-none", "upstreams", UpstreamsMessage(zone: upZone, incarnation: upInc, nodes: []).encoded())
        let two = UpstreamsMessage(zone: upZone, incarnation: upInc, nodes: [upA, upB]).encoded()
        let head = Array(two.prefix(two.count - 33))  // zone and incarnation
        invalid("upstreams-unsorted", "upstreams", head + [2] + two.suffix(16) + two.suffix(32).prefix(16))
        invalid("upstreams-duplicate", "upstreams", head + [2] + two.suffix(16) + two.suffix(16))
        invalid("upstreams-over-limit", "upstreams", head + [0x81, 0x08])  // 1,025 nodes
        invalid("upstreams-truncated", "upstreams", Array(two.dropLast()))
        let data = try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: Self.file)
    }
}

extension MessageVectorTests {
    /// Sparse sections (Spec/replication.md §3.5.1): valid batches and each canonical-form rule broken.
    func sparseVectors(
        sparse: (String, String, [UInt8], [SparseOmission]) throws -> Void,
        invalid: (String, String, [UInt8]) -> Void
    ) throws {
        let a = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)
        let b = NodeID(high: 0x0B0B_0000_0000_0002, low: 0x2222_2222_2222_2222)
        let inc = NodeID(high: 0x1AC0_0000_0000_0001, low: 0x2)
        let zone = RecordZone.ID(name: "notes")
        let t0 = HLC(milliseconds: 1_790_000_000_000, logical: 0), t1 = HLC(milliseconds: 1_790_000_000_250, logical: 3)
        let base = VersionVector([(a, t0), (b, t0)])
        let token = ChangeToken(bytes: [0x01])
        func item(_ name: String, _ text: String, node: NodeID = a, at t: HLC = t1) -> SparseRecord {
            SparseRecord(
                id: Record.ID(name: name, zone: zone), recordType: "Note", entries: VersionVector([(node, t)]),
                heads: [Record.Head(node: node, isDeletion: false)],
                fields: [Record.Field(name: "text", value: .string(text), stamp: Dot(node: node, hlc: t))])
        }
        func message(_ items: [SparseRecord], base: VersionVector = base) -> [UInt8] {
            ChangesMessage(
                zone: zone, incarnation: inc, batch: 3, isCaughtUp: false, token: token, records: [],
                sparseRecords: items, base: base
            ).encoded()
        }
        // One field changed on two records by one node: the shape of most live updates. Each
        // record leaves out its creation and the slots set then.
        let created = [SparseOmission.created(by: a, slots: ["done", "title"]), SparseOmission.created(by: a, 1)]
        try sparse(
            "changes-sparse-one-field", "changes",
            message([
                created[0].digesting(item("item-1200", "six new words of text")),
                created[1].digesting(item("item-1300", "more"))
            ]),
            created)
        // Two entries, explicit heads and stamps, a removal marker, a parent.
        var rich = item("item-1400", "x")
        rich.entries = VersionVector([(a, t1), (b, HLC(milliseconds: 1_790_000_000_100, logical: 0))])
        rich.heads = [Record.Head(node: a, isDeletion: false), Record.Head(node: b, isDeletion: false)]
        rich.fields = [
            Record.Field(name: "gone", value: nil, stamp: Dot(node: b, hlc: rich.entries[b])),
            Record.Field(name: "text", value: .int64(7), stamp: Dot(node: a, hlc: t1))
        ]
        rich.parent = Reference(recordID: Record.ID(name: "folder", zone: zone))
        // Left out: A's creation and its title, and B's earlier edit of done (below the base).
        var richOmitted = SparseOmission.created(by: a)
        richOmitted.slots.insert(
            .init(name: "done", stamp: Dot(node: b, hlc: HLC(milliseconds: 1_789_999_999_000, logical: 1))), at: 0)
        try sparse("changes-sparse-two-writers", "changes", message([richOmitted.digesting(rich)]), [richOmitted])

        // Hand-built sections, each breaking one rule of §3.5.1.
        func varint(_ v: UInt64) -> [UInt8] {
            var v = v, out = [UInt8]()
            while v >= 0x80 { out.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
            return out + [UInt8(v)]
        }
        func str(_ s: String) -> [UInt8] { varint(UInt64(s.utf8.count)) + Array(s.utf8) }
        let d = varint(WireSize.zigzag(Int64(bitPattern: t1.rawValue &- t0.rawValue)))
        let zeroDigest = [UInt8](repeating: 0, count: 8)
        /// flags, shared, suffix, type 0, one entry (node 0, d), a zero digest, fields (name 0,
        /// string tag 1, "v").
        func rawItem(flags: UInt8 = 0, shared: UInt64 = 0, suffix: String, fields: [UInt8]? = nil) -> [UInt8] {
            [flags] + varint(shared) + str(suffix) + [0] + [1, 0] + d + zeroDigest + (fields ?? ([1, 0, 1] + str("v")))
        }
        func raw(nodes: [NodeID] = [a], types: [String] = ["Note"], names: [String] = ["text"], items: [[UInt8]])
            -> [UInt8]
        {
            var out = ChangesMessage(
                zone: zone, incarnation: inc, batch: 3, isCaughtUp: false, token: token, records: []
            ).encoded()
            out[WireSize.zoneID(zone) + 16 + 1] |= 4
            var w = [UInt8]()
            w += varint(UInt64(base.count))
            for e in base.entries {
                w += (Hex.bytes(e.node.hex) ?? []) + withUnsafeBytes(of: e.hlc.rawValue.littleEndian, Array.init)
            }
            w += varint(UInt64(nodes.count)) + nodes.flatMap { Hex.bytes($0.hex) ?? [] }
            w += varint(UInt64(types.count)) + types.flatMap(str)
            w += varint(UInt64(names.count)) + names.flatMap(str)
            w += varint(UInt64(items.count)) + items.flatMap { $0 }
            return out + w
        }
        // The builder agrees with the encoder on a valid section.
        #expect(
            raw(items: [rawItem(suffix: "item-1200")])
                == message([
                    SparseRecord(
                        id: Record.ID(name: "item-1200", zone: zone), recordType: "Note",
                        entries: VersionVector([(a, t1)]),
                        heads: [Record.Head(node: a, isDeletion: false)],
                        fields: [Record.Field(name: "text", value: .string("v"), stamp: Dot(node: a, hlc: t1))])
                ]))
        // Bit 4, the lowest reserved bit of an item's flags.
        invalid("changes-sparse-reserved-item-flag", "changes", raw(items: [rawItem(flags: 0x10, suffix: "item-1200")]))
        // Heads (one: entry 0, a save) go between the entries and the digest.
        invalid(
            "changes-sparse-default-heads-flagged", "changes",
            raw(items: [
                rawItem(flags: 0x02, suffix: "item-1200").prefix(1 + 1 + 10 + 1 + 2 + d.count) + [1, 0, 1] + zeroDigest
                    + [1, 0, 1] + str("v")
            ]))
        invalid(
            "changes-sparse-prefix-beyond-previous", "changes", raw(items: [rawItem(shared: 3, suffix: "item-1200")]))
        invalid(
            "changes-sparse-prefix-not-maximal", "changes",
            raw(items: [rawItem(suffix: "item-1200"), rawItem(shared: 5, suffix: "1300")]))
        invalid(
            "changes-sparse-unused-type", "changes", raw(types: ["Note", "Task"], items: [rawItem(suffix: "item-1200")])
        )
        invalid(
            "changes-sparse-unsorted-field-table", "changes",
            raw(names: ["text", "such"], items: [rawItem(suffix: "item-1200")]))
        invalid(
            "changes-sparse-node-index-outside-table", "changes",
            raw(items: [[0] + varint(0) + str("item-1200") + [0] + [1, 1] + d + zeroDigest + [0]]))
        invalid("changes-sparse-empty-section", "changes", raw(items: []))
    }
}

extension MessageVectorTests {
    /// `live-changes` (Spec/replication.md §3.5.4): valid batches, and each check of its decoder.
    func liveChangesVectors(
        valid: (String, String, [UInt8]) throws -> Void,
        sparse: (String, String, [UInt8], [SparseOmission]) throws -> Void,
        invalid: (String, String, [UInt8]) -> Void
    ) throws {
        let a = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)
        let inc = NodeID(high: 0x1AC0_0000_0000_0001, low: 0x2)
        let notes = VectorJSON.liveZone
        let previous = ChangeToken(
            ChangeToken.Contents(
                kind: .zone, incarnation: inc, vector: VersionVector(), cursor: .init(source: a, sequence: 300)))
        let next = ChangeToken(
            ChangeToken.Contents(
                kind: .zone, incarnation: inc, vector: VersionVector(), cursor: .init(source: a, sequence: 301)))
        func moved(_ r: Record, to zone: RecordZone.ID) -> Record {
            Record(
                recordType: r.recordType, id: Record.ID(name: r.id.name, zone: zone), parent: nil, creation: r.creation,
                versionVector: r.versionVector, heads: r.heads,
                fields: r.fields.filter { $0.value?.kind != .reference }, extensions: r.extensions)
        }
        let one = NotesCorpus.records(count: 1, seed: 31).map { moved($0, to: notes) }
        func live(
            _ batch: UInt64, caughtUp: Bool = true, token: ChangeToken = next, knowledge: VersionVector? = nil,
            records: [Record] = [],
            sparse: [SparseRecord] = [], base: VersionVector? = nil, reference: VersionVector? = nil
        ) throws -> LiveChangesMessage {
            let full = ChangesMessage(
                zone: notes, incarnation: inc, batch: batch, isCaughtUp: caughtUp, token: token, knowledge: knowledge,
                records: records, sparseRecords: sparse, base: base)
            return try #require(
                LiveChangesMessage(full, subscription: 2, previousToken: previous.bytes, reference: reference))
        }
        let k = VersionVector([(a, HLC(rawValue: 9 << 20))])
        try valid("live-changes-one-record", "liveChanges", try live(7, records: one).encoded())
        try valid("live-changes-caught-up-with-knowledge", "liveChanges", try live(8, knowledge: k).encoded())
        let t0 = HLC(milliseconds: 1_790_000_000_000, logical: 0), t1 = HLC(milliseconds: 1_790_000_000_250, logical: 3)
        let item = SparseRecord(
            id: Record.ID(name: "item-1200", zone: notes), recordType: "Note", parent: nil,
            entries: VersionVector([(a, t1)]), heads: [Record.Head(node: a, isDeletion: false)],
            fields: [Record.Field(name: "text", value: .string("six new words"), stamp: Dot(node: a, hlc: t1))],
            extensions: [])
        let omitted = SparseOmission.created(by: a)
        try sparse(
            "live-changes-sparse", "liveChanges",
            try live(9, knowledge: k, sparse: [omitted.digesting(item)], base: VersionVector([(a, t0)])).encoded(),
            [omitted])
        try valid(
            "live-changes-token-shorter", "liveChanges",
            try live(10, token: ChangeToken(bytes: Array(previous.bytes.prefix(20)))).encoded())
        let b = try live(7).encoded()  // subscription 2, batch 7, flags, kept, tail…
        var c = b; c[0] = 0
        invalid("live-changes-subscription-zero", "liveChanges", c)
        c = b; c[1] = 0
        invalid("live-changes-batch-zero", "liveChanges", c)
        c = b; c[2] |= 0x20
        invalid("live-changes-reserved-flag", "liveChanges", c)
        // 4 MiB + 1 kept.
        invalid(
            "live-changes-token-kept-over-limit", "liveChanges", Array(b.prefix(3)) + [0x81, 0x80, 0x80, 0x02] + [0, 0])
        invalid(
            "live-changes-token-over-limit", "liveChanges",
            Array(b.prefix(3)) + [0x80, 0x80, 0x80, 0x02] + [0x01, 0xAA, 0])  // 4 MiB kept + 1
        invalid(
            "live-changes-record-from-other-zone", "liveChanges",
            LiveChangesMessage(
                subscription: 2, zone: RecordZone.ID(name: "lab"), batch: 7,
                isCaughtUp: true, tokenKept: 3, tokenTail: [],
                records: [moved(one[0], to: RecordZone.ID(name: "lab"))]
            ).encoded())
        c = b; c[2] |= 4
        invalid("live-changes-sparse-flag-without-section", "liveChanges", c)
        try againstStatedVectors(
            { try live($0, knowledge: $1, sparse: $2, base: $3, reference: $4) }, item: item, omitted: omitted,
            valid: valid, sparse: sparse, invalid: invalid)
    }

    /// `live-changes` whose knowledge and sparse base are written against the stated knowledge
    /// (flags bit 3, Spec/replication.md §3.5.4), read against ``VectorJSON/liveReference``.
    /// `live(batch, knowledge, sparse, base, reference)` makes a batch of subscription 2.
    func againstStatedVectors(
        _ live: (UInt64, VersionVector?, [SparseRecord], VersionVector?, VersionVector?) throws -> LiveChangesMessage,
        item: SparseRecord, omitted: SparseOmission,
        valid: (String, String, [UInt8]) throws -> Void,
        sparse: (String, String, [UInt8], [SparseOmission]) throws -> Void,
        invalid: (String, String, [UInt8]) -> Void
    ) throws {
        let r = VectorJSON.liveReference
        let a = r.entries[0].node
        let d = NodeID(high: 0x0D0D_0000_0000_0003, low: 0x3333_3333_3333_3333)
        let t1 = HLC(milliseconds: 1_790_000_000_250, logical: 3), td = HLC(milliseconds: 1_790_000_000_300, logical: 0)
        // The usual live update: one writer's entry moves, and the base is the stated knowledge.
        let k = VersionVector([(a, t1)])
        try sparse(
            "live-changes-against-stated", "liveChanges", try live(11, k, [omitted.digesting(item)], r, r).encoded(),
            [omitted])
        // A node the stated knowledge lacks is written out; the base drops the second node (value 0).
        let kNew = VersionVector([(a, t1), (d, td)]), baseLess = VersionVector([(a, r.entries[0].hlc)])
        try sparse(
            "live-changes-against-stated-new-node", "liveChanges",
            try live(12, kNew, [omitted.digesting(item)], baseLess, r).encoded(), [omitted])
        // Knowledge alone: only the record count (0) follows it.
        let kSize = VectorChange.size(VectorChange.entries(of: k), against: r)
        let plain = try live(13, k, [], nil, r).encoded()
        let p = plain.count - 1 - kSize
        let head = Array(plain[..<p]), zero: [UInt8] = [0]
        func bytes(_ n: Int, _ body: (inout WireWriter) -> Void) -> [UInt8] { WireWriter.encode(size: n, body) }
        func zz(_ x: Int64) -> [UInt8] {
            bytes(WireSize.varint(WireSize.zigzag(x))) { $0.writeVarint(WireSize.zigzag(x)) }
        }
        let diffA = zz(Int64(bitPattern: t1.rawValue &- r.entries[0].hlc.rawValue))
        let nodeA = bytes(16) { $0.writeNodeID(a) }
        var c = try live(7, nil, [], nil, nil).encoded()
        c[2] |= 8
        invalid("live-changes-against-stated-without-vectors", "liveChanges", c)
        invalid("live-changes-vector-key-out-of-range", "liveChanges", head + [1, 3] + diffA + zero)
        invalid("live-changes-vector-node-written-out", "liveChanges", head + [1, 2] + nodeA + diffA + zero)
        invalid("live-changes-vector-nodes-unsorted", "liveChanges", head + [2, 1] + zz(1) + [0] + diffA + zero)
        invalid("live-changes-vector-nodes-duplicate", "liveChanges", head + [2, 0] + diffA + [0] + zz(1) + zero)
        invalid(
            "live-changes-knowledge-entry-zero", "liveChanges",
            head + [1, 0] + zz(-Int64(bitPattern: r.entries[0].hlc.rawValue)) + zero)
        invalid("live-changes-vector-count-over-limit", "liveChanges", head + [0x81, 0x20] + zero)
        // The base follows the record count; written against the stated knowledge it is equal
        // to, it is one byte (no change). A change that restates an entry is not canonical.
        let withBase = try live(14, k, [omitted.digesting(item)], r, r).encoded()
        let q = p + kSize + 1
        invalid(
            "live-changes-base-restates-entry", "liveChanges",
            Array(withBase[..<q]) + [1, 1, 0] + Array(withBase[(q + 1)...]))
    }
}
