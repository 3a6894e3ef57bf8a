// swift-tools-version: 6.0
// Shoal's fuzz targets: one libFuzzer executable per ShoalWire decoder (see README.md).
import PackageDescription

// A path dependency's identity is its directory's name, which differs between checkouts
// (`shoal`, `main`, a worktree's name), so name the parent package by its directory.
let shoal = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "shoal").lowercased()

let targets = [
    "fuzz-frame-stream", "fuzz-frame", "fuzz-record", "fuzz-delta",
    "fuzz-tombstone", "fuzz-token", "fuzz-control", "fuzz-compressed", "fuzz-messages",
    "fuzz-segment", "fuzz-discovery", "fuzz-stream",
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
        // The C interface, called as a C program calls it: this target links libShoalWireC alone
        // (its check, Tests/ShoalSamples/CABIChecks.swift, through a symbolic link), so that the
        // process holds one copy of the codec and of BoringSSL (ASan refuses two).
        .executableTarget(
            name: "fuzz-c-abi",
            dependencies: [.product(name: "ShoalWireC", package: shoal)],
            swiftSettings: [.define("SHOAL_C_ABI")]
        ),
    ] + targets.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzSupport", "ShoalSamples"]
        )
    },
    swiftLanguageModes: [.v6]
)
