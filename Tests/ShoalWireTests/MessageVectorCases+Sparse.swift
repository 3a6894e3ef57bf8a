// MessageVectorCases+Sparse: messages.json cases for the rules of the changes message, its tokens
// and its sparse section (Spec/replication.md §3.4–§3.5.1), one vector per rule.

import Foundation
import Testing
import ShoalSamples
@testable import ShoalWire
import ShoalWireJSON

/// Hand-assembled pieces of `changes` and `subscribe` payloads, for inputs no encoder writes.
enum SparseWire {
    static let a = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)
    static let b = NodeID(high: 0x0B0B_0000_0000_0002, low: 0x2222_2222_2222_2222)
    static let c = NodeID(high: 0x0C0C_0000_0000_0003, low: 0x3333_3333_3333_3333)
    static let inc = NodeID(high: 0x1AC0_0000_0000_0001, low: 0x2)
    static let zone = RecordZone.ID(name: "notes")
    static let t0 = HLC(milliseconds: 1_790_000_000_000, logical: 0)
    static let t1 = HLC(milliseconds: 1_790_000_000_250, logical: 3)
    /// Below the base's entry for `b`: a head the subscriber may already hold.
    static let tOld = HLC(milliseconds: 1_789_999_999_000, logical: 1)
    static let base = VersionVector([(a, t0), (b, t0)])
    static let token = ChangeToken(bytes: [0x01])

    static func varint(_ v: UInt64) -> [UInt8] {
        var v = v, out = [UInt8]()
        while v >= 0x80 { out.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
        return out + [UInt8(v)]
    }

    static func zigzag(_ v: Int64) -> [UInt8] { varint(WireSize.zigzag(v)) }
    static func bytes(_ b: [UInt8]) -> [UInt8] { varint(UInt64(b.count)) + b }
    static func str(_ s: String) -> [UInt8] { bytes(Array(s.utf8)) }
    static func node(_ n: NodeID) -> [UInt8] { Hex.bytes(n.hex) ?? [] }

    static func plainVector(_ v: VersionVector) -> [UInt8] {
        varint(UInt64(v.count))
            + v.entries.flatMap { node($0.node) + withUnsafeBytes(of: $0.hlc.rawValue.littleEndian, Array.init) }
    }

    /// An entry's timestamp difference from the base, as the section writes it.
    static func delta(_ t: HLC, _ n: NodeID = a) -> [UInt8] {
        zigzag(Int64(bitPattern: t.rawValue &- base[n].rawValue))
    }

    /// The `changes` payload before its record count, with the sparse flag set.
    static func header(token: [UInt8] = [0x01]) -> [UInt8] {
        var out = ChangesMessage(
            zone: zone, incarnation: inc, batch: 3, isCaughtUp: false, token: ChangeToken(bytes: token), records: []
        ).encoded()
        out.removeLast()  // the record count
        out[WireSize.zoneID(zone) + 16 + 1] |= 4
        return out
    }

    /// A changes payload with no whole records and the given section.
    static func payload(_ section: [UInt8]) -> [UInt8] { header() + [0] + section }

    static func table(_ entries: [String]) -> [UInt8] { varint(UInt64(entries.count)) + entries.flatMap(str) }

    /// A sparse section; each table is given by its entries or, to break a table rule, as raw bytes.
    static func section(
        base: [UInt8] = plainVector(base), nodes: [NodeID] = [a], nodeTable: [UInt8]? = nil,
        types: [String] = ["Note"], typeTable: [UInt8]? = nil, names: [String] = ["text"], nameTable: [UInt8]? = nil,
        count: UInt64? = nil, items: [[UInt8]]
    ) -> [UInt8] {
        base + (nodeTable ?? varint(UInt64(nodes.count)) + nodes.flatMap(node))
            + (typeTable ?? table(types)) + (nameTable ?? table(names))
            + varint(count ?? UInt64(items.count)) + items.flatMap { $0 }
    }

    /// One entry, for `a` at `t1`.
    static let oneEntry: [UInt8] = [1, 0] + delta(t1)
    /// Two entries, `a` at `t1` and `b` at `tOld` (node table `[a, b]`).
    static let twoEntries: [UInt8] = [2, 0] + delta(t1) + [1] + delta(tOld, b)
    /// Both entries are save heads.
    static let twoHeads: [UInt8] = [2, 0, 1, 1, 1]
    /// One field: name 0, a string, default stamp.
    static let oneField: [UInt8] = [1, 0, 1] + str("v")

    /// The digest the items' builders write by default: 8 zero bytes.
    static let zeroDigest: [UInt8] = Array(repeating: 0, count: 8)

    /// A fixed64 as the section writes it, little-endian.
    static func fixed64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }

    /// 64-bit FNV-1a of `bytes`, written out to check what ``SparseRecord/OmittedDigest`` feeds it.
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        bytes.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
    }

    /// A dot as the digest feeds it: the node ID's two 64-bit halves, then the timestamp, each
    /// as 8 bytes little-endian.
    static func digestWords(_ d: Dot) -> [UInt8] {
        fixed64(d.node.high) + fixed64(d.node.low) + fixed64(d.hlc.rawValue)
    }

    /// An item: flags, name (shared prefix, suffix), type index, [parent], entries, [heads],
    /// digest, fields, [extensions]; the parts are given as bytes.
    static func item(
        flags: UInt8 = 0, shared: UInt64 = 0, suffix: [UInt8], type: UInt64 = 0, parent: [UInt8] = [],
        entries: [UInt8] = oneEntry, heads: [UInt8] = [], digest: [UInt8] = zeroDigest, fields: [UInt8] = oneField,
        extensions: [UInt8] = []
    ) -> [UInt8] {
        [flags] + varint(shared) + bytes(suffix) + varint(type) + parent + entries + heads + digest + fields
            + extensions
    }

    static func item(
        _ name: String, flags: UInt8 = 0, shared: UInt64 = 0, type: UInt64 = 0, parent: [UInt8] = [],
        entries: [UInt8] = oneEntry, heads: [UInt8] = [], digest: [UInt8] = zeroDigest, fields: [UInt8] = oneField,
        extensions: [UInt8] = []
    ) -> [UInt8] {
        item(
            flags: flags, shared: shared, suffix: Array(name.utf8), type: type, parent: parent, entries: entries,
            heads: heads,
            digest: digest, fields: fields, extensions: extensions)
    }

    /// A sparse record as most live updates look: one writer, one field.
    static func record(_ name: String, node n: NodeID = a, at t: HLC = t1, fields: [Record.Field]? = nil)
        -> SparseRecord
    {
        SparseRecord(
            id: Record.ID(name: name, zone: zone), recordType: "Note", entries: VersionVector([(n, t)]),
            heads: [Record.Head(node: n, isDeletion: false)],
            fields: fields ?? [Record.Field(name: "text", value: .string("v"), stamp: Dot(node: n, hlc: t))])
    }

    static func message(_ items: [SparseRecord], records: [Record] = [], base: VersionVector = base) -> ChangesMessage {
        ChangesMessage(
            zone: zone, incarnation: inc, batch: 3, isCaughtUp: false, token: token, records: records,
            sparseRecords: items, base: base)
    }

    /// Whether the encoder splits `name` from `previous` inside a character: the first byte after
    /// the shared prefix is a UTF-8 continuation byte.
    static func splitsMidCharacter(_ previous: String, _ name: String) -> Bool {
        let shared = SparseSection.sharedPrefix(previous, name)
        let rest = Array(name.utf8.dropFirst(shared))
        return shared > 0 && (rest.first.map { $0 & 0xC0 == 0x80 } ?? false)
    }
}

