// SparseOmission: what a sparse item of a messages.json vector leaves out, its `omitted` member
// (Spec/vectors/README.md, "Message vectors"), and the checks that it is what the item's digest covers.

import Foundation
@testable import ShoalWire
import ShoalWireJSON

/// The parts of a record version that a sparse item leaves out (Spec/replication.md §3.5.1): the
/// creation and each omitted slot's name and stamp. They are the inputs of the item's digest, and
/// not in the message, so a vector states them.
struct SparseOmission {
    struct Slot {
        var name: String
        var stamp: Dot
    }

    var creation: Dot
    /// In record order: by name bytes, concurrent slots the later stamp first.
    var slots: [Slot]

    /// The digest a sender computes for these parts.
    var digest: UInt64 {
        var d = SparseRecord.OmittedDigest(creation: creation)
        for s in slots { d.add(Record.Field(name: s.name, value: nil, stamp: s.stamp)) }
        return d.value
    }

    /// A record created by `node` `k` seconds after 1,789,999,990,000 ms (ten seconds before the
    /// vectors' base), each of `slots` set at the creation: what a record the base covers
    /// typically leaves out when one later write travels.
    static func created(by node: NodeID, _ k: UInt64 = 0, slots: [String] = ["title"]) -> SparseOmission {
        let creation = Dot(node: node, hlc: HLC(milliseconds: 1_789_999_990_000 + 1000 * k, logical: 0))
        return SparseOmission(creation: creation, slots: slots.map { Slot(name: $0, stamp: creation) })
    }

    /// `item` with the digest of these parts.
    func digesting(_ item: SparseRecord) -> SparseRecord {
        var item = item
        item.digest = digest
        return item
    }

    // MARK: JSON form

    /// `{"creation": dot, "slots": [{"name": string, "stamp": dot}, …]}`.
    var json: [String: Any] {
        [
            "creation": VectorJSON.dot(creation),
            "slots": slots.map { ["name": $0.name, "stamp": VectorJSON.dot($0.stamp)] as [String: Any] }
        ]
    }

    init(creation: Dot, slots: [Slot]) {
        self.creation = creation
        self.slots = slots
    }

    init(json any: Any?, _ what: String) throws {
        let o = try VectorJSON.object(any, what)
        guard let creation = try VectorJSON.dot(o["creation"], "\(what).creation") else {
            throw VectorJSONError("\(what).creation: a sparse item's record has a creation")
        }
        self.creation = creation
        slots = try VectorJSON.array(o["slots"], "\(what).slots").enumerated().map { i, s in
            let slot = try VectorJSON.object(s, "\(what).slots[\(i)]")
            guard let stamp = try VectorJSON.dot(slot["stamp"], "\(what).slots[\(i)].stamp") else {
                throw VectorJSONError("\(what).slots[\(i)].stamp: an omitted slot is stamped")
            }
            return Slot(name: try VectorJSON.string(slot["name"], "\(what).slots[\(i)].name"), stamp: stamp)
        }
    }

    // MARK: Checks

    /// What is wrong with the `omitted` member of a valid vector whose `json` is `message`: one
    /// entry per sparse item, each digesting to the item's digest and telling a story a sender
    /// could have: the base and the item's vector cover the creation and every omitted stamp, the
    /// item carries none of the omitted fields, and the slots are in record order. Empty when
    /// all holds (and when the message has no sparse items and no `omitted`).
    static func problems(message: [String: Any], omitted: Any?) throws -> [String] {
        let items = try VectorJSON.array(message["sparse_records"] ?? [Any](), "sparse_records").map {
            try VectorJSON.sparse($0)
        }
        let omitted = VectorJSON.optional(omitted)
        if items.isEmpty { return omitted == nil ? [] : ["an `omitted` member but no sparse items"] }
        guard let omitted else { return ["\(items.count) sparse items but no `omitted` member"] }
        let parts = try VectorJSON.array(omitted, "omitted").enumerated().map { i, o in
            try SparseOmission(json: o, "omitted[\(i)]")
        }
        guard parts.count == items.count else {
            return ["\(items.count) sparse items but \(parts.count) `omitted` entries"]
        }
        let base = try VectorJSON.vector(message["base"], "base")
        var problems = [String]()
        for (item, part) in zip(items, parts) {
            let name = item.id.name
            if part.digest != item.digest {
                problems.append(
                    "\(name): the omitted parts digest to \(hex(part.digest)), the item carries \(hex(item.digest))")
            }
            for dot in [part.creation] + part.slots.map(\.stamp) where !base.covers(dot) || !item.entries.covers(dot) {
                problems.append("\(name): \(dot) is omitted but not covered by both the base and the item's vector")
            }
            for s in part.slots
            where item.fields.contains(where: { UTF8Order.equal($0.name, s.name) })
                || item.deltas.contains(where: { UTF8Order.equal($0.name, s.name) })
            {
                problems.append("\(name): field \(s.name) is both carried and omitted")
            }
            for (x, y) in zip(part.slots, part.slots.dropFirst()) {
                let c = UTF8Order.compare(x.name, y.name)
                if c > 0 || c == 0 && !(y.stamp < x.stamp) {
                    problems.append(
                        "\(name): omitted slot \(y.name) \(y.stamp) follows \(x.name) \(x.stamp); record order is by name, the later stamp first"
                    )
                }
            }
        }
        return problems
    }

    private static func hex(_ v: UInt64) -> String { "0x" + Hex.string(v) }
}
