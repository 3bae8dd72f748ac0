import Foundation
import GRDB
import Testing
import TributaryCore

@testable import TributaryClient

/// A short queue is spread over the workers ready for it, rather than taken by the first one's credit.
@Suite("Claims spread over ready workers")
struct ClaimSpreadTests {
    /// Holds its job until the worker stops.
    struct Hold: JobHandler {
        let kind = "hold"

        func run(_ job: JobRun) async throws {
            try await Task.sleep(for: .seconds(600))
        }
    }

    @Test("12 jobs pushed to 2 idle workers of 32 slots each run 6 on each")
    func twelveJobsOverTwoWorkers() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let listen = coordinator.process.listenEndpoint
        let workers = (0..<2).map { _ in InProcessWorker.start(endpoint: listen, handlers: [Hold()]) }
        defer { for worker in workers { worker.cancel() } }
        let client = try JobClient(endpoint: listen)
        // Ready: registered, and their credit (sent after registering) arrived and is not in a claim in flight.
        try await waitUntil("both workers to offer their 32 slots") {
            let workers = try await client.status().workers
            return workers.count == 2 && workers.allSatisfy { $0.freeSlots == 32 }
        }
        _ = try await client.push(Array(repeating: JobSpec(kind: "hold"), count: 12))
        let store = try DatabaseQueue(path: coordinator.storePath)
        try await waitUntil("the 12 jobs to run") {
            try await store.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE state = 'running'") == 12
            }
        }
        let perWorker = try await store.read { db in
            try Int.fetchAll(db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE state = 'running' GROUP BY worker")
        }
        #expect(perWorker == [6, 6], "jobs per worker: \(perWorker)")
        await client.close()
    }
}
