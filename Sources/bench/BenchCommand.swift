import ArgumentParser
import Foundation
import Tributary
import TributaryCommandSupport

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
            """)

    enum Benchmark: String, ExpressibleByArgument, CaseIterable {
        case `import`, memory
    }

    @Option(help: "Pull requests to import.")
    var rows = 1_000_000

    @Option(help: "Distinct users among authors and reviewers (default: rows / 50).")
    var users: Int?

    @Option(help: "Local worker processes.")
    var workers = 2

    @Option(help: "Run only these benchmarks (repeatable): import, memory.")
    var only: [Benchmark] = []

    @Flag(help: "A quick run: 100,000 rows.")
    var quick = false

    func validate() throws {
        guard rows > 0, workers > 0 else { throw ValidationError("--rows and --workers must be positive") }
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

        let benchmark = ImportBenchmark(
            input: DemoData.pullRequests(count: rows, users: users), rows: rows, workers: workers,
            directory: directory)
        let plain = try await benchmark.run(stalledSubscriber: false)
        if selected.contains(.import) {
            let baseline = try SQLiteBaseline(
                pullRequests: DemoData.pullRequestValues(count: rows, users: users), users: users,
                path: directory.appendingPathComponent("baseline.sqlite").path
            ).run()
            Terminal.line(
                Figure(name: "import", tributary: plain.rowsPerSecond, baseline: baseline, unit: "rows/s").line)
        }
        if selected.contains(.memory) {
            let stalled = try await benchmark.run(stalledSubscriber: true)
            Terminal.line(
                Figure(
                    name: "memory (stalled sub)", tributary: stalled.coordinatorPeakBytes / 1_048_576,
                    baseline: plain.coordinatorPeakBytes / 1_048_576, unit: "MB", smallerIsBetter: true,
                    note: "baseline: the same import with no subscriber; \(Int(stalled.rowsPerSecond)) rows/s"
                ).line)
        }
    }
}
