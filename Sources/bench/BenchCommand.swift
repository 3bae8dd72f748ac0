import ArgumentParser
import Foundation
import Logging
import TributaryCommandSupport
import TributaryDemo

/// `tributary-bench`: Tributary's figures beside baselines measured in the same run. Build with `-c release`.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tributary-bench",
        abstract: "Measure Tributary against baselines in the same run and print their ratios (use a release build).",
        discussion: """
            import: pull requests pushed in jobs of 1,000 rows to a coordinator with local workers, until the last
              job is durable, against the same rows inserted through SQLite's C API in 1,000-row transactions.
            memory: the coordinator's peak RSS during the import, alone and with a subscriber that never reads.
            jobs: empty jobs pushed and completed durably, against a single-process SQLite queue doing each job's
              three writes (enqueue, claim, complete) through the C API.
            latency: from a worker's save() call to a subscriber receiving its didSave, at 1,000 saves/s and at 80%
              of the maximum rate, against ZeroMQ round trips over loopback on this machine.
            restart: a coordinator's start, from launch to serving, on a store with 100,000 queued jobs, against
              the same start on an empty store.
            """)

    enum Benchmark: String, ExpressibleByArgument, CaseIterable {
        case `import`, memory, jobs, latency, restart
    }

    @Option(help: "Pull requests to import.")
    var rows = 1_000_000

    @Option(help: "Distinct users among authors and reviewers (default: rows / 50).")
    var users: Int?

    @Option(help: "Local worker processes.")
    var workers = 2

    @Option(help: "Import jobs each worker runs at once (its --concurrency; default: the worker's).")
    var importConcurrency: Int?

    @Option(help: "Empty jobs for the jobs benchmark.")
    var jobs = 100_000

    @Option(help: "Jobs each worker runs at once in the jobs benchmark (empty jobs are all round trip).")
    var jobConcurrency = 512

    @Option(help: "Saves per latency measurement.")
    var saves = 5_000

    @Option(help: "Run only these benchmarks (repeatable): import, memory, jobs, latency, restart.")
    var only: [Benchmark] = []

    @Flag(help: "A quick run: 100,000 rows, 10,000 jobs, 1,000 saves.")
    var quick = false

    func validate() throws {
        guard rows > 0, workers > 0, jobConcurrency > 0 else {
            throw ValidationError("--rows, --workers and --job-concurrency must be positive")
        }
        if let users, users <= 0 { throw ValidationError("--users must be positive") }
    }

    func run() async throws {
        let rows = quick ? 100_000 : self.rows
        let users = self.users ?? max(1, rows / 50)
        let selected = Set(only.isEmpty ? Benchmark.allCases : only)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tributary-bench-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        Terminal.error("bench: \(rows) pull requests by \(users) users, \(workers) workers, in \(directory.path)")

        if selected.contains(.import) || selected.contains(.memory) {
            try await runImport(rows: rows, users: users, selected: selected, directory: directory)
        }
        if selected.contains(.jobs) {
            let benchmark = JobsBenchmark(
                jobs: quick ? 10_000 : jobs, workers: workers, concurrency: jobConcurrency, directory: directory)
            let tributary = try await benchmark.run()
            Terminal.line(
                Figure(name: "jobs", tributary: tributary, baseline: try benchmark.baseline(), unit: "jobs/s").line)
        }
        if selected.contains(.latency) {
            try await runLatency(saves: quick ? 1_000 : saves, directory: directory)
        }
        if selected.contains(.restart) {
            let (queued, empty) = try await RestartBenchmark(jobs: quick ? 10_000 : jobs, directory: directory).run()
            Terminal.line(
                Figure(
                    name: "restart (queued jobs)", tributary: queued.seconds * 1000, baseline: empty.seconds * 1000,
                    unit: "ms", smallerIsBetter: true, note: "baseline: the same start on an empty store"
                ).line)
        }
    }

    private func runLatency(saves: Int, directory: URL) async throws {
        var logger = Logger(label: "tributary.bench")
        logger.logLevel = .warning
        let benchmark = LatencyBenchmark(saves: saves, directory: directory, logger: logger)
        let baseline = Percentiles(try LatencyBenchmark.zeroMQRoundTrips(10_000))
        let maximum = try await benchmark.run(rate: nil).savesPerSecond
        for (label, rate) in [("1000/s", 1_000.0), ("80% of max", (maximum * 0.8).rounded())] {
            let (latencies, reached) = try await benchmark.run(rate: rate)
            let measured = Percentiles(latencies)
            let note = "\(Int(reached)) saves/s of \(Int(maximum)) max; baseline: ZeroMQ round trip"
            for (name, value, base) in [
                ("p50", measured.p50, baseline.p50), ("p99", measured.p99, baseline.p99),
                ("max", measured.max, baseline.max),
            ] {
                Terminal.line(
                    Figure(
                        name: "feed latency \(name) @\(label)", tributary: value.seconds * 1000,
                        baseline: base.seconds * 1000, unit: "ms", smallerIsBetter: true, note: note
                    ).line)
            }
        }
    }

    private func runImport(rows: Int, users: Int, selected: Set<Benchmark>, directory: URL) async throws {
        let input = DemoData.pullRequests(count: rows, users: users)
        let benchmark = ImportBenchmark(
            input: input, rows: rows, workers: workers, concurrency: importConcurrency, directory: directory)
        let plain = try await benchmark.run(stalledSubscriber: false)
        if selected.contains(.import) {
            let values = DemoData.pullRequestValues(count: rows, users: users)
            let sameSchema = try SQLiteBaseline(
                pullRequests: values, users: users, path: directory.appendingPathComponent("baseline.sqlite").path
            ).run()
            let limit = try SQLiteBaseline(
                pullRequests: values, users: users, path: directory.appendingPathComponent("limit.sqlite").path,
                layout: .integerKeys, rowsPerTransaction: 50_000, cacheSize: -262_144
            ).run()
            let peer = try PeerBaseline(input: input, directory: directory).run()
            for (name, baseline, note) in [
                ("import", sameSchema, "baseline: raw SQLite, the store's schema, 1,000-row transactions"),
                ("import vs the limit", limit, "baseline: C API, integer keys, 50,000-row transactions, 256 MiB"),
                ("import vs the peer", peer, "baseline: one Python process, json + sqlite3, integer keys"),
            ] {
                Terminal.line(
                    Figure(
                        name: name, tributary: plain.rowsPerSecond, baseline: baseline, unit: "rows/s", note: note
                    ).line)
            }
        }
        if selected.contains(.memory) {
            let stalled = try await benchmark.run(stalledSubscriber: true)
            Terminal.line(
                Figure(
                    name: "memory (stalled sub)", tributary: stalled.coordinatorPeakBytes / 1_048_576,
                    baseline: plain.coordinatorPeakBytes / 1_048_576, unit: "MB", smallerIsBetter: true,
                    note: "baseline: the same import with no subscriber"
                ).line)
            Terminal.line(
                Figure(
                    name: "import (stalled sub)", tributary: stalled.rowsPerSecond, baseline: plain.rowsPerSecond,
                    unit: "rows/s", note: "baseline: the same import with no subscriber"
                ).line)
        }
    }
}
