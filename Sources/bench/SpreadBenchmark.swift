import Foundation
import Logging
import Synchronization
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryDemo

/// The `spread` figure: 12 import jobs pushed at once to 2 idle workers (in this process, each running the import
/// job as a worker process does, at the worker's default concurrency) and a real coordinator: how many jobs the
/// busier worker ran. Spread evenly, 6; taken by the first worker's credit, 12.
struct SpreadBenchmark {
    let directory: URL
    let logger: Logger

    /// How many jobs a worker ran.
    private final class Tally: Sendable {
        let count = Mutex(0)
    }

    /// Runs an import job and counts it for its worker.
    private struct CountedImport: JobHandler {
        let kind = ImportJob.kind
        let ran: Tally
        let inner = ImportJobHandler()

        func run(_ job: JobRun) async throws {
            ran.count.withLock { $0 += 1 }
            try await inner.run(job)
        }
    }

    /// The jobs each worker ran.
    func run(jobs: Int = 12, rowsPerJob: Int = 1_000) async throws -> [Int] {
        let coordinator = try await CoordinatorProcess.startDemoStore(
            in: directory.appendingPathComponent("spread"), arguments: ["--log-level", "warning"]
        ).process
        let counters = (0..<2).map { _ in Tally() }
        let workers = counters.enumerated().map { index, ran in
            var configuration = WorkerConfiguration()
            configuration.endpoint = coordinator.listenEndpoint
            configuration.name = "spread-\(index)"
            configuration.register(CountedImport(ran: ran))
            return Task { [configuration, logger] in
                try await WorkerService(configuration: configuration, logger: logger).run()
            }
        }
        defer { for worker in workers { worker.cancel() } }
        do {
            let client = try JobClient(endpoint: coordinator.listenEndpoint)
            // Ready: registered and offering their slots (a worker's credit follows its registration).
            func ready() async throws -> Bool {
                let offering = try await client.status().workers.filter {
                    $0.freeSlots == WorkerConfiguration.defaultConcurrency
                }
                return offering.count == workers.count
            }
            while try await !ready() {
                try await Task.sleep(for: .milliseconds(20))
            }
            let input = DemoData.pullRequests(count: jobs * rowsPerJob, users: 100)
            let specs = NDJSONChunker.chunks(of: input, rowsPerJob: rowsPerJob).map {
                ImportJob.spec(entity: "PullRequest", payload: $0.payload, rows: $0.rows)
            }
            let pushed = try await JobPusher(client: client).push(specs)
            let status = try await client.waitForBatch(pushed.batch, every: .milliseconds(20))
            guard status.deadJobs == 0 else { throw BaselineError("spread: an import job failed") }
            await client.close()
            for worker in workers { worker.cancel() }
            await coordinator.stop()
            return counters.map { $0.count.withLock { $0 } }
        } catch {
            await coordinator.stop()
            throw error
        }
    }
}