extension MessageVectorTests {
    /// Cases for every check of the changes decoder that no other vector shows (Spec/replication.md
    /// §3.5 and §3.5.1, the token rule of §3.4). `invalid` cases are first checked for their code.
    func sparseRuleVectors(
        valid: (String, String, [UInt8]) throws -> Void,
        sparse: (String, String, [UInt8], [SparseOmission]) throws -> Void,
        invalid: (String, String, [UInt8]) -> Void
    ) throws {
        typealias W = SparseWire
        /// A batch of one-field records by A, created a second apart, each leaving out its creation and title.
        func oneFieldRecords(_ name: String, _ names: [String]) throws {
            let omitted = names.indices.map { SparseOmission.created(by: W.a, UInt64($0)) }
            try sparse(
                name, "changes", W.message(zip(names, omitted).map { $1.digesting(W.record($0)) }).encoded(), omitted)
        }
        func reject(_ name: String, _ code: String, _ bytes: [UInt8], kind: String = "changes", at offset: Int? = nil) {
            switch Result(catching: { try VectorJSON.message(kind, bytes) }) {
            case .success:
                Issue.record("\(name) decoded; expected \(code)")
            case .failure(let error):
                if (error as? WireError)?.code.name != code { Issue.record("\(name): expected \(code), got \(error)") }
                if let offset, (error as? WireError)?.offset != offset {
                    Issue.record("\(name): expected offset \(offset), got \(error)")
                }
            }
            invalid(name, kind, bytes)
        }
        // The builder writes what the encoder writes, for the one-entry and the two-entry shapes.
        #expect(W.payload(W.section(items: [W.item("item-1200")])) == W.message([W.record("item-1200")]).encoded())
        var twoWriters = W.record("item-1400")
        twoWriters.entries = VersionVector([(W.a, W.t1), (W.b, W.tOld)])
        twoWriters.heads = [Record.Head(node: W.a, isDeletion: false), Record.Head(node: W.b, isDeletion: false)]
        twoWriters.fields = [Record.Field(name: "text", value: .string("v"), stamp: Dot(node: W.a, hlc: W.t1))]
        #expect(
            W.payload(
                W.section(
                    nodes: [W.a, W.b],
                    items: [
                        W.item(
                            "item-1400", flags: 6, entries: W.twoEntries, heads: W.twoHeads,
                            fields: [1, 0, 1, 0, 0] + W.str("v"))
                    ]))
                == W.message([twoWriters]).encoded())

