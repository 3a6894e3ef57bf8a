// CodecBenchmark: the `codec` suite — ShoalWire against swift-protobuf and Foundation JSON on the notes corpus.

import ShoalSamples
import ShoalWire

/// Encodes and decodes the 10,000-record notes corpus (seed 1) with each codec, in one run.
///
/// Every codec gets the corpus in its own model, converted once before timing. One iteration
/// encodes (or decodes) every record, one record per call. MB/s divide the ShoalWire-encoded
/// size of the corpus by the time, for every codec, so the figures compare the same work.
/// `zstd_bytes` sends each codec's encodings as frames of 100 concatenated records through
/// `FrameEncoder(options: .init(mode: .zstd))`. `allocs_per_decode` counts allocation calls
/// during one decode of the whole corpus, divided by the record count.
///
/// `view-one-field` reads one field (`title`) of every encoded record through ``RecordView``
/// (validated, not decoded); `decode-one-field` decodes each record whole and reads the same
/// field, as a tool without views must. Both divide the corpus's encoded size by the time.
enum CodecBenchmark: BenchmarkSuite {
    static let name = "codec"
    static let summary = "record encode/decode: ShoalWire vs swift-protobuf vs Foundation JSON"

    static let recordCount = 10_000
    static let recordsPerFrame = 100
    /// The field the one-field cases read.
    static let field = "title"

    /// One codec, ready to time.
    struct Prepared {
        var name: String
        var encode: TimedCase
        var decode: TimedCase
        var bytes: Int
        var zstdBytes: Int
        var allocationsPerDecode: Double?
    }

    static func run() throws {
        let corpus = NotesCorpus.records(count: recordCount, seed: 1)
        let corpusBytes = corpus.reduce(0) { $0 + $1.encoded().count }
        let peers = [
            try prepare(ShoalWirePeer(), corpus),
            try prepare(ProtobufPeer(), corpus),
            try prepare(JSONPeer(), corpus)
        ]
        let oneField = try prepareOneField(corpus.map { $0.encoded() })
        printNote(
            "\(recordCount) NotesCorpus records (seed 1), \(corpusBytes) bytes as ShoalWire; best of \(Harness.runs) runs of at least \(Harness.minimumSeconds) s"
        )
        let seconds = try Harness.bestSecondsPerIteration(
            peers.flatMap { [$0.encode, $0.decode] } + oneField.map(\.timed))

        var encodeRate = [Double](), decodeRate = [Double]()
        for (i, p) in peers.enumerated() {
            encodeRate.append(Harness.megabytesPerSecond(corpusBytes, seconds[2 * i]))
            decodeRate.append(Harness.megabytesPerSecond(corpusBytes, seconds[2 * i + 1]))
            let allocs = p.allocationsPerDecode.map { fixed($0, 1) } ?? "n/a"
            print(
                "codec impl=\(p.name) encode_MBps=\(fixed(encodeRate[i], 1)) decode_MBps=\(fixed(decodeRate[i], 1)) bytes=\(p.bytes) zstd_bytes=\(p.zstdBytes) allocs_per_decode=\(allocs)"
            )
        }
        for (i, c) in oneField.enumerated() {
            let allocs = c.allocationsPerRecord.map { fixed($0, 1) } ?? "n/a"
            print(
                "codec case=\(c.name) MBps=\(fixed(Harness.megabytesPerSecond(corpusBytes, seconds[2 * peers.count + i]), 1)) field=\(field) allocs_per_record=\(allocs)"
            )
        }
        print(
            "codec ratio encode_vs_protobuf=\(fixed(encodeRate[0] / encodeRate[1], 2)) decode_vs_protobuf=\(fixed(decodeRate[0] / decodeRate[1], 2)) size_vs_protobuf=\(fixed(Double(peers[0].bytes) / Double(peers[1].bytes), 3))"
        )
    }

    /// Converts the corpus, checks the round trip, measures sizes and allocations, and builds
    /// the timed cases for one codec.
    static func prepare<P: CodecPeer>(_ peer: P, _ corpus: [Record]) throws -> Prepared {
        let messages = try peer.messages(from: corpus)
        let encodings = try messages.map { try peer.encode($0) }
        for (i, (m, e)) in zip(messages, encodings).enumerated() where try peer.decode(e) != m {
            throw BenchmarkError("\(P.name): record \(i) does not decode to what was encoded")
        }
        let bytes = encodings.reduce(0) { $0 + peer.count($1) }
        let zstdBytes = try framedSize(encodings.map { peer.bytes($0) })
        let allocations = try countAllocations {
            for e in encodings { blackHole(try peer.decode(e)) }
        }
        let encode = TimedCase(label: "\(P.name) encode") {
            var n = 0
            for m in messages { n &+= peer.count(try peer.encode(m)) }
            return n
        }
        let decode = TimedCase(label: "\(P.name) decode") {
            var n = 0
            for e in encodings {
                let m = try peer.decode(e)
                blackHole(m)
                n &+= 1
            }
            return n
        }
        return Prepared(
            name: P.name, encode: encode, decode: decode, bytes: bytes, zstdBytes: zstdBytes,
            allocationsPerDecode: allocations.map { Double($0) / Double(corpus.count) })
    }

    /// A one-field case: its name, timing and allocations per record.
    struct OneField {
        var name: String
        var timed: TimedCase
        var allocationsPerRecord: Double?
    }

    /// The `view-one-field` and `decode-one-field` cases over the encoded corpus, checked to
    /// read the same values first.
    static func prepareOneField(_ encodings: [[UInt8]]) throws -> [OneField] {
        func view(_ e: [UInt8]) throws -> Int {
            try RecordView.withView(of: e) { $0.field(named: field)?.utf8?.count ?? 0 }
        }
        func decode(_ e: [UInt8]) throws -> Int {
            guard case .string(let s)? = try Record(decoding: e)[field] else { return 0 }
            return s.utf8.count
        }
        for (i, e) in encodings.enumerated() where try view(e) != decode(e) {
            throw BenchmarkError("record \(i): the view reads another \(field) than the decoder")
        }
        return try [("view-one-field", view), ("decode-one-field", decode)].map { name, read in
            let allocations = try countAllocations { for e in encodings { blackHole(try read(e)) } }
            let timed = TimedCase(label: name) {
                var n = 0
                for e in encodings { n &+= try read(e) }
                return n
            }
            return OneField(
                name: name, timed: timed, allocationsPerRecord: allocations.map { Double($0) / Double(encodings.count) }
            )
        }
    }

    /// Total size of `encodings` sent as zstd frames of `recordsPerFrame` concatenated records.
    static func framedSize(_ encodings: [[UInt8]]) throws -> Int {
        let encoder = FrameEncoder(options: .init(mode: .zstd))
        var total = 0
        for start in stride(from: 0, to: encodings.count, by: recordsPerFrame) {
            let payload = Array(encodings[start..<min(start + recordsPerFrame, encodings.count)].joined())
            total += try encoder.encode(.changes, payload: payload).count
        }
        return total
    }
}
