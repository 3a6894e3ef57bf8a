// VectorJSON+WriterLog: the JSON form of a batch's writer log section (Spec/authenticated-writes.md §4).

package import ShoalWire

extension VectorJSON {
    /// `{ranges: [{writer, public_key?, first_sequence, items, seal?}]}`; each item is
    /// `{kind: "implied", record}`, `{kind: "implied_at", record, hlc}`,
    /// `{kind: "partial", record, hlc, missing: [slot]}` or `{kind: "whole", entry}`, a slot is
    /// `{name, digest}`, a seal `{chain, signature}` (hex), and timestamps are decimal strings.
    package static func writerLog(_ s: WriterLogSection) -> [String: Any] {
        [
            "ranges": s.ranges.map { r -> [String: Any] in
                var o: [String: Any] = [
                    "writer": node(r.writer), "first_sequence": String(r.firstSequence), "items": r.items.map(item)
                ]
                if let k = r.publicKey { o["public_key"] = hex(k) }
                if let seal = r.seal { o["seal"] = ["chain": hex(seal.chain), "signature": hex(seal.signature)] }
                return o
            }
        ]
    }

    static func item(_ i: WriterLogSection.Item) -> [String: Any] {
        switch i {
        case .implied(let r): return ["kind": "implied", "record": String(r)]
        case .impliedAt(let r, let h): return ["kind": "implied_at", "record": String(r), "hlc": String(h.rawValue)]
        case .partial(let r, let h, let missing):
            return ["kind": "partial", "record": String(r), "hlc": String(h.rawValue), "missing": missing.map(slot)]
        case .whole(let e): return ["kind": "whole", "entry": writeEntry(e)]
        }
    }

    static func slot(_ s: WriteEntry.Slot) -> [String: Any] { ["name": s.name, "digest": hex(s.digest)] }

    /// `{sequence, hlc, deletion, creation, record, slots}`.
    package static func writeEntry(_ e: WriteEntry) -> [String: Any] {
        [
            "sequence": String(e.sequence), "hlc": String(e.hlc.rawValue), "deletion": e.isDeletion,
            "creation": e.isCreation,
            "record": e.record, "slots": e.slots.map(slot)
        ]
    }

    /// The section `any` describes (the form of ``writerLog(_:)``).
    package static func writerLog(_ any: Any?) throws -> WriterLogSection {
        let o = try object(any, "writer_log")
        let ranges = try array(o["ranges"], "writer_log.ranges").map { any -> WriterLogSection.Range in
            let r = try object(any, "writer_log range")
            var seal: WriterLogSection.Seal? = nil
            if let s = optional(r["seal"]) {
                let so = try object(s, "seal")
                seal = .init(
                    chain: try bytes(so["chain"], "seal.chain"), signature: try bytes(so["signature"], "seal.signature")
                )
            }
            return WriterLogSection.Range(
                writer: try node(r["writer"], "writer"),
                publicKey: try optional(r["public_key"]).map { try bytes($0, "public_key") },
                firstSequence: try uint64(r["first_sequence"], "first_sequence"),
                items: try array(r["items"], "items").map(item), seal: seal)
        }
        var section = WriterLogSection(ranges: [])
        section.ranges = ranges  // as given: a vector may list writers out of order
        return section
    }

    static func item(_ any: Any) throws -> WriterLogSection.Item {
        let o = try object(any, "writer_log item")
        let record = { () throws -> Int in try count(o["record"], "item.record") }
        switch try string(o["kind"], "item.kind") {
        case "implied": return .implied(record: try record())
        case "implied_at": return .impliedAt(record: try record(), hlc: HLC(rawValue: try uint64(o["hlc"], "item.hlc")))
        case "partial":
            return .partial(
                record: try record(), hlc: HLC(rawValue: try uint64(o["hlc"], "item.hlc")),
                missing: try array(o["missing"], "item.missing").map(slot))
        case "whole": return .whole(try writeEntry(o["entry"]))
        case let k: throw VectorJSONError("unknown writer_log item kind \(k)")
        }
    }

    static func slot(_ any: Any) throws -> WriteEntry.Slot {
        let o = try object(any, "slot")
        return WriteEntry.Slot(name: try string(o["name"], "slot.name"), digest: try bytes(o["digest"], "slot.digest"))
    }

    /// The entry `any` describes (the form of ``writeEntry(_:)``).
    package static func writeEntry(_ any: Any?) throws -> WriteEntry {
        let o = try object(any, "entry")
        var e = WriteEntry(
            sequence: try uint64(o["sequence"], "entry.sequence"),
            hlc: HLC(rawValue: try uint64(o["hlc"], "entry.hlc")),
            isDeletion: try bool(o["deletion"], "entry.deletion"),
            isCreation: try bool(o["creation"], "entry.creation"),
            record: try string(o["record"], "entry.record"), slots: [])
        e.slots = try array(o["slots"], "entry.slots").map(slot)  // as given
        return e
    }
}
