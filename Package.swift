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
let metrics = Package.Dependency.package(url: "https://github.com/apple/swift-metrics", from: "2.13.0")
let prometheus = Package.Dependency.package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1")
let hummingbird = Package.Dependency.package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1")
// Hummingbird's own event loops; named for NIOCore's types (a peer's address) in the HTTP target.
let nio = Package.Dependency.package(url: "https://github.com/apple/swift-nio", from: "2.101.2")
// Hummingbird's header types; named for headers of our own (X-Tributary-Action, the page's security headers).
let httpTypes = Package.Dependency.package(url: "https://github.com/apple/swift-http-types", from: "1.8.0")
// `make docs`: the `generate-documentation` command builds the Tributary product's DocC catalog. A command plugin,
// so `swift build` and `swift test` neither build it nor its SymbolKit; resolving fetches the two small packages.
let doccPlugin = Package.Dependency.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")

/// An executable's dependencies beyond its libraries: argument parsing, services, the command support.
func executable(_ name: String, path: String, libraries: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name,
        dependencies: libraries + [
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
        // What a worker, a client or a subscriber imports: no store, no coordinator.
        .library(name: "Tributary", targets: ["TributaryCore", "TributaryProtocol", "TributaryClient"]),
        // The root writer and its server, for embedding a coordinator.
        .library(name: "TributaryCoordinator", targets: ["TributaryCoordinator"]),
        .plugin(name: "TributaryEntities", targets: ["TributaryEntities"]),
        .executable(name: "tributary-coordinator", targets: ["tributary-coordinator"]),
        .executable(name: "tributary-worker", targets: ["tributary-worker"]),
        .executable(name: "tributary", targets: ["tributary"]),
    ],
    dependencies: [
        grdb, protobuf, argumentParser, log, serviceLifecycle, metrics, prometheus, hummingbird, nio, httpTypes,
        doccPlugin,
    ],
    targets: [
        // The system libzmq, found through pkg-config. Only the `ZeroMQ` target imports it.
        .systemLibrary(
            name: "CZeroMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]
        ),
        // Process-wide SQLite settings that only C can make (sqlite3_config is variadic), for the coordinator.
        .target(
            name: "CSQLiteSettings",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        // A thin, checked Swift wrapper over libzmq: context, sockets, frames, poll, socket loop.
        .target(
            name: "ZeroMQ",
            dependencies: ["CZeroMQ"],
            swiftSettings: swiftSettings
        ),
        // The wire protocol: the generated protobuf types and the framing of envelopes (no ZeroMQ, no store).
        .target(
            name: "TributaryProtocol",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            path: "Sources/Shared/Protocol",
            exclude: ["tributary.proto"],
            swiftSettings: swiftSettings
        ),
        // The core: model, object ids, values, contexts, change sets, predicates, import rows (no GRDB, no ZeroMQ).
        .target(
            name: "TributaryCore",
            dependencies: ["TributaryProtocol"],
            path: "Sources/Shared/Core",
            swiftSettings: swiftSettings
        ),
        // What both ends of a ZeroMQ connection share: CURVE key files and endpoints.
        .target(
            name: "TributaryMessaging",
            dependencies: ["ZeroMQ"],
            path: "Sources/Shared/Messaging",
            swiftSettings: swiftSettings
        ),
        // Clients, subscribers and workers: the connection, JobClient, ChangeFeed, ViewContext, WorkerService.
        .target(
            name: "TributaryClient",
            dependencies: [
                "TributaryCore", "TributaryProtocol", "TributaryMessaging", "ZeroMQ",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Shared/Client",
            swiftSettings: swiftSettings
        ),
        // The coordinator: the root store (GRDB), merging, the job queue and the server.
        .target(
            name: "TributaryCoordinator",
            dependencies: [
                "TributaryCore", "TributaryProtocol", "TributaryMessaging", "TributaryCluster", "ZeroMQ",
                "CSQLiteSettings",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Shared/Coordinator",
            swiftSettings: swiftSettings
        ),
        // A cluster of coordinators: etcd's v3 API through its JSON gateway (over swift-nio, which the HTTP endpoint
        // builds already) and the leader election that etcd decides.
        .target(
            name: "TributaryCluster",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Shared/Cluster",
            swiftSettings: swiftSettings
        ),
        // The coordinator's HTTP endpoint (Hummingbird): health, readiness, Prometheus metrics, a JSON API and the
        // live dashboard, in front of the coordinator's own request handling.
        .target(
            name: "TributaryHTTP",
            dependencies: [
                "TributaryCoordinator", "TributaryCore", "TributaryProtocol", "TributaryMessaging",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Shared/HTTP",
            // The dashboard's plain files, compiled into the binary as bytes (`PackageResources`), so an installed
            // coordinator serves them with no files beside it.
            resources: [
                .embedInCode("Dashboard/index.html"), .embedInCode("Dashboard/dashboard.css"),
                .embedInCode("Dashboard/dashboard.js"),
            ],
            swiftSettings: swiftSettings
        ),
        // Generated demo data (the model and pull requests): for `tributary demo`, the bench, fuzzing and tests.
        .target(
            name: "TributaryDemo",
            dependencies: ["TributaryCore"],
            path: "Sources/Shared/Demo",
            swiftSettings: swiftSettings
        ),
        // What the three executables share: option groups, logging set-up, finding sibling executables.
        .target(
            name: "TributaryCommandSupport",
            dependencies: [
                "TributaryCore", "TributaryProtocol", "TributaryClient", "TributaryMessaging", "TributaryDemo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/CommandSupport",
            swiftSettings: swiftSettings
        ),
        executable(
            "tributary-coordinator", path: "Sources/coordinator",
            libraries: ["TributaryCoordinator", "TributaryHTTP", "TributaryCore", "TributaryMessaging"]),
        executable(
            "tributary-worker", path: "Sources/worker",
            libraries: ["TributaryClient", "TributaryCore", "TributaryMessaging"]),
        executable(
            "tributary", path: "Sources/cli",
            libraries: ["TributaryClient", "TributaryCore", "TributaryProtocol", "TributaryMessaging", "TributaryDemo"]),
        // A sample custom worker (docs/contexts.md): a job kind of its own, built with everything else.
        .executableTarget(
            name: "triage-worker",
            dependencies: [
                "TributaryClient", "TributaryCore", "TributaryProtocol", "TributaryMessaging",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "examples/triage-worker",
            exclude: ["README.md", "demo.tributary.json"],
            swiftSettings: swiftSettings,
            // Its entity types (PullRequest, User) are written from demo.tributary.json at every build.
            plugins: ["TributaryEntities"]
        ),
        // A view context in a process of its own (docs/contexts.md): shows, edits and saves into the root.
        .executableTarget(
            name: "view-editor",
            dependencies: [
                "TributaryClient", "TributaryCore", "TributaryMessaging", "TributaryCommandSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "examples/view-editor",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        // A live list that edits (docs/contexts.md#live-results): the seeds' UI context end to end.
        .executableTarget(
            name: "live-list",
            dependencies: [
                "TributaryClient", "TributaryCore", "TributaryMessaging", "TributaryCommandSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "examples/live-list",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        // The fuzz targets (every decoder of outside bytes) and their seed corpus, for the fuzzer and the tests.
        .target(
            name: "TributaryFuzz",
            dependencies: [
                "TributaryCore", "TributaryProtocol", "TributaryCoordinator", "TributaryDemo",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Sources/Shared/Fuzz",
            swiftSettings: swiftSettings
        ),
        // `make fuzz`: the decoders under libFuzzer; without -DFUZZING it replays inputs and writes the seeds.
        .executableTarget(
            name: "tributary-fuzz",
            dependencies: ["TributaryFuzz"],
            path: "Sources/fuzz",
            swiftSettings: swiftSettings
        ),
        // A SQLite VFS that loses power on cue, for the durability tests (test support: no product links it).
        .target(
            name: "CPowerLoss",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        // What the tests and the bench use and the products must not carry: hosts in network namespaces.
        .target(
            name: "TributaryTestSupport",
            path: "Sources/TestSupport",
            swiftSettings: swiftSettings
        ),
        // `make bench`: figures measured against baselines in the same run (release build).
        .executableTarget(
            name: "tributary-bench",
            dependencies: [
                "TributaryCore", "TributaryProtocol", "TributaryClient", "TributaryCoordinator", "TributaryDemo",
                "TributaryCommandSupport", "TributaryTestSupport", "TributaryCluster", "ZeroMQ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/bench",
            swiftSettings: swiftSettings
        ),
        // What the TributaryEntities build-tool plugin runs: the generator of `tributary generate swift`, alone.
        .executableTarget(
            name: "tributary-entities",
            dependencies: ["TributaryCore"],
            path: "Sources/entities",
            swiftSettings: swiftSettings
        ),
        // Writes a target's entity types from its `*.tributary.json` model files on every build.
        .plugin(
            name: "TributaryEntities",
            capability: .buildTool(),
            dependencies: ["tributary-entities"],
            path: "Plugins/TributaryEntities"
        ),
        // Entity types the plugin writes at build time, for the tests (the plugin's own test).
        .target(
            name: "PluginEntities",
            dependencies: ["TributaryCore"],
            path: "Tests/PluginEntities",
            exclude: ["notes.tributary.json"],
            swiftSettings: swiftSettings,
            plugins: ["TributaryEntities"]
        ),
        // Entity types generated by `tributary generate swift` from the models in Tests/Fixtures (`make entities`
        // writes them again): the tests compile them and use them against real stores.
        .target(
            name: "GeneratedEntities",
            dependencies: ["TributaryCore"],
            path: "Tests/GeneratedEntities",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TributaryTests",
            dependencies: [
                "TributaryCore", "TributaryProtocol", "TributaryMessaging", "TributaryClient", "TributaryCoordinator",
                "TributaryDemo", "TributaryFuzz", "TributaryCommandSupport", "TributaryHTTP", "TributaryTestSupport",
                "TributaryCluster", "ZeroMQ", "CPowerLoss",
                "GeneratedEntities", "PluginEntities",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["Support/tcp_tap.py", "Support/prometheus_samples.py"],
            swiftSettings: swiftSettings
        ),
    ]
)
