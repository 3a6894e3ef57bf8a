// FuzzChecks+Segments: the asset store's segment files (Spec/assets.md §3.2) as fuzz input.

@_spi(Fuzzing) import ShoalAssets
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension FuzzChecks {
    /// A segment file read by the asset store when it opens (the scan that builds the index
    /// resynchronises past damage) and every chunk the scan indexed read back: nothing traps,
    /// and a chunk is only ever served as bytes that hash to its name, or refused and dropped.
    /// - Throws: ``Failure`` when a property breaks.
    package static func segment(_ bytes: [UInt8]) throws(Failure) {
        if let broken = SegmentFuzzing.check(bytes, directory: segmentDirectory) {
            throw Failure(Target.segment.rawValue, broken)
        }
    }

    /// Where ``segment(_:)`` writes its one file: `$TMPDIR` (or `/tmp`), one folder per process.
    static let segmentDirectory: String = {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        return base + "/shoal-fuzz-segment-\(getpid())"
    }()

    /// Seeds for `fuzz-segment`: valid segments of small chunks, raw and zstd-compressed.
    package static func segmentSeeds() -> [(name: String, bytes: [UInt8])] {
        var rng = SplitMix64(seed: 8)
        let text = Array(String(repeating: "segments hold chunk records. ", count: 40).utf8)
        let noise = (0..<700).map { _ in UInt8.random(in: 0...255, using: &rng) }
        return [
            ("empty-chunk", SegmentFuzzing.segment(of: [[]])),
            ("one-raw", SegmentFuzzing.segment(of: [noise])),
            ("raw-and-zstd", SegmentFuzzing.segment(of: [text, Array(noise.prefix(13))], zstdLevel: 3)),
            ("three-raw", SegmentFuzzing.segment(of: [Array(noise.prefix(100)), Array(text.prefix(57)), [7]]))
        ]
    }
}