        // Names are split on bytes: the shared prefix may end inside a character, and a suffix
        // alone need not be valid UTF-8; only the joined name must be.
        let cjk = ["日記/本", "日記/札", "日記/東京", "일기-가", "일기-각"]
        let emoji = ["🐟", "🐠", "🐠🐡", "🐡", "👩‍💻", "👩‍🔬"]
        let accented = ["café", "cafè", "cafe\u{301}"]
        for names in [cjk, emoji, accented] {
            #expect(
                zip(names, names.dropFirst()).contains { W.splitsMidCharacter($0, $1) },
                "\(names) never splits inside a character")
        }
        try oneFieldRecords("changes-sparse-cjk-names-split-mid-character", cjk)
        try oneFieldRecords("changes-sparse-emoji-names-split-mid-character", emoji)
        try oneFieldRecords("changes-sparse-accented-names-split-mid-character", accented)
        // "日記/" then E6 9C (two bytes of 本) then "x": the joined name is not UTF-8.
        reject(
            "changes-sparse-joined-name-invalid-utf8", "invalid_utf8",
            W.payload(W.section(items: [W.item("日記/本"), W.item("x", shared: 9)])))
        // A prefix that stops at a character boundary is not maximal when the next byte is shared.
        reject(
            "changes-sparse-prefix-stops-at-character-boundary", "invalid_value",
            W.payload(W.section(items: [W.item("fish 🐟"), W.item("🐠", shared: 5)])))
        reject("changes-sparse-empty-name", "invalid_name", W.payload(W.section(items: [W.item("")])))
        reject(
            "changes-sparse-joined-name-over-limit", "limit_exceeded",
            W.payload(W.section(items: [W.item(String(repeating: "n", count: 255)), W.item("o", shared: 255)])))
        reject(
            "changes-sparse-name-suffix-over-limit", "limit_exceeded",
            W.payload(W.section(items: [W.item(String(repeating: "n", count: 256))])))

        // Items are in the sender's order, not sorted by name; a decoder accepts any order.
        try oneFieldRecords("changes-sparse-names-in-sender-order", ["item-20", "item-3", "Item-1"])
        // Whole records and sparse records in one batch; each list has its own count.
        let whole = Record(
            recordType: "Note", id: Record.ID(name: "item-1", zone: W.zone), parent: nil,
            creation: Dot(node: W.b, hlc: W.t0), versionVector: VersionVector([(W.b, W.t1)]),
            heads: [Record.Head(node: W.b, isDeletion: false)],
            fields: [Record.Field(name: "text", value: .string("whole"), stamp: Dot(node: W.b, hlc: W.t1))],
            extensions: [])
        let createdByA = SparseOmission.created(by: W.a)
        try sparse(
            "changes-whole-and-sparse-records", "changes",
            W.message([createdByA.digesting(W.record("item-2"))], records: [whole]).encoded(),
            [createdByA])

        // Entries: a head's entry travels even at or below the base (a negative difference); a
        // node the base lacks counts from zero; differences are taken modulo 2^64.
        // A created the record; A and B then set its title concurrently, below the base, and
        // both slots are left out, B's later one first.
        let concurrentTitles = SparseOmission(
            creation: createdByA.creation,
            slots: [
                .init(name: "title", stamp: Dot(node: W.b, hlc: W.tOld)),
                .init(name: "title", stamp: Dot(node: W.a, hlc: HLC(milliseconds: 1_789_999_995_000, logical: 0)))
            ])
        try sparse(
            "changes-sparse-head-entry-below-base", "changes",
            W.message([concurrentTitles.digesting(twoWriters)]).encoded(), [concurrentTitles])
        var concurrentDelete = twoWriters
        concurrentDelete.heads = [Record.Head(node: W.a, isDeletion: false), Record.Head(node: W.b, isDeletion: true)]
        try sparse(
            "changes-sparse-save-and-delete-heads", "changes",
            W.message([createdByA.digesting(concurrentDelete)]).encoded(), [createdByA])
        // C, which the base lacks, edited a record A created (A's entry is below the base).
        var byC = W.record("item-5", node: W.c)
        byC.entries = VersionVector([(W.a, W.tOld), (W.c, W.t1)])
        let createdAtTOld = SparseOmission(
            creation: Dot(node: W.a, hlc: W.tOld), slots: [.init(name: "title", stamp: Dot(node: W.a, hlc: W.tOld))])
        try sparse(
            "changes-sparse-entry-for-node-not-in-base", "changes", W.message([createdAtTOld.digesting(byC)]).encoded(),
            [createdAtTOld])
        try sparse(
            "changes-sparse-entry-difference-wraps", "changes",
            W.message([createdByA.digesting(W.record("item-6", at: HLC(rawValue: 0xFFFF_FFFF_FFFF_0001)))]).encoded(),
            [createdByA])
        // One entry with a stamp below it: stamps are written (bit 2) although there is one entry.
        let earlier = HLC(rawValue: W.t1.rawValue - 5)
        try sparse(
            "changes-sparse-one-entry-older-stamp", "changes",
            W.message([
                createdByA.digesting(
                    W.record(
                        "item-7",
                        fields: [
                            Record.Field(name: "gone", value: nil, stamp: Dot(node: W.a, hlc: W.t1)),
                            Record.Field(name: "text", value: .string("v"), stamp: Dot(node: W.a, hlc: earlier))
                        ]))
            ]).encoded(), [createdByA])
        // No fields (every slot is covered by the base; A's write above it changed no field):
        // the field-name table is empty, and every slot is left out.
        let everySlot = SparseOmission.created(by: W.a, slots: ["text", "title"])
        try sparse(
            "changes-sparse-no-fields", "changes",
            W.message([everySlot.digesting(W.record("item-8", fields: []))]).encoded(), [everySlot])
        // The digest of what the item leaves out, a fixed64 after the heads (little-endian): here
        // the creation (A at tOld, which the base covers) and one omitted slot, `title` by A at tOld.
        let creation = Dot(node: W.a, hlc: W.tOld)
        let omitted = Record.Field(name: "title", value: .string("Groceries"), stamp: creation)
        var omittedDigest = SparseRecord.OmittedDigest(creation: creation)
        omittedDigest.add(omitted)
        #expect(
            omittedDigest.value
                == W.fnv1a(W.digestWords(creation) + W.fixed64(5) + Array("title".utf8) + W.digestWords(creation)))
        var digested = W.record("item-10")
        digested.digest = omittedDigest.value
        #expect(
            W.payload(W.section(items: [W.item("item-10", digest: W.fixed64(omittedDigest.value))]))
                == W.message([digested]).encoded())
        let creationAndTitle = SparseOmission(creation: creation, slots: [.init(name: omitted.name, stamp: creation)])
        #expect(creationAndTitle.digest == omittedDigest.value)
        try sparse(
            "changes-sparse-digest-of-creation-and-one-slot", "changes", W.message([digested]).encoded(),
            [creationAndTitle])
        // Concurrent slots travel together: the name index repeats, stamps follow (bit 2), the
        // later stamp first. B's entry lies above the base, below A's.
        let tB = HLC(milliseconds: 1_790_000_000_200, logical: 0)
        var concurrent = W.record("item-11")
        concurrent.entries = VersionVector([(W.a, W.t1), (W.b, tB)])
        concurrent.heads = [Record.Head(node: W.a, isDeletion: false), Record.Head(node: W.b, isDeletion: false)]
        concurrent.fields = [
            Record.Field(name: "text", value: .string("mine"), stamp: Dot(node: W.a, hlc: W.t1)),
            Record.Field(name: "text", value: .string("theirs"), stamp: Dot(node: W.b, hlc: tB))
        ]
        concurrent.digest = SparseRecord.OmittedDigest(creation: creation).value
        #expect(
            W.payload(
                W.section(
                    nodes: [W.a, W.b],
                    items: [
                        W.item(
                            "item-11", flags: 6, entries: [2, 0] + W.delta(W.t1) + [1] + W.delta(tB, W.b),
                            heads: W.twoHeads,
                            digest: W.fixed64(concurrent.digest),
                            fields: [2, 0, 1, 0, 0] + W.str("mine") + [0, 1, 1, 0] + W.str("theirs"))
                    ]))
                == W.message([concurrent]).encoded())
        try sparse(
            "changes-sparse-concurrent-slots", "changes", W.message([concurrent]).encoded(),
            [SparseOmission(creation: creation, slots: [])])
        var extended = W.record("item-9")
        extended.extensions = [Record.Extension(tag: 1, bytes: [0xCA, 0xFE])]
        try sparse(
            "changes-sparse-extensions", "changes", W.message([createdByA.digesting(extended)]).encoded(), [createdByA])

        // The section and its tables.
        reject("changes-sparse-flag-without-section", "truncated", W.header() + [0])
        reject(
            "changes-sparse-section-without-flag", "trailing_bytes",
            {
                var p = W.payload(W.section(items: [W.item("item-1200")]))
                p[WireSize.zoneID(W.zone) + 16 + 1] &= ~4
                return p
            }())
        reject(
            "changes-sparse-base-zero-entry", "invalid_value",
            W.payload(
                W.section(
                    base: W.varint(1) + W.node(W.a) + [UInt8](repeating: 0, count: 8), items: [W.item("item-1200")])))
        reject(
            "changes-sparse-empty-node-table", "invalid_value",
            W.payload(W.section(nodes: [], items: [W.item("item-1200")])))
        reject(
            "changes-sparse-node-table-over-limit", "limit_exceeded",
            W.payload(W.section(nodeTable: W.varint(4097), items: [W.item("item-1200")])))
        reject(
            "changes-sparse-node-table-truncated", "truncated",
            W.payload(W.section(nodeTable: W.varint(2) + W.node(W.a), types: [], names: [], items: [])))
        reject(
            "changes-sparse-duplicate-node", "duplicate",
            W.payload(W.section(nodes: [W.a, W.a], items: [W.item("item-1200")])))
        reject(
            "changes-sparse-unused-node", "invalid_value",
            W.payload(W.section(nodes: [W.a, W.b], items: [W.item("item-1200")])))
        reject(
            "changes-sparse-empty-type-table", "invalid_value",
            W.payload(W.section(types: [], items: [W.item("item-1200")])))
        reject(
            "changes-sparse-type-table-over-limit", "limit_exceeded",
            W.payload(W.section(typeTable: W.varint(65_537), items: [W.item("item-1200")])))
        reject(
            "changes-sparse-type-table-truncated", "truncated",
            W.payload(W.section(typeTable: W.varint(3), names: [], items: [])))
        reject(
            "changes-sparse-type-over-limit", "limit_exceeded",
            W.payload(W.section(types: [String(repeating: "N", count: 256)], items: [W.item("item-1200")])))
        reject(
            "changes-sparse-type-not-an-identifier", "invalid_name",
            W.payload(W.section(types: ["1Note"], items: [W.item("item-1200")])))
        reject(
            "changes-sparse-duplicate-type", "duplicate",
            W.payload(
                W.section(types: ["Note", "Note"], items: [W.item("item-1200"), W.item("300", shared: 6, type: 1)])))
        reject(
            "changes-sparse-unused-field-name", "invalid_value",
            W.payload(W.section(names: ["text", "title"], items: [W.item("item-1200")])))
        reject(
            "changes-sparse-item-count-over-limit", "limit_exceeded",
            W.payload(W.section(count: 65_537, items: [W.item("item-1200")])))
        // Ten items cannot fit in the bytes left (one item): `truncated` at the byte after the count.
        let oneItem = W.item("item-1200")
        let tooFew = W.payload(W.section(count: 10, items: [oneItem]))
        reject("changes-sparse-items-truncated", "truncated", tooFew, at: tooFew.count - oneItem.count)

        // Items.
        reject(
            "changes-sparse-type-index-outside-table", "invalid_value",
            W.payload(W.section(items: [W.item("item-1200", type: 1)])))
        reject(
            "changes-sparse-parent-repeats-zone", "invalid_value",
            W.payload(
                W.section(items: [
                    W.item(
                        "item-1200", flags: 1, parent: W.str("folder") + [2] + W.str("notes") + W.str("_defaultOwner"))
                ])))
        reject(
            "changes-sparse-no-entries", "invalid_value",
            W.payload(W.section(items: [W.item("item-1200", entries: [0])])))
        reject(
            "changes-sparse-entry-count-over-limit", "limit_exceeded",
            W.payload(W.section(items: [W.item("item-1200", entries: W.varint(4097))])))
        reject(
            "changes-sparse-entries-truncated", "truncated",
            W.payload(W.section(items: [W.item("item-1200", entries: W.varint(40))])))
        reject(
            "changes-sparse-duplicate-entry-node", "duplicate",
            W.payload(
                W.section(items: [
                    W.item(
                        "item-1200", flags: 6, entries: [2, 0] + W.delta(W.t1) + [0] + W.delta(W.t1), heads: W.twoHeads,
                        fields: [1, 0, 1, 0, 0] + W.str("v"))
                ])))
        reject(
            "changes-sparse-unsorted-entry-nodes", "unsorted",
            W.payload(
                W.section(
                    nodes: [W.a, W.b],
                    items: [
                        W.item(
                            "item-1200", flags: 6, entries: [2, 1] + W.delta(W.tOld, W.b) + [0] + W.delta(W.t1),
                            heads: W.twoHeads, fields: [1, 0, 1, 0, 0] + W.str("v"))
                    ])))
        reject(
            "changes-sparse-zero-entry", "invalid_value",
            W.payload(
                W.section(items: [W.item("item-1200", entries: [1, 0] + W.zigzag(-Int64(bitPattern: W.t0.rawValue)))])))
        reject(
            "changes-sparse-two-entries-without-heads", "invalid_value",
            W.payload(
                W.section(
                    nodes: [W.a, W.b],
                    items: [W.item("item-1200", flags: 4, entries: W.twoEntries, fields: [1, 0, 1, 0, 0] + W.str("v"))])
            ))
        reject(
            "changes-sparse-two-entries-without-stamps", "invalid_value",
            W.payload(
                W.section(
                    nodes: [W.a, W.b], items: [W.item("item-1200", flags: 2, entries: W.twoEntries, heads: W.twoHeads)])
            ))
        // The digest follows the heads and precedes the field count: an item ending 7 bytes into
        // it is `truncated` at its first byte. It is read before the stamps flag is checked against
        // the entry count, so two entries without bit 2 and a short digest are `truncated` too.
        let shortDigest = W.payload(
            W.section(items: [W.item("item-1200", digest: Array(W.zeroDigest.prefix(7)), fields: [])]))
        reject("changes-sparse-digest-truncated", "truncated", shortDigest, at: shortDigest.count - 7)
        let shortDigestNoStamps = W.payload(
            W.section(
                nodes: [W.a, W.b],
                items: [
                    W.item(
                        "item-1200", flags: 2, entries: W.twoEntries, heads: W.twoHeads,
                        digest: Array(W.zeroDigest.prefix(7)), fields: [])
                ]))
        reject(
            "changes-sparse-digest-truncated-before-stamps-flag", "truncated", shortDigestNoStamps,
            at: shortDigestNoStamps.count - 7)
        reject(
            "changes-sparse-heads-flag-without-heads", "invalid_value",
            W.payload(
                W.section(
                    nodes: [W.a, W.b],
                    items: [
                        W.item(
                            "item-1200", flags: 6, entries: W.twoEntries, heads: [0],
                            fields: [1, 0, 1, 0, 0] + W.str("v"))
                    ])))
        reject(
            "changes-sparse-more-heads-than-entries", "invalid_value",
            W.payload(W.section(items: [W.item("item-1200", flags: 2, heads: [2, 0, 1, 0, 1])])))
        reject(
            "changes-sparse-head-index-repeated", "invalid_value",
            W.payload(
                W.section(
                    nodes: [W.a, W.b],
                    items: [
                        W.item(
                            "item-1200", flags: 6, entries: W.twoEntries, heads: [2, 0, 1, 0, 1],
                            fields: [1, 0, 1, 0, 0] + W.str("v"))
                    ])))
        reject(
            "changes-sparse-head-index-outside-entries", "invalid_value",
            W.payload(
                W.section(
                    nodes: [W.a, W.b],
                    items: [
                        W.item(
                            "item-1200", flags: 6, entries: W.twoEntries, heads: [2, 0, 1, 2, 1],
                            fields: [1, 0, 1, 0, 0] + W.str("v"))
                    ])))
        reject(
            "changes-sparse-head-state-zero", "invalid_value",
            W.payload(
                W.section(
                    nodes: [W.a, W.b],
                    items: [
                        W.item(
                            "item-1200", flags: 6, entries: W.twoEntries, heads: [2, 0, 1, 1, 0],
                            fields: [1, 0, 1, 0, 0] + W.str("v"))
                    ])))
        reject(
            "changes-sparse-default-stamps-flagged", "invalid_value",
            W.payload(W.section(items: [W.item("item-1200", flags: 4, fields: [1, 0, 1, 0, 0] + W.str("v"))])))
        reject(
            "changes-sparse-default-stamps-flagged-no-fields", "invalid_value",
            W.payload(W.section(names: [], items: [W.item("item-1200", flags: 4, fields: [0])])))
        reject(
            "changes-sparse-stamp-index-outside-entries", "invalid_value",
            W.payload(W.section(items: [W.item("item-1200", flags: 4, fields: [1, 0, 1, 1, 0] + W.str("v"))])))
        reject(
            "changes-sparse-stamp-at-zero", "invalid_value",
            W.payload(
                W.section(items: [
                    W.item("item-1200", flags: 4, fields: [1, 0, 1, 0] + W.varint(W.t1.rawValue) + W.str("v"))
                ])))
        reject(
            "changes-sparse-field-count-over-limit", "limit_exceeded",
            W.payload(W.section(items: [W.item("item-1200", fields: W.varint(1025))])))
        reject(
            "changes-sparse-fields-truncated", "truncated",
            W.payload(W.section(items: [W.item("item-1200", fields: W.varint(40))])))
        // A repeated name index is a concurrent slot (wire-format §6.3), checked at the index once
        // the slot's tag and stamp are read: without the stamps flag both slots have the default
        // stamp, so they are equal.
        let repeatedDefault = [0, 1] + W.str("w")
        let duplicateName = W.payload(
            W.section(items: [W.item("item-1200", fields: [2, 0, 1] + W.str("v") + repeatedDefault)]))
        reject(
            "changes-sparse-duplicate-field-name", "duplicate", duplicateName,
            at: duplicateName.count - repeatedDefault.count)
        // With stamps (entries A at t1, B at tOld): B's slot, then A's later one.
        let laterSecond = [0, 1, 0, 0] + W.str("w")
        let earlierFirst = W.payload(
            W.section(
                nodes: [W.a, W.b],
                items: [
                    W.item(
                        "item-1200", flags: 6, entries: W.twoEntries, heads: W.twoHeads,
                        fields: [2, 0, 1, 1, 0] + W.str("v") + laterSecond)
                ]))
        reject(
            "changes-sparse-concurrent-slots-earlier-first", "unsorted", earlierFirst,
            at: earlierFirst.count - laterSecond.count)
        let equalStamps = W.payload(
            W.section(
                nodes: [W.a, W.b],
                items: [
                    W.item(
                        "item-1200", flags: 6, entries: W.twoEntries, heads: W.twoHeads,
                        fields: [2, 0, 1, 0, 0] + W.str("v") + laterSecond)
                ]))
        reject(
            "changes-sparse-concurrent-slots-equal-stamps", "duplicate", equalStamps,
            at: equalStamps.count - laterSecond.count)
        reject(
            "changes-sparse-field-name-outside-table", "invalid_value",
            W.payload(W.section(items: [W.item("item-1200", fields: [1, 1, 1] + W.str("v"))])))
        reject(
            "changes-sparse-field-tag-stamp-bit", "unknown_required_tag",
            W.payload(W.section(items: [W.item("item-1200", fields: [1, 0, 0x81] + W.str("v"))])))
        reject(
            "changes-sparse-field-tag-undefined", "unknown_required_tag",
            W.payload(W.section(items: [W.item("item-1200", fields: [1, 0, 0x0A] + W.str("v"))])))
        reject(
            "changes-sparse-extensions-flag-empty", "invalid_value",
            W.payload(W.section(items: [W.item("item-1200", flags: 8, extensions: [0])])))
        reject(
            "changes-sparse-required-extension", "unknown_required_tag",
            W.payload(W.section(items: [W.item("item-1200", flags: 8, extensions: [1, 2] + W.bytes([1]))])))

        // The changes message around the section: list limits and opaque tokens.
        let headerNoSparse: [UInt8] = {
            var h = W.header()
            h[WireSize.zoneID(W.zone) + 16 + 1] &= ~4
            return h
        }()
        reject("changes-record-count-over-limit", "limit_exceeded", headerNoSparse + W.varint(65_537))
        reject("changes-record-count-over-bytes", "truncated", headerNoSparse + W.varint(2))
        try valid(
            "changes-token-opaque-bytes", "changes",
            ChangesMessage(
                zone: W.zone, incarnation: W.inc, batch: 1, isCaughtUp: true,
                token: ChangeToken(bytes: [0xFF, 0x00, 0x53, 0x54]),
                records: []
            ).encoded())
        let flagsAt = WireSize.zoneID(W.zone) + 16 + 1
        reject(
            "changes-token-over-limit", "limit_exceeded",
            Array(headerNoSparse.prefix(flagsAt + 1)) + W.varint(4_194_305) + [0])
        try valid(
            "subscribe-token-opaque-bytes", "subscribe",
            SubscribeMessage(zone: W.zone, incarnation: W.inc, token: ChangeToken(bytes: [0xFF, 0x00, 0x53, 0x54]))
                .encoded())
        reject(
            "subscribe-token-over-limit", "limit_exceeded",
            Array(SubscribeMessage(zone: W.zone, incarnation: W.inc, token: nil).encoded().prefix(flagsAt - 1))
                + W.varint(4_194_305) + [0, 4],
            kind: "subscribe")
    }

    /// More heads than entries is a malformed item, not a configurable limit: `invalid_value` at
    /// the head count (the bound is the item's entry count, which no `WireLimits` setting raises).
    @Test func moreHeadsThanEntriesIsInvalidValue() {
        let bytes = SparseWire.payload(
            SparseWire.section(items: [SparseWire.item("item-1200", flags: 2, heads: [2, 0, 1, 0, 1])]))
        do {
            _ = try ChangesMessage(decoding: bytes)
            Issue.record("decoded")
        } catch {
            #expect(error.code == .invalidValue, "\(error)")
            #expect(error.offset == 139, "\(error)")
        }
    }

    /// Names built from multi-byte characters that share leading bytes: every split the encoder
    /// makes decodes to the same names, byte for byte, and encodes back to the same payload.
    @Test func multiByteSparseNamesRoundTrip() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5EA5_0001)
        var rng = SplitMix64(seed: seed)
        let pieces = ["日", "本", "札", "東", "가", "각", "🐟", "🐠", "👩‍💻", "é", "e\u{301}", "a", "-"]
        for i in 0..<200 {
            let names = (0..<(1 + Int(rng.next() % 12))).map { _ in
                (0..<(1 + Int(rng.next() % 5))).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }.joined()
            }
            let m = SparseWire.message(names.map { SparseWire.record($0) })
            let bytes = m.encoded()
            let back = try ChangesMessage(decoding: bytes)
            #expect(
                back.sparseRecords.map { Array($0.id.name.utf8) } == names.map { Array($0.utf8) },
                "seed \(seed) case \(i)")
            #expect(back.encoded() == bytes, "seed \(seed) case \(i)")
        }
    }
}
