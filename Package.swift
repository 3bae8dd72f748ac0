// swift-tools-version: 6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    // Our targets build warning-free; keep them so (dependencies are not affected).
    .treatAllWarnings(as: .error),
]

let grdb = Package.Dependency.package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0")
let protobuf = Package.Dependency.package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0")
let argumentParser = Package.Dependency.package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2")
let log = Package.Dependency.package(url: "https://github.com/apple/swift-log", from: "1.16.2")
let serviceLifecycle = Package.Dependency.package(
    url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0")

/// The three executables are thin: `@main`, commands and wiring over the library and the command support.
func executable(_ name: String, path: String) -> Target {
    .executableTarget(
        name: name,
        dependencies: [
            "Tributary",
            "TributaryCommandSupport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ],
        path: path,
        swiftSettings: swiftSettings
    )
}

let package = Package(
    name: "Tributary",
    products: [
        .library(name: "Tributary", targets: ["Tributary"]),
        .executable(name: "tributary-coordinator", targets: ["tributary-coordinator"]),
        .executable(name: "tributary-worker", targets: ["tributary-worker"]),
        .executable(name: "tributary", targets: ["tributary"]),
    ],
    dependencies: [grdb, protobuf, argumentParser, log, serviceLifecycle],
    targets: [
        // The system libzmq, found through pkg-config. Only the `ZeroMQ` target imports it.
        .systemLibrary(
            name: "CZeroMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]
        ),
        // A thin, checked Swift wrapper over libzmq: context, sockets, frames, poll, socket loop.
        .target(
            name: "ZeroMQ",
            dependencies: ["CZeroMQ"],
            swiftSettings: swiftSettings
        ),
        // Everything reusable: model, store, contexts, wire protocol, jobs, feed, coordinator and worker logic.
        .target(
            name: "Tributary",
            dependencies: [
                "ZeroMQ",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Shared",
            exclude: ["Protocol/tributary.proto"],
            swiftSettings: swiftSettings
        ),
        // What the three executables share: option groups, logging set-up, finding sibling executables.
        .target(
            name: "TributaryCommandSupport",
            dependencies: [
                "Tributary",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/CommandSupport",
            swiftSettings: swiftSettings
        ),
        executable("tributary-coordinator", path: "Sources/coordinator"),
        executable("tributary-worker", path: "Sources/worker"),
        executable("tributary", path: "Sources/cli"),
        // A sample custom worker (docs/contexts.md): a job kind of its own, built with everything else.
        .executableTarget(
            name: "triage-worker",
            dependencies: [
                "Tributary",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "examples/triage-worker",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        // `make fuzz`: the decoders under libFuzzer; without -DFUZZING it replays inputs and writes the seeds.
        .executableTarget(
            name: "tributary-fuzz",
            dependencies: ["Tributary"],
            path: "Sources/fuzz",
            swiftSettings: swiftSettings
        ),
        // `make bench`: figures measured against baselines in the same run (release build).
        .executableTarget(
            name: "tributary-bench",
            dependencies: [
                "Tributary",
                "TributaryCommandSupport",
                "ZeroMQ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/bench",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TributaryTests",
            dependencies: [
                "Tributary", "ZeroMQ", "TributaryCommandSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Support/tcp_tap.py"],
            swiftSettings: swiftSettings
        ),
    ]
)
