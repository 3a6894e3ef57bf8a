// main.swift: picks the suite named by the first argument and runs it.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every suite, in the order the usage text lists them. A new suite is one file and one line here.
let suites: [any BenchmarkSuite.Type] = [
    CodecBenchmark.self,
    CompressionBenchmark.self,
    SyncBenchmark.self,
    StoreBenchmark.self,
    DiffBenchmark.self,
    AssetsBenchmark.self,
    HostileBenchmark.self,
    MeshBenchmark.self
]

func usage(_ suites: [any BenchmarkSuite.Type]) -> String {
    var text = "usage: shoal-bench <suite>\n\nsuites:\n"
    for s in suites { text += "  \(s.name.padding(toLength: 12, withPad: " ", startingAt: 0)) \(s.summary)\n" }
    text += "\nSHOAL_BENCH_QUICK=1 runs each case once for about 0.05 s (for profilers; numbers are rough).\n"
    return text
}

let arguments = CommandLine.arguments.dropFirst()
guard let name = arguments.first, let suite = suites.first(where: { $0.name == name }) else {
    if let name = arguments.first, name != "-h", name != "--help" {
        writeStandardError("shoal-bench: unknown suite '\(name)'\n\n")
    }
    writeStandardError(usage(suites))
    exit(2)
}
do {
    try suite.run()
} catch {
    writeStandardError("shoal-bench \(suite.name): \(error)\n")
    exit(1)
}
