// WriterLogSamples: batches carrying a writer log section, for the message vectors and fuzz seeds.

package import ShoalWire

/// A `changes` batch of two records whose writer log section uses every entry kind, a key and a
/// seal (Spec/authenticated-writes.md §4), and its `live-changes` form. The digests, chain,
/// signature and key are patterns: the encoding is what these pin, not the cryptography.
package enum WriterLogSamples {
    package static let a = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)
    package static let b = NodeID(high: 0x0B0B_0000_0000_0002, low: 0x2222_2222_2222_2222)
    package static let incarnation = NodeID(high: 0x1AC0_0000_0000_0001, low: 0x2)
    /// The zone the batches are in (the one `live-changes` vectors decode in).
    package static let zone = RecordZone.ID(name: "notes")
    package static let token = ChangeToken(
        ChangeToken.Contents(
            kind: .zone, incarnation: incarnation, vector: VersionVector(),
            cursor: .init(source: a, sequence: 40)))
    /// The token of the batch before, which the `live-changes` form's token is a change to.
    package static let previousToken = ChangeToken(
        ChangeToken.Contents(
            kind: .zone, incarnation: incarnation, vector: VersionVector(),
            cursor: .init(source: a, sequence: 39)))
    package static let seal = WriterLogSection.Seal(
        chain: (0..<32).map { UInt8($0) }, signature: (0..<64).map { UInt8(0xC0 &+ $0) })

    /// The batch's two records (NotesCorpus, moved into ``zone`` without references).
    package static var records: [Record] {
        NotesCorpus.records(count: 2, seed: 41).map { r in
            Record(
                recordType: r.recordType, id: Record.ID(name: r.id.name, zone: zone), parent: nil, creation: r.creation,
                versionVector: r.versionVector, heads: r.heads,
                fields: r.fields.filter { $0.value?.kind != .reference }, extensions: r.extensions)
        }
    }

    static func digest(_ n: UInt8) -> [UInt8] { (0..<16).map { UInt8(truncatingIfNeeded: Int($0) &* 7) ^ n } }

    /// Writer `a`'s range from 1 with a key and a seal: implied, implied at a dot, partial and
    /// whole entries; writer `b`'s range from 9: one whole deletion, unsealed.
    package static var section: WriterLogSection {
        let t = HLC(milliseconds: 1_790_000_000_000, logical: 0), t2 = HLC(milliseconds: 1_790_000_000_500, logical: 1)
        let key = (0..<91).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ 0x30) }
        let slots = [WriteEntry.Slot(name: "", digest: digest(1)), WriteEntry.Slot(name: "title", digest: digest(2))]
        return WriterLogSection(ranges: [
            .init(
                writer: a, publicKey: key, firstSequence: 1,
                items: [
                    .implied(record: 0), .impliedAt(record: 1, hlc: t),
                    .partial(record: 1, hlc: t2, missing: [.init(name: "text", digest: digest(3))]),
                    .whole(
                        WriteEntry(
                            sequence: 4, hlc: HLC(milliseconds: 1_790_000_000_600, logical: 0), isCreation: true,
                            record: "draft", slots: slots))
                ],
                seal: seal),
            .init(
                writer: b, firstSequence: 9,
                items: [.whole(WriteEntry(sequence: 9, hlc: t, isDeletion: true, record: "gone", slots: []))])
        ])
    }

    /// Batch 3 of a subscription, with ``records`` and ``section``.
    package static var changes: ChangesMessage {
        ChangesMessage(
            zone: zone, incarnation: incarnation, batch: 3, isCaughtUp: false, token: token, records: records,
            writerLog: section)
    }

    /// ``changes`` as `live-changes` of subscription 2.
    package static var liveChanges: LiveChangesMessage? {
        LiveChangesMessage(changes, subscription: 2, previousToken: previousToken.bytes)
    }
}
