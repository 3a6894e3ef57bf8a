// swift-tools-version: 6.0
// Shoal: CloudKit's record-sync model, open and peer-to-peer.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Shoal",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ShoalWire", targets: ["ShoalWire"]),
        // The codec for C and every language with a C FFI: libShoalWireC.so, shoalwire.h, shoalwire.pc.
        .library(name: "ShoalWireC", type: .dynamic, targets: ["ShoalWireC"]),
        .library(name: "ShoalDiff", targets: ["ShoalDiff"]),
        .library(name: "ShoalStore", targets: ["ShoalStore"]),
        .library(name: "ShoalSync", targets: ["ShoalSync"]),
        .library(name: "ShoalNet", targets: ["ShoalNet"]),
        .library(name: "ShoalAssets", targets: ["ShoalAssets"]),
        .library(name: "Shoal", targets: ["Shoal"]),
        .executable(name: "shoal", targets: ["shoal"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // CRC-32C with the processor's instruction where there is one (frames end with it).
        .target(name: "CShoalCRC"),
        // SHA-256 with the processor's SHA instructions, one stream or two at once (ShoalWire's SHA256Stream).
        .target(name: "CShoalSHA"),
        // Naming a thread, and marking the asset lane's threads (a thread-local flag).
        .target(name: "CShoalThread"),
        .target(name: "ShoalWire", dependencies: ["CZstd", "CShoalCRC", "CShoalSHA"], swiftSettings: strict),
        // The JSON form of Spec/vectors and of `shoal inspect`: the C library, the CLI and the tests share it.
        .target(name: "ShoalWireJSON", dependencies: ["ShoalWire", .product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
        // The C ABI (@_cdecl); CShoalWire holds its header, shoalwire.h, and the pkg-config template.
        .target(name: "CShoalWire", exclude: ["shoalwire.pc.in"]),
        .target(name: "ShoalWireC", dependencies: ["ShoalWire", "ShoalWireJSON", "CShoalWire"], swiftSettings: strict),
        .target(name: "ShoalDiff", dependencies: ["ShoalWire"], swiftSettings: strict),
        .target(name: "ShoalStore", dependencies: [
            "ShoalWire", "ShoalDiff", "CSQLite", "CShoalThread", .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: strict),
        // The process's asset-lane threads and the one executor on them (ShoalNet's lanes, ShoalAssets' I/O).
        .target(name: "ShoalLanes", dependencies: ["CShoalThread"], swiftSettings: strict),
        .target(name: "ShoalAssets", dependencies: [
            "ShoalWire", "CShoalThread", "ShoalLanes", .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: strict),
        .target(name: "ShoalSync", dependencies: [
            "ShoalWire", "ShoalDiff", "ShoalStore", "ShoalTrust",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Mutual TLS 1.3 on every peer connection, pinned by device ID (ShoalTrust).
        .target(name: "ShoalNet", dependencies: [
            "ShoalWire", "ShoalStore", "ShoalSync", "ShoalTrust", "ShoalLanes",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "NIOTLS", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Device identity: the key pair, the self-signed certificate and the device ID derived from it.
        .target(name: "ShoalTrust", dependencies: [
            "ShoalWire", .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
        ], swiftSettings: strict),
        .target(name: "Shoal", dependencies: ["ShoalWire", "ShoalStore", "ShoalSync", "ShoalNet", "ShoalAssets", "ShoalTrust", "ShoalLanes"], swiftSettings: strict),
        // The daemon's HTTP API, metrics and web console (Hummingbird); only the daemon links it.
        .target(name: "ShoalHTTP", dependencies: [
            "Shoal", "ShoalWireJSON", .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdTLS", package: "hummingbird"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
        ], resources: [
            // Compiled into the binary, so a `shoal` copied anywhere serves its console.
            .embedInCode("Console/index.html"), .embedInCode("Console/console.css"), .embedInCode("Console/console.js"),
            .embedInCode("Console/qrcode.js"), .embedInCode("Console/openapi.json"),
        ], swiftSettings: strict),
        .executableTarget(name: "shoal", dependencies: [
            "Shoal", "ShoalHTTP", "ShoalWireJSON", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Test support, not products: it lives under Tests/ and nothing a user links depends on it.
        // Seeded record generators, the notes corpus and the fuzz checks (the nested Fuzz and
        // Benchmarks packages compile the same sources through a symbolic link).
        // SHOAL_C_ABI: fuzz-c-abi's check (CABIChecks) calls the C library, linked here.
        .target(name: "ShoalSamples", dependencies: ["ShoalWire", "ShoalAssets", "ShoalWireC"], path: "Tests/ShoalSamples",
                swiftSettings: strict + [.define("SHOAL_C_ABI")]),
        // Test doubles for the asset lane.
        .target(name: "ShoalSyncSamples", dependencies: [
            "ShoalWire", "ShoalSync", "ShoalAssets",
        ], path: "Tests/ShoalSyncSamples", swiftSettings: strict),
        // Starting the programs the tests run (shoal, ip, zstd, openssl) with posix_spawn: Foundation's
        // Process.run() on Linux can crash the test process while it lists its descriptors.
        .target(name: "CShoalSpawn", path: "Tests/CShoalSpawn"),
        .target(
            name: "ShoalTestSupport", dependencies: ["CShoalSpawn", .product(name: "Logging", package: "swift-log")],
            path: "Tests/ShoalTestSupport", swiftSettings: strict),
        // The writer that the kill -9 crash-safety test starts and kills (built next to the test bundle).
        .executableTarget(name: "shoal-crash-writer", dependencies: ["ShoalStore", "ShoalWire"], path: "Tests/ShoalCrashWriter", swiftSettings: strict),
        // Answers discovery announcements with forged ones, for DiscoverySpoofingTests.
        .executableTarget(name: "shoal-spoofer", dependencies: ["ShoalWire"], path: "Tests/ShoalSpoofer", swiftSettings: strict),
        // A SQLite VFS that cuts the power below the store: unsynced writes lost, torn or kept (tests only).
        .target(name: "CShoalPowerCut", dependencies: ["CSQLite"], path: "Tests/CShoalPowerCut"),
        .testTarget(name: "ShoalWireTests", dependencies: [
            "ShoalWire", "ShoalWireJSON", "ShoalWireC", "ShoalSamples", "ShoalTestSupport", .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: strict),
        .testTarget(name: "ShoalDiffTests", dependencies: ["ShoalDiff", "ShoalWire", "ShoalSamples"], swiftSettings: strict),
        .testTarget(name: "ShoalCLITests", dependencies: ["shoal", "shoal-spoofer", "ShoalWire", "ShoalHTTP", "ShoalTestSupport"], swiftSettings: strict),
        .testTarget(name: "ShoalNetTests", dependencies: [
            "ShoalNet", "ShoalSync", "ShoalStore", "ShoalWire", "ShoalSamples", "ShoalSyncSamples", "ShoalTrust", "ShoalTestSupport", "ShoalLanes",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOTLS", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .testTarget(name: "ShoalSyncTests", dependencies: [
            "ShoalSync", "ShoalStore", "ShoalWire", "ShoalTrust", "ShoalSamples", "ShoalSyncSamples", "ShoalTestSupport",
        ], swiftSettings: strict),
        .testTarget(name: "ShoalAssetsTests", dependencies: ["ShoalAssets", "ShoalWire", "ShoalSamples", "CShoalThread", "ShoalLanes"], swiftSettings: strict),
        .testTarget(name: "ShoalTrustTests", dependencies: [
            "ShoalTrust", "ShoalWire", "ShoalTestSupport", .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
        ], swiftSettings: strict),
        // Fixtures/ holds data directories written by earlier releases, found by #filePath.
        .testTarget(name: "ShoalTests", dependencies: ["Shoal", "ShoalSync", "ShoalTrust"], exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(name: "ShoalStoreTests", dependencies: ["ShoalStore", "ShoalWire", "ShoalDiff", "ShoalSamples", "CSQLite", "CShoalThread", "ShoalTestSupport"], swiftSettings: strict),
        // Simulator.swift and SimulationWorkload.swift are ShoalSyncTests' (symbolic links): the
        // multi-node soak runs the same simulation with its stores on the power-cut VFS.
        .testTarget(name: "ShoalPowerLossTests", dependencies: [
            "ShoalStore", "ShoalAssets", "ShoalWire", "ShoalSync", "ShoalTrust", "ShoalSamples", "CSQLite", "CShoalPowerCut",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
