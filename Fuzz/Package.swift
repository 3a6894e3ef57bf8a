// swift-tools-version: 6.0
// Shoal's fuzz targets: one libFuzzer executable per ShoalWire decoder (see README.md).
import PackageDescription

// A path dependency's identity is its directory's name, which differs between checkouts
// (`shoal`, `main`, a worktree's name), so name the parent package by its directory.
let shoal = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "shoal").lowercased()

let targets = [
    "fuzz-frame-stream", "fuzz-frame", "fuzz-record", "fuzz-delta",
    "fuzz-tombstone", "fuzz-token", "fuzz-control", "fuzz-compressed", "fuzz-messages",
    "fuzz-segment",
]

let package = Package(
    name: "ShoalFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        .target(name: "FuzzSupport", dependencies: [.product(name: "ShoalSamples", package: shoal)]),
        .executableTarget(
            name: "generate-seeds",
            dependencies: [
                "FuzzSupport",
                .product(name: "ShoalWire", package: shoal),
                .product(name: "ShoalSamples", package: shoal),
            ]
        ),
    ] + targets.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzSupport", .product(name: "ShoalSamples", package: shoal)]
        )
    },
    swiftLanguageModes: [.v6]
)
