// MessageVectorCases+WriterLog: batches carrying a writer log section (Spec/authenticated-writes.md §4).

import Testing
import ShoalSamples
@testable import ShoalWire
import ShoalWireJSON

extension MessageVectorTests {
    /// A section exercising every entry kind, a key and a seal, in `changes` and `live-changes`;
    /// and its invalid forms.
    func writerLogVectors(valid: (String, String, [UInt8]) throws -> Void, invalid: (String, String, [UInt8]) -> Void)
        throws
    {
        let a = WriterLogSamples.a, b = WriterLogSamples.b
        let t = HLC(milliseconds: 1_790_000_000_000, logical: 0)
        let seal = WriterLogSamples.seal
        try valid("changes-with-writer-log", "changes", WriterLogSamples.changes.encoded())
        try valid("live-changes-with-writer-log", "liveChanges", try #require(WriterLogSamples.liveChanges).encoded())

        // Invalid forms, each a section after a batch of the two records.
        var plain = WriterLogSamples.changes
        plain.writerLog = nil
        let body = plain.encoded()
        let flagsAt = WireSize.zoneID(WriterLogSamples.zone) + 16 + 1
        func batch(_ section: [UInt8]) -> [UInt8] {
            var c = body
            c[flagsAt] |= 128
            return c + section
        }
        func one(_ range: WriterLogSection.Range) -> [UInt8] { WriterLogSection(ranges: [range]).encoded() }
        invalid("changes-writer-log-without-ranges", "changes", batch([0]))
        var unsorted = WriterLogSection(ranges: [])
        unsorted.ranges = [
            .init(writer: b, firstSequence: 1, items: [.implied(record: 0)]),
            .init(writer: a, firstSequence: 1, items: [.implied(record: 1)])
        ]
        invalid("writer-log-writers-unsorted", "changes", batch(unsorted.encoded()))
        var s = one(.init(writer: a, firstSequence: 1, items: [.implied(record: 0)]))
        s[17] = 4
        invalid("writer-log-reserved-range-flag", "changes", batch(s))
        s = one(.init(writer: a, firstSequence: 1, items: [.implied(record: 0)]))
        s[20] = 4
        invalid("writer-log-unknown-entry-kind", "changes", batch(s))
        invalid(
            "writer-log-record-index-outside-batch", "changes",
            batch(one(.init(writer: a, firstSequence: 1, items: [.implied(record: 2)]))))
        s = one(.init(writer: a, firstSequence: 1, items: [.implied(record: 0)]))
        s[18] = 0
        invalid("writer-log-first-sequence-zero", "changes", batch(s))
        invalid(
            "writer-log-whole-entry-out-of-place", "changes",
            batch(
                one(
                    .init(
                        writer: a, firstSequence: 1,
                        items: [.whole(WriteEntry(sequence: 2, hlc: t, record: "x", slots: []))]))))
        invalid(
            "writer-log-seal-cut-short", "changes",
            Array(batch(one(.init(writer: a, firstSequence: 1, items: [.implied(record: 0)], seal: seal))).dropLast()))
    }
}
