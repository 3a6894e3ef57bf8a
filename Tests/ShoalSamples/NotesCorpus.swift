// NotesCorpus: the deterministic notes-app records used by benchmarks, dictionary training and fuzz seeds.

package import ShoalWire

/// The benchmark corpus: records of a notes app, as in CloudKit tutorials.
///
/// Each `Note` has a title, a text body, a modified date, a version number, a tags list, a
/// reference to another note, an asset, a location, a small bytes value, a done flag and a score;
/// it is stamped as if saved on one of three nodes. The same seed always yields the same records.
package enum NotesCorpus {
    /// The zone the notes live in.
    package static let zone = RecordZone.ID(name: "notes")

    /// The three nodes the corpus pretends wrote the records.
    package static let nodes: [NodeID] = [
        NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111),
        NodeID(high: 0x0B0B_0000_0000_0002, low: 0x2222_2222_2222_2222),
        NodeID(high: 0x0CA7_0000_0000_0003, low: 0x3333_3333_3333_3333)
    ]

    static let words = [
        "the", "quick", "sync", "record", "zone", "peer", "field", "merge", "offline", "note",
        "draft", "meeting", "lab", "shop", "floor", "home", "list", "buy", "milk", "call",
        "review", "ship", "plan", "idea", "today", "tomorrow", "project", "shoal", "fish", "river",
        "green", "blue", "fast", "slow", "remember", "garden", "kitchen", "school", "music", "book"
    ]

    static let tagWords = ["work", "home", "urgent", "later", "ideas", "travel", "family", "reading"]

    /// `count` notes from `seed`.
    package static func records(count: Int, seed: UInt64 = 1) -> [Record] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { note(index: $0, count: count, using: &rng) }
    }

    /// Six random words, as the sync benchmark's `text` field.
    package static func sentence(words n: Int, using rng: inout some RandomNumberGenerator) -> String {
        (0..<n).map { _ in words[Int(rng.next() % UInt64(words.count))] }.joined(separator: " ")
    }

    /// One note.
    package static func note(index: Int, count: Int, using rng: inout some RandomNumberGenerator) -> Record {
        let base: UInt64 = 1_795_000_000_000  // late 2026, in milliseconds
        var r = Record(recordType: "Note", id: Record.ID(name: "note-\(index)", zone: zone))
        r["title"] = .string(titleCase(sentence(words: 2 + Int(rng.next() % 4), using: &rng)))
        r["text"] = .string(sentence(words: 10 + Int(rng.next() % 40), using: &rng))
        let modified = base + rng.next() % 30_000_000_000
        r["modified"] = .date(Timestamp(millisecondsSince1970: Int64(modified)))
        r["version"] = .int64(Int64(rng.next() % 50))
        r["tags"] = .list(
            .string((0..<Int(rng.next() % 4)).map { _ in tagWords[Int(rng.next() % UInt64(tagWords.count))] }))
        r["done"] = .bool(rng.next() % 3 == 0)
        r["score"] = .double(Double(rng.next() % 10_000) / 100)
        if count > 1 && rng.next() % 2 == 0 {
            let target = Int(rng.next() % UInt64(count))
            r["folder"] = .reference(
                Reference(
                    recordID: Record.ID(name: "note-\(target)", zone: zone),
                    action: rng.next() % 4 == 0 ? .deleteSelf : .none))
        }
        if rng.next() % 3 == 0 {
            let h = ContentHash(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            if let h { r["attachment"] = .asset(Asset(hash: h, size: Int64(rng.next() % 5_000_000))) }
        }
        if rng.next() % 2 == 0 {
            r["place"] = .location(
                Location(
                    latitude: 40 + Double(rng.next() % 1_000_000) / 100_000,
                    longitude: -74 + Double(rng.next() % 1_000_000) / 100_000,
                    horizontalAccuracy: 5,
                    timestamp: Timestamp(millisecondsSince1970: Int64(modified))))
        }
        r["color"] = .bytes((0..<4).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        let writer = nodes[Int(rng.next() % 3)]
        let hlc = HLC(milliseconds: modified, logical: UInt16(rng.next() % 4))
        return Stamping.saved(r, by: writer, at: hlc)
    }
}

/// Stamps records as a store would on save; used by corpora and tests that need saved records.
package enum Stamping {
    /// `record` as if saved once by `node` at `hlc`: every field stamped, one live head.
    package static func saved(_ record: Record, by node: NodeID, at hlc: HLC) -> Record {
        let dot = Dot(node: node, hlc: hlc)
        var vv = record.versionVector
        vv.advance(node, to: hlc)
        let fields = record.fields.map { Record.Field(name: $0.name, value: $0.value, stamp: $0.stamp ?? dot) }
        return Record(
            recordType: record.recordType, id: record.id, parent: record.parent,
            creation: record.creation ?? dot, versionVector: vv,
            heads: [Record.Head(node: node, isDeletion: false)], fields: fields, extensions: record.extensions)
    }
}

extension NotesCorpus {
    static func titleCase(_ s: String) -> String {
        guard let f = s.first else { return s }
        return f.uppercased() + s.dropFirst()
    }
}
