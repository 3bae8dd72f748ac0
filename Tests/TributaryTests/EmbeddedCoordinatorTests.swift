import Foundation
import GRDB
import Logging
import ServiceLifecycle
import Testing

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo

/// Serves `model`'s store at `storePath` until the service group shuts down (SIGTERM or SIGINT), with the jobs
/// and feed endpoints on free loopback ports; `ready` is told where they are.
func serve(storePath: String, model: Model, ready: @escaping @Sendable (CoordinatorServer) -> Void) async throws {
    var configuration = CoordinatorConfiguration(storePath: storePath, model: model)
    configuration.listen = "tcp://127.0.0.1:*"
    configuration.feed = "tcp://127.0.0.1:*"
    let logger = Logger(label: "coordinator")
    let service = CoordinatorService(configuration: configuration, logger: logger, ready: ready)
    let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    try await group.run()
}

/// The TributaryCoordinator catalog's example of embedding a coordinator: the same code (checked line for line),
/// compiled here and run against a client.
@Suite("The TributaryCoordinator catalog's embedding example")
struct EmbeddedCoordinatorTests {
    @Test("the catalog's example is this file's serve(storePath:model:ready:), line for line")
    func sameCode() throws {
        let catalog = try String(
            contentsOf: Repository.root.appendingPathComponent(
                "Sources/Shared/Coordinator/TributaryCoordinator.docc/TributaryCoordinator.md"), encoding: .utf8)
        let marker = try #require(catalog.range(of: "<!-- example: compiled and run by EmbeddedCoordinatorTests -->"))
        let opening = try #require(catalog.range(of: "```swift\n", range: marker.upperBound..<catalog.endIndex))
        let closing = try #require(catalog.range(of: "\n```", range: opening.upperBound..<catalog.endIndex))
        let example = String(catalog[opening.upperBound..<closing.lowerBound])
        let source = try String(
            contentsOf: Repository.root.appendingPathComponent("Tests/TributaryTests/EmbeddedCoordinatorTests.swift"),
            encoding: .utf8)
        #expect(source.contains(example + "\n"), "the catalog's example differs from serve(storePath:model:ready:)")
    }

    @Test("the example serves: a client pushes a job, the store has it, and cancelling the task stops it")
    func serves() async throws {
        let directory = try TemporaryDirectory()
        let model = try Model.load(
            contentsOf: URL(fileURLWithPath: try directory.write("model.json", DemoData.modelJSON)))
        let storePath = directory.path("store.sqlite")
        let (servers, ready) = AsyncStream<CoordinatorServer>.makeStream()
        let serving = Task { try await serve(storePath: storePath, model: model) { ready.yield($0) } }
        var iterator = servers.makeAsyncIterator()
        let server = try #require(await iterator.next())
        let client = try JobClient(endpoint: server.listenEndpoint)
        let pushed = try await client.push([JobSpec(kind: "report")], batch: "nightly")
        #expect(try await client.job(pushed.ids[0]).state == .queued)
        await client.close()
        serving.cancel()
        _ = await serving.result
        let kinds = try await DatabaseQueue(path: storePath).read { db in
            try String.fetchAll(db, sql: "SELECT kind FROM tributary_jobs")
        }
        #expect(kinds == ["report"])
    }
}
