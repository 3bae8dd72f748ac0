import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Named queues with real processes: workers serve the queues they were started with, in order; `status` shows each
/// queue's depth and latency; the store, read with its own connection, shows who took what.
@Suite("Named queues", .serialized)
struct QueueTests {
    static func jobs(_ count: Int, queue: String, kind: String = "noop") -> [Tributary_V1_JobSpec] {
        (0..<count).map { _ in
            Tributary_V1_JobSpec.with {
                $0.kind = kind
                $0.queue = queue
            }
        }
    }

    static func worker(_ endpoint: String, queues: String) throws -> StartedProcess {
        try StartedProcess.start(
            "tributary-worker",
            ["--connect", endpoint, "--queues", queues, "--concurrency", "8", "--log-level", "error"])
    }

    /// Each job's queue, state, attempt and lease time, by id.
    static func jobRows(_ storePath: String) throws -> [(
        id: Int64, queue: String, state: String, attempt: Int, leasedAt: Double
    )] {
        try DatabaseQueue(path: storePath).read { db in
            try Row.fetchAll(db, sql: "SELECT id, queue, state, attempt, leased_at FROM tributary_jobs ORDER BY id").map
            {
                ($0["id"], $0["queue"], $0["state"], $0["attempt"], $0["leased_at"])
            }
        }
    }

    @Test("a worker serving only imports never gets a default job; one serving imports,default takes imports first")
    func workersServeTheirQueues() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let endpoint = coordinator.process.listenEndpoint
        let client = try JobClient(endpoint: endpoint)
        defer { Task { await client.close() } }

        let defaults = try await client.push(Self.jobs(20, queue: "")).jobIds
        let imports = try await client.push(Self.jobs(5, queue: "imports")).jobIds
        let importsOnly = try Self.worker(endpoint, queues: "imports")
        defer { importsOnly.kill() }
        try await waitUntil("the imports jobs to be done") {
            try Self.jobRows(coordinator.storePath).filter { $0.queue == "imports" }.allSatisfy { $0.state == "done" }
        }
        // Its credit outlasted the imports queue: it asked again and was given nothing of `default`.
        let status = try await client.status()
        #expect(status.queues.map(\.name) == ["default"], "\(status.queues)")
        #expect(status.queues.first?.queued == 20)
        #expect((status.queues.first?.latencySeconds ?? 0) > 0)
        let scrape = try await MetricsIntegrationTests.scrape(try #require(coordinator.process.httpURL))
        #expect(scrape.value("tributary_queue_jobs", ["queue": "default"]) == 20)
        #expect((scrape.value("tributary_queue_latency_seconds", ["queue": "default"]) ?? 0) > 0)
        for row in try Self.jobRows(coordinator.storePath) where row.queue == "default" {
            #expect(
                row.state == "queued" && row.attempt == 0 && row.leasedAt == 0, "job \(row.id) of default was leased")
        }

        // Newer imports jobs, then a worker of both queues: its first claim takes imports before the older default.
        let later = try await client.push(Self.jobs(3, queue: "imports")).jobIds
        let both = try Self.worker(endpoint, queues: "imports,default")
        defer { both.kill() }
        try await waitUntil("every job to be done") {
            try Self.jobRows(coordinator.storePath).allSatisfy { $0.state == "done" }
        }
        let rows = try Self.jobRows(coordinator.storePath)
        let leased = Dictionary(uniqueKeysWithValues: rows.map { ($0.id, $0.leasedAt) })
        let lastImport = try #require(later.compactMap { leased[Int64($0)] }.max())
        let firstDefault = try #require(defaults.compactMap { leased[Int64($0)] }.min())
        #expect(lastImport <= firstDefault, "a default job was leased before an imports job")
        #expect(rows.count == defaults.count + imports.count + later.count)
        #expect(try await client.status().queues.isEmpty)
    }

    @Test("a bad queue name is refused: in a push (INVALID_REQUEST), by the worker's and the CLI's flags")
    func badNames() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        await #expect(throws: ProtocolError.self) { try await client.push(Self.jobs(1, queue: "no spaces")) }
        let worker = try await Binaries.run("tributary-worker", ["--queues", "a,b c"])
        #expect(worker.status != 0 && worker.error.contains("--queues: queue 'b c'"), "\(worker.error)")
        let push = try await Binaries.run(
            "tributary", ["push", "job", "--kind", "noop", "--queue", String(repeating: "q", count: 65)])
        #expect(push.status != 0 && push.error.contains("--queue: a queue name has 1 to 64"), "\(push.error)")
    }
}
