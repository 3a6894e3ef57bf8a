// RecordViewTests: RecordView against the decoder — the same verdict and error on every record
// vector, and the same fields on seeded random records and byte flips.

import Testing
import ShoalSamples
@testable import ShoalWire

/// What a view reads, slot by slot, for comparison with a decoded record.
private func viewed(_ bytes: [UInt8]) throws -> [Record.Field] {
    try RecordView.withView(of: bytes) { view in
        (0..<view.slotCount).map { i in
            let slot = view.slot(at: i)
            return Record.Field(name: slot.name, value: slot.value, stamp: slot.stamp)
        }
    }
}

/// Checks that the view of `bytes` agrees with the decoder; a description of the first difference.
private func disagreement(_ bytes: [UInt8]) -> String? {
    let decoded: Result<Record, WireError> = Result { () throws(WireError) in try Record(decoding: bytes) }
    do {
        let fields = try viewed(bytes)
        guard case .success(let record) = decoded else { return "the view accepted what the decoder refused" }
        if fields != record.fields { return "the view's slots differ from the decoded fields" }
        return try RecordView.withView(of: bytes) { view -> String? in
            if view.recordType != record.recordType || view.zone != record.id.zone { return "type or zone differ" }
            for name in Array(Set(record.fields.map(\.name))) + ["zz_absent", "A", ""] {
                let expected = record.slots(for: name).first
                let found = view.field(named: name)
                if found?.value != expected?.value || found?.stamp != expected?.stamp
                    || (found == nil) != (expected == nil)
                {
                    return "field(named: \(name)) differs"
                }
                if case .string(let s)? = expected?.value, found?.string != s {
                    return "string accessor of \(name) differs"
                }
                if case .int64(let v)? = expected?.value, found?.int64 != v {
                    return "int64 accessor of \(name) differs"
                }
                if case .double(let v)? = expected?.value, found?.double.map({ $0.bitPattern }) != v.bitPattern {
                    return "double accessor of \(name) differs"
                }
                if case .bool(let v)? = expected?.value, found?.bool != v { return "bool accessor of \(name) differs" }
                if case .date(let v)? = expected?.value, found?.date != v { return "date accessor of \(name) differs" }
                if case .bytes(let v)? = expected?.value, found?.bytesValue.map(Array.init) != v {
                    return "bytes accessor of \(name) differs"
                }
            }
            return nil
        }
    } catch let e as WireError {
        guard case .failure(let d) = decoded else { return "the view refused what the decoder accepted: \(e)" }
        return e.code == d.code && e.offset == d.offset ? nil : "the view says \(e), the decoder \(d)"
    } catch {
        return "unexpected \(error)"
    }
}

@Suite struct RecordViewTests {
    @Test(
        arguments: SpecVectors.valid.filter { $0.kind == "record" } + SpecVectors.invalid.filter { $0.kind == "record" }
    )
    func viewAgreesWithTheDecoderOnEveryRecordVector(_ v: SpecVector) {
        #expect(disagreement(v.bytes) == nil, "\(disagreement(v.bytes) ?? "")")
    }

    @Test func viewAgreesOnRandomRecordsAndTheirByteFlips() {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5EED_0F1E)
        print("RecordViewTests: seed \(seed) (SHOAL_SEED=\(seed) replays it)")
        var gen = RandomRecords(seed: seed)
        for i in 0..<3_000 {
            var bytes = gen.record().encoded()
            if let why = disagreement(bytes) {
                Issue.record("seed \(seed) case \(i): \(why)")
                return
            }
            // One flipped byte: both refuse it with the same error, or both accept the same fields.
            let at = Int(gen.rng.next() % UInt64(bytes.count))
            bytes[at] ^= UInt8(truncatingIfNeeded: gen.rng.next() | 1)
            if let why = disagreement(bytes) {
                Issue.record("seed \(seed) case \(i), byte \(at) flipped: \(why)")
                return
            }
        }
    }

    /// README's Swift example ("Embedding the codec").
    @Test func readmeExample() throws {
        let encoded = NotesCorpus.records(count: 3).map { $0.encoded() }
        var titles = [String]()
        for bytes in encoded {
            let title = try RecordView.withView(of: bytes) { record in record.field(named: "title")?.string }
            titles.append(title ?? "")
        }
        let expected = try encoded.map { bytes -> String in
            guard case .string(let s)? = try Record(decoding: bytes)["title"] else { return "" }
            return s
        }
        #expect(titles == expected)
        #expect(!titles.contains(""))
    }
}
