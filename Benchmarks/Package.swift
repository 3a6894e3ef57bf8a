// swift-tools-version: 6.0
// Shoal's benchmark harness: ShoalWire against its peers (swift-protobuf, Foundation JSON), measured in one run.
import PackageDescription

let package = Package(
    name: "ShoalBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Shoal", path: ".."),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        // The hostile suite's client that reads nothing: TLS on NIO, as the main package's tests do.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // The hostile suite's member-flood case signs zone shares with its flooding device's key.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .executableTarget(
            name: "shoal-bench",
            dependencies: [
                .product(name: "ShoalWire", package: "Shoal"),
                .product(name: "ShoalDiff", package: "Shoal"),
                "ShoalSamples",
                .product(name: "Shoal", package: "Shoal"),
                .product(name: "ShoalAssets", package: "Shoal"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                "CMallocCounter",
                "CZstdStreaming",
                "CSQLiteBench",
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // The main package's seeded generators and notes corpus (Tests/ShoalSamples, through a
        // symbolic link): test support, not a product of the main package.
        .target(name: "ShoalSamples", dependencies: [
            .product(name: "ShoalWire", package: "Shoal"), .product(name: "ShoalAssets", package: "Shoal"),
        ]),
        // Counts calls to malloc and friends by interposing them over glibc's (Linux only).
        .target(name: "CMallocCounter"),
        // The system SQLite, for the store suite's raw-insert peer.
        .systemLibrary(name: "CSQLiteBench", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // libzstd's streaming API, for the compression suite's one-context-per-connection case.
        .systemLibrary(
            name: "CZstdStreaming",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
