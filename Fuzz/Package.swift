// swift-tools-version: 6.0
// Shoal's fuzz targets: one libFuzzer executable per ShoalWire decoder (see README.md).
import PackageDescription

// A path dependency's identity is its directory's name, which differs between checkouts
// (`shoal`, `main`, a worktree's name), so name the parent package by its directory.
let shoal = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "shoal").lowercased()

let targets = [
    "fuzz-frame-stream", "fuzz-frame", "fuzz-record", "fuzz-delta",
    "fuzz-tombstone", "fuzz-token", "fuzz-control", "fuzz-compressed", "fuzz-messages",
    "fuzz-segment", "fuzz-discovery", "fuzz-stream", "fuzz-c-abi",
]

let package = Package(
    name: "ShoalFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        // The main package's test support (Tests/ShoalSamples, through a symbolic link): the checks
        // each target runs and the sample records the seeds are made from. It is not a product of
        // the main package, so this package compiles its own copy.
        .target(name: "ShoalSamples", dependencies: [
            .product(name: "ShoalWire", package: shoal), .product(name: "ShoalAssets", package: shoal),
            // fuzz-c-abi calls the C interface of the dynamic library, as a C program would.
            .product(name: "ShoalWireC", package: shoal),
        ]),
        .target(name: "FuzzSupport", dependencies: ["ShoalSamples"]),
        .executableTarget(
            name: "generate-seeds",
            dependencies: [
                "FuzzSupport",
                .product(name: "ShoalWire", package: shoal),
                "ShoalSamples",
            ]
        ),
    ] + targets.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzSupport", "ShoalSamples"]
        )
    },
    swiftLanguageModes: [.v6]
)
