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
        .library(name: "ShoalSamples", targets: ["ShoalSamples"]),
    ],
    targets: [
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]
        ),
        .target(name: "ShoalWire", dependencies: ["CZstd"], swiftSettings: strict),
        .target(name: "ShoalSamples", dependencies: ["ShoalWire"], swiftSettings: strict),
        .testTarget(name: "ShoalWireTests", dependencies: ["ShoalWire", "ShoalSamples"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
