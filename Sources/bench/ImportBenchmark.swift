import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import ZeroMQ

/// The import figure: generated pull requests pushed in jobs of 1,000 rows (by default) to a coordinator with a local worker
/// pool, timed from the first push until the last job is durable. Also reports the coordinator's peak RSS.
struct ImportBenchmark {
    struct Result {
        let rowsPerSecond: Double
        let coordinatorPeakBytes: Double
        /// The store on disk after the coordinator stopped.
        let footprint: StoreFootprint?
    }

    let input: Data
    let rows: Int
    let workers: Int
    /// More arguments for the coordinator (its worker concurrency, its commit budget).
    let extraArguments: [String]
    let directory: URL
    /// Rows per import job (`tributary push import --chunk`) and per save (`batch_size`; nil: the worker's default).
    var rowsPerJob = 1000
    var batchSize: Int?
    /// How the coordinator is started: alone, or as a cluster's primary with a standby.
    var launch = CoordinatorLaunch.alone

    /// - Parameter stalledSubscriber: connect a subscriber that never reads, to show what it costs.
    /// - Parameter name: the folder of this run's store, removed once measured unless `keep`.
    func run(stalledSubscriber: Bool, name: String? = nil, keep: Bool = false) async throws -> Result {
        let folder = directory.appendingPathComponent(name ?? (stalledSubscriber ? "import-stalled" : "import"))
        defer { if !keep { try? FileManager.default.removeItem(at: folder) } }
        let launched = try await launch.start(
            folder, ["--workers", String(workers), "--log-level", "warning"] + extraArguments)
        let coordinator = launched.process
        let log = launched.logPath
        let context = try ZMQContext()
        var stalled: ZMQSocket?
        do {
            if stalledSubscriber {
                let socket = try context.makeSocket(.sub)
                try socket.subscribe("")
                try socket.connect(coordinator.feedEndpoint)
                stalled = socket
            }
            let client = try JobClient(endpoint: coordinator.listenEndpoint)
            try await waitForWorkers(client)
            let specs = NDJSONChunker.chunks(of: input, rowsPerJob: rowsPerJob).map {
                ImportJob.spec(entity: "PullRequest", payload: $0.payload, rows: $0.rows, batchSize: batchSize)
            }
            let started = ContinuousClock.now
            let pushed = try await JobPusher(client: client).push(specs)
            let status = try await client.waitForBatch(pushed.batch, every: .milliseconds(20))
            let elapsed = ContinuousClock.now - started
            guard status.deadJobs == 0, status.doneRows == UInt64(rows) else {
                throw BaselineError("import finished with \(status.deadJobs) failed jobs; see \(log)")
            }
            let peak = ProcessMemory.peakResidentBytes(pid: coordinator.pid)
            await client.close()
            stalled?.close()
            stalled = nil
            await launched.stop()
            context.terminate()
            return Result(
                rowsPerSecond: Double(rows) / elapsed.seconds, coordinatorPeakBytes: peak,
                footprint: try? StoreFootprint(path: folder.appendingPathComponent("store.sqlite").path))
        } catch {
            stalled?.close()
            await launched.stop()
            throw error
        }
    }

    private func waitForWorkers(_ client: JobClient) async throws {
        while try await client.status().workers.count < workers {
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
