// DiffBenchmark+FieldDelta: the `field-delta-…-1mib` cases — what a sender computes to send a
// one-character edit of a 1 MiB text field as a delta slot, and what the receiver does to apply it.

import ShoalDiff
import ShoalSamples
import ShoalWire

extension DiffBenchmark {
    /// A record with a 1 MiB text field (ASCII lines of 4 to 15 words) saved by one node, the
    /// version after another node changed one character in the middle of it, and the sparse
    /// record of that version relative to the first one's vector (what replication serves a
    /// subscriber holding the first version).
    struct FieldDeltaInputs {
        static let fieldBytes = 1 << 20
        /// Operations per timed iteration (each takes about a millisecond or less).
        static let opsPerIteration = 20

        /// The version the receiver holds, and the sender's version before its edit.
        let previous: Record
        /// The sender's version's vector base: the previous version's vector.
        let knowledge: VersionVector
        /// The sparse record of the edited version, its field whole (before `encodeEdits`).
        let sparse: SparseRecord
        /// The same after `encodeEdits`: its field a delta slot.
        let encoded: SparseRecord
        /// What `encoded` adds to a batch.
        let sparseBytes: Int

        init() throws {
            var rng = SplitMix64(seed: 0x1_000_000)
            var text = [UInt8]()
            text.reserveCapacity(Self.fieldBytes + 128)
            while text.count < Self.fieldBytes {
                text += NotesCorpus.sentence(words: 4 + Int(rng.next() % 12), using: &rng).utf8
                text.append(UInt8(ascii: "\n"))
            }
            text.removeLast(text.count - Self.fieldBytes)
            var r = Record(recordType: "Document", id: Record.ID(name: "document-1", zone: zone))
            r["title"] = .string("A long document")
            r["body"] = .string(String(decoding: text, as: UTF8.self))
            previous = Stamping.saved(r, by: writer, at: savedAt)
            text[text.count / 2] = text[text.count / 2] == UInt8(ascii: "x") ? UInt8(ascii: "y") : UInt8(ascii: "x")
            let next = savedEdit(
                previous, "body", .string(String(decoding: text, as: UTF8.self)),
                by: editor, at: HLC(milliseconds: 1_795_000_100_000, logical: 0))
            let k = previous.versionVector
            knowledge = k
            guard let s = SparseRecord(next, base: k) else {
                throw BenchmarkError("the edited 1 MiB record has no sparse form")
            }
            sparse = s
            var e = s
            try check(
                e.encodeEdits(against: previous, base: k) == 1 && e.fields.isEmpty,
                "the 1 MiB edit did not become one delta slot: \(e.deltas)")
            encoded = e
            try check(
                Record(expanding: e, base: k, onto: previous)?.encoded() == next.encoded(),
                "the 1 MiB delta slot does not rebuild the edited version")
            func batch(_ items: [SparseRecord]) -> Int {
                ChangesMessage(
                    zone: zone, incarnation: writer, batch: 1, isCaughtUp: false, token: ChangeToken(bytes: []),
                    records: [], sparseRecords: items, base: k
                ).encoded().count
            }
            sparseBytes = batch([e]) - batch([])
        }
    }

    /// The sender's work: the sparse record's field compared with the previous version's, and
    /// made a delta slot.
    @inline(never) static func encodeEditsOp(_ sparse: SparseRecord, _ previous: Record, _ knowledge: VersionVector)
        -> Int
    {
        var s = sparse
        return s.encodeEdits(against: previous, base: knowledge) &+ s.deltas.count
    }

    /// The receiver's work: the version rebuilt from its own copy, the delta slot's base checked
    /// by its CRC-32C and patched.
    @inline(never) static func expandOp(_ sparse: SparseRecord, _ knowledge: VersionVector, _ local: Record) throws
        -> Int
    {
        guard let r = Record(expanding: sparse, base: knowledge, onto: local) else {
            throw BenchmarkError("the 1 MiB delta slot was refused")
        }
        return r.fields.count
    }
}
