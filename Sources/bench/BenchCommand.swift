import ArgumentParser
import Foundation
import Logging
import TributaryCommandSupport
import TributaryCoordinator
import TributaryDemo
import TributaryTestSupport

/// `tributary-bench`: Tributary's figures beside baselines measured in the same run. Build with `-c release`.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tributary-bench",
        abstract: "Measure Tributary against baselines in the same run and print their ratios (use a release build).",
        discussion: """
            import: pull requests pushed in jobs of 1,000 rows to a coordinator with local workers, until the last
              job is durable, against the same rows inserted through SQLite's C API (into the store's schema in
              1,000-row transactions; and as *the limit*: integer keys, 50,000-row transactions) and by one Python
              process (*the peer*). The import and the limit run --rounds times, alternated; their medians compare.
            scaling: the import at 100,000 and 5,000,000 rows against the import's median, and with 1 and 4 workers
              against 2.
            memory: the coordinator's peak RSS during the import, alone and with a subscriber that never reads.
            jobs: empty jobs pushed and completed durably, against a single-process SQLite queue doing each job's
              three writes (enqueue, claim, complete) through the C API; then the same jobs while, every second, 4
              dashboard snapshots (/api/dashboard) and a /metrics scrape are asked of the coordinator's HTTP
              endpoint, against the plain jobs figure (`jobs (dashboards)`). The two run --rounds times, alternated;
              their medians compare. Then `jobs @16`: the same jobs with 16 in flight per worker.
            job-latency: one empty job at a time through a coordinator with one local worker, from its push to its \
              end seen on the feed's `$jobs` topic (p50, p99), against what such a job needs at least: three ZeroMQ \
              round trips and three one-row commits through SQLite's C API, synced (the push, the lease with the \
              job's assignment, the completing save).
            latency: from a worker's save() call to a subscriber receiving its didSave, at 1,000 saves/s and at 80%
              of the maximum rate, against ZeroMQ round trips over loopback on this machine.
            saves: the save round trip: one view context saving one small edit at a time, from save() to its answer
              (p50, p99, saves/s), against a ZeroMQ round trip plus a one-row commit through SQLite's C API (the
              limit for one saver); the same saver editing and saving in one block (`try context.save()` inside
              performAndWait); and `saves, 16 savers`: 16 contexts over one connection saving at once (saves/s,
              p50, p99), against one saver; each again at --durability normal.
            live: a view over the import's store (--rows pull requests) that holds what it fetched, showing a \
              1,000-row live result (the open pull requests with the most additions), in a process of its own: from \
              its start to the first snapshot, and its peak resident memory, against the same view loading the whole \
              entity first (--rounds rounds, alternated; medians). Then a live result's update latency: 4 savers in \
              a process of their own sharing 1,000 saves/s, from each commit (its didSave's committedAt) to the live result's consumer \
              receiving it, against a plain subscriber's didSave of the same commits.
            aggregates: on the same store, the pull requests' count and sum of additions per author.login as one \
              aggregate fetch, against a view loading the pull requests and users and adding up in Swift; the same \
              fetch with the model declaring an index on PullRequest(author, additions), against it without \
              (--rounds rounds each; medians; the three must agree). Then a live aggregate's update latency as the \
              live result's above (the count and greatest login of the users the saves insert).
            spread: 12 import jobs of 1,000 rows pushed at once to 2 idle workers (32 slots each): the most either \
              ran (6 when spread evenly, 12 when the first worker's credit takes them all).
            standby (needs root and Debian's etcd, which `make bench` installs): `save round trip` (p50, p99, \
              saves/s), `jobs` and `import` with the coordinator as a cluster's primary whose commits each wait for \
              a synchronous standby on another host (network namespaces joined by a veth pair), against the same \
              coordinator alone, alternated --rounds times (medians).
            restart: a coordinator's start, from launch to serving, on a store with 100,000 queued jobs, against
              the same start on an empty store.
            fanout (only with --only fanout; needs root): --subscribers `tributary subscribe` processes on two
              hosts (network namespaces) following an import on a third, straight from the coordinator and then
              through a `tributary relay` on each subscriber host: events delivered per second, latency from commit
              to subscriber, the coordinator's CPU time and peak RSS.
            merge (only with --only merge): the writer alone: the import's change sets, built as a worker builds
              them before the clock starts, applied in this process through the coordinator's group commit
              (--merge-group saves per commit, 32): rows/s and the CPU time per row, for comparing builds; --rounds
              runs it that many times.
            """)

    enum Benchmark: String, ExpressibleByArgument, CaseIterable {
        case `import`, memory, scaling, jobs, latency, saves, live, aggregates, spread, restart, standby, fanout, merge
        case jobLatency = "job-latency"

        /// What a run without --only measures (fanout needs root and takes its own run; merge is for comparing
        /// builds).
        static let byDefault: [Benchmark] = [
            .import, .memory, .scaling, .jobs, .jobLatency, .latency, .saves, .live, .aggregates, .spread, .restart,
            .standby,
        ]
    }

    @Option(help: "Pull requests to import.")
    var rows = 1_000_000

    @Option(help: "Distinct users among authors and reviewers (default: rows / 50).")
    var users: Int?

    @Option(help: "Local worker processes.")
    var workers = 2

    @Option(help: "Import jobs each worker runs at once (its --concurrency; default: the worker's).")
    var importConcurrency: Int?

    @Option(help: "The coordinator's --commit-rows for the import (default: the coordinator's).")
    var commitRows: Int?

    @Option(help: "The coordinator's --commit-seconds for the import (default: the coordinator's).")
    var commitSeconds: Double?

    @Option(help: "Rows per import job, as `tributary push import --chunk`.")
    var rowsPerJob = 1000

    @Option(help: "Rows per save of an import job (its batch_size; default: the worker's, 1,000).")
    var batchSize: Int?

    @Option(help: "Saves per group commit in the merge benchmark (the saves in flight an import's commit covers).")
    var mergeGroup = 32

    @Flag(help: "Import without the baselines (for tuning runs).")
    var noBaselines = false

    @Option(
        help: """
            Rounds of the import and *the limit*, and of the jobs plain and with dashboards, each pair run \
            alternately: their figures are the medians of the rounds (the machine drifts by ±25% between minutes).
            """)
    var rounds = 3

    @Option(help: "Empty jobs for the jobs benchmark.")
    var jobs = 100_000

    @Option(help: "Jobs each worker runs at once in the jobs benchmark (empty jobs are all round trip).")
    var jobConcurrency = 512

    @Option(help: "Saves per latency measurement.")
    var saves = 5_000

    @Option(help: "Subscriber processes for the fanout benchmark, spread over two hosts.")
    var subscribers = 100

    @Option(help: "Pull requests imported in the fanout benchmark (jobs of 500 rows, one commit each).")
    var fanoutRows = 100_000

    @Option(
        help: ArgumentHelp(
            "Run only these benchmarks (repeatable): import, memory, scaling, jobs, job-latency, latency, saves, live, "
                + "aggregates, spread, restart, standby, fanout, merge."))
    var only: [Benchmark] = []

    /// Set when the bench runs itself as the live benchmark's view probe: `fetched` or `entity`.
    @Option(help: .hidden)
    var viewProbe: String?

    /// Set when the bench runs itself inside host A of the standby figures: the hosts (``StandbyBenchmark/Hosts``).
    @Option(help: .hidden)
    var standbyHosts: String?

    /// Set when the bench runs itself as the live benchmark's saver (a worker of ``LatencyProbe`` jobs).
    @Flag(help: .hidden)
    var saveProbe = false

    @Option(help: .hidden)
    var probeJobs = ""

    @Option(help: .hidden)
    var probeFeed = ""

    @Flag(help: "A quick run: 100,000 rows, 10,000 jobs, 1,000 saves.")
    var quick = false

    func validate() throws {
        guard rows > 0, workers > 0, jobConcurrency > 0 else {
            throw ValidationError("--rows, --workers and --job-concurrency must be positive")
        }
        if let users, users <= 0 { throw ValidationError("--users must be positive") }
        guard rowsPerJob > 0, (batchSize ?? 1) > 0 else {
            throw ValidationError("--rows-per-job and --batch-size must be positive")
        }
        guard (1...9).contains(rounds) else { throw ValidationError("--rounds must be between 1 and 9") }
        guard mergeGroup > 0 else { throw ValidationError("--merge-group must be positive") }
    }

    func run() async throws {
        if saveProbe {
            var logger = Logger(label: "tributary.bench")
            logger.logLevel = .warning
            try await LiveResultsBenchmark.runSaver(jobs: probeJobs, logger: logger)
            return
        }
        if let viewProbe {
            try await LiveResultsBenchmark.runProbe(
                wholeEntity: viewProbe == "entity", jobs: probeJobs, feed: probeFeed)
            return
        }
        // The baselines run SQLite in this process with the coordinator's process-wide settings.
        SQLiteProcessSettings.apply()
        let rows = quick ? 100_000 : self.rows
        let users = self.users ?? max(1, rows / 50)
        let selected = Set(only.isEmpty ? Benchmark.byDefault : only)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tributary-bench-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        if let standbyHosts {
            guard let hosts = StandbyBenchmark.Hosts(option: standbyHosts) else {
                throw ValidationError("--standby-hosts must be A,B,A-ADDRESS,B-ADDRESS")
            }
            try await StandbyBenchmark(
                hosts: hosts, directory: directory, rows: rows, saves: saves, jobs: jobs, workers: workers,
                rounds: rounds
            ).run()
            return
        }
        Terminal.error("bench: \(rows) pull requests by \(users) users, \(workers) workers, in \(directory.path)")

        // The live figures read the store of the import's first round when it runs, of an import of their own if not.
        let liveStore = directory.appendingPathComponent("live-store")
        var imported = false
        if selected.contains(.import) || selected.contains(.memory) || selected.contains(.scaling) {
            try await runImport(
                rows: rows, users: users, selected: selected, directory: directory,
                keepingStoreAt: selected.contains(.live) || selected.contains(.aggregates) ? liveStore : nil)
            imported = selected.contains(.live) || selected.contains(.aggregates)
        }
        if selected.contains(.merge) {
            try await runMerge(rows: rows, users: users, directory: directory)
        }
        if selected.contains(.jobs) {
            let benchmark = JobsBenchmark(
                jobs: quick ? 10_000 : jobs, workers: workers, concurrency: jobConcurrency, directory: directory)
            try await runJobs(benchmark)
        }
        if selected.contains(.latency) {
            try await runLatency(saves: quick ? 1_000 : saves, directory: directory)
        }
        if selected.contains(.jobLatency) {
            try await runJobLatency(jobs: quick ? 200 : 2_000, directory: directory)
        }
        if selected.contains(.saves) {
            try await runSaves(saves: quick ? 1_000 : saves, directory: directory)
        }
        if selected.contains(.aggregates) {
            try await runAggregates(
                rows: rows, users: users, saves: quick ? 1_000 : saves, directory: directory, store: liveStore,
                imported: imported)
            imported = true
        }
        if selected.contains(.live) {
            try await runLive(
                rows: rows, users: users, saves: quick ? 1_000 : saves, directory: directory, store: liveStore,
                imported: imported)
        }
        if selected.contains(.spread) {
            var logger = Logger(label: "tributary.bench")
            logger.logLevel = .warning
            let ran = try await SpreadBenchmark(directory: directory, logger: logger).run()
            Terminal.line(
                "spread                 the busier of 2 idle workers ran \(ran.max() ?? 0) of 12 import jobs "
                    + "(\(ran.map(String.init).joined(separator: " and ")))")
        }
        if selected.contains(.standby) {
            try await runStandby(rows: rows)
        }
        if selected.contains(.fanout) {
            try await runFanOut(directory: directory)
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

    /// The jobs, plain and with a ``DashboardLoad`` beside them, alternated `--rounds` times: each figure is the
    /// median of its rounds, and `jobs (dashboards)` compares with the plain jobs of the same minutes.
    private func runJobs(_ benchmark: JobsBenchmark) async throws {
        let rounds = quick ? 1 : self.rounds
        var plain: [Double] = []
        var loaded: [Double] = []
        var tally = DashboardLoad.Tally()
        for round in 1...rounds {
            plain.append(try await benchmark.run(name: "jobs-\(round)").jobsPerSecond)
            let outcome = try await benchmark.run(name: "jobs-dashboards-\(round)", dashboards: true)
            guard let load = outcome.dashboards, load.ticks > 0 else {
                throw BaselineError("jobs (dashboards): the dashboard load made no requests")
            }
            loaded.append(outcome.jobsPerSecond)
            tally.add(load)
        }
        let of = rounds > 1 ? "; medians of \(rounds) alternated rounds" : ""
        Terminal.line(
            Figure(
                name: "jobs", tributary: Self.median(plain), baseline: try benchmark.baseline(), unit: "jobs/s",
                note: rounds > 1 ? "tributary: the median of \(rounds) rounds" : ""
            ).line)
        if rounds > 1 {
            let format = { (figures: [Double]) in figures.map { Figure.format($0) }.joined(separator: " / ") }
            Terminal.line("jobs rounds            plain \(format(plain)), dashboards \(format(loaded)) jobs/s")
        }
        Terminal.error("bench: jobs (dashboards): \(tally.summary), \(tally.failures.count) failed")
        guard tally.failures.isEmpty else {
            let shown = tally.failures.prefix(5).joined(separator: "; ")
            throw BaselineError(
                "jobs (dashboards): \(tally.failures.count) of \(tally.snapshots + tally.scrapes + tally.failures.count) "
                    + "requests to the HTTP endpoint did not answer 200: \(shown)")
        }
        Terminal.line(
            Figure(
                name: "jobs (dashboards)", tributary: Self.median(loaded), baseline: Self.median(plain),
                unit: "jobs/s", note: "\(tally.summary); baseline: the plain jobs figure of this run\(of)"
            ).line)
        // Few in flight: each job's round trip (claim, run, completion) counts rather than the throughput.
        let few = JobsBenchmark(
            jobs: benchmark.jobs, workers: benchmark.workers, concurrency: 16, directory: benchmark.directory)
        Terminal.line(
            Figure(
                name: "jobs @16", tributary: try await few.run(name: "jobs-16").jobsPerSecond,
                baseline: Self.median(plain), unit: "jobs/s",
                note: "16 in flight per worker; baseline: the jobs figure (\(benchmark.concurrency) in flight)"
            ).line)
        // What syncing each commit costs: the plain jobs on a coordinator at --durability normal.
        var unsynced = benchmark
        unsynced.durability = .normal
        Terminal.line(
            Figure(
                name: "jobs @full", tributary: Self.median(plain),
                baseline: try await unsynced.run(name: "jobs-normal").jobsPerSecond, unit: "jobs/s",
                note: "baseline: the same at --durability normal"
            ).line)
    }

    /// The import's coordinator options this run sets: its workers' concurrency and its commit budget.
    private var coordinatorArguments: [String] {
        (importConcurrency.map { ["--worker-concurrency", String($0)] } ?? [])
            + (commitRows.map { ["--commit-rows", String($0)] } ?? [])
            + (commitSeconds.map { ["--commit-seconds", String($0)] } ?? [])
    }

    /// The standby figures (``StandbyBenchmark``): this executable run again inside host A of two network
    /// namespaces it makes, printing them.
    private func runStandby(rows: Int) async throws {
        guard NetworkNamespaces.available else {
            Terminal.error("bench: standby needs root and iproute2 to make network namespaces; skipped")
            return
        }
        let namespaces = try NetworkNamespaces(spokes: 1)
        defer { namespaces.remove() }
        let process = Process()
        (process.executableURL, process.arguments) = namespaces.command(
            in: 0, try Executables.sibling("tributary-bench"),
            [
                "--standby-hosts", StandbyBenchmark.Hosts(namespaces).option, "--rows", String(rows), "--saves",
                String(quick ? 1_000 : saves), "--jobs", String(quick ? 10_000 : jobs), "--workers", String(workers),
                "--rounds", String(quick ? 1 : rounds),
            ])
        process.standardInput = FileHandle.nullDevice
        try process.run()
        while process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        guard process.terminationStatus == 0 else {
            throw BaselineError("the standby figures failed (exit \(process.terminationStatus))")
        }
    }

    private func runFanOut(directory: URL) async throws {
        guard NetworkNamespaces.available else {
            Terminal.error("bench: fanout needs root and iproute2 to make network namespaces; skipped")
            return
        }
        let benchmark = FanOutBenchmark(
            subscribers: subscribers, rows: quick ? 20_000 : fanoutRows, directory: directory)
        var outcomes: [Bool: FanOutBenchmark.Outcome] = [:]
        for throughRelay in [false, true] {
            let outcome = try await benchmark.run(throughRelay: throughRelay)
            outcomes[throughRelay] = outcome
            Terminal.line(
                """
                fanout \(throughRelay ? "via relays" : "direct    "): \(subscribers) subscribers on 2 hosts, \
                \(outcome.commits) commits: \(outcome.events.formatted()) events in \
                \(String(format: "%.1f", outcome.seconds)) s (\(Int(outcome.eventsPerSecond).formatted())/s); \
                latency p50 \(String(format: "%.1f", outcome.medianP50)) ms, p99 \(String(format: "%.1f", outcome.medianP99)) ms \
                (median subscriber), worst p99 \(String(format: "%.1f", outcome.worstP99)) ms; coordinator CPU \
                \(String(format: "%.1f", outcome.coordinatorCPUSeconds)) s, peak RSS \
                \(Int(outcome.coordinatorPeakBytes / 1_048_576)) MB; import \(Int(outcome.importRowsPerSecond).formatted()) rows/s
                """)
        }
        if let relay = outcomes[true], let direct = outcomes[false] {
            Terminal.line(
                Figure(
                    name: "fanout coordinator CPU", tributary: relay.coordinatorCPUSeconds,
                    baseline: direct.coordinatorCPUSeconds, unit: "s", smallerIsBetter: true,
                    note: "via a relay per subscriber host; baseline: every subscriber on the coordinator"
                ).line)
        }
    }

    private func runLatency(saves: Int, directory: URL) async throws {
        var logger = Logger(label: "tributary.bench")
        logger.logLevel = .warning
        let benchmark = LatencyBenchmark(saves: saves, directory: directory, logger: logger)
        let baseline = Percentiles(try LatencyBenchmark.zeroMQRoundTrips(10_000))
        let maximum = try await benchmark.run(rate: nil, name: "max").savesPerSecond
        for (label, name, rate) in [("1000/s", "1000", 1_000.0), ("80% of max", "80", (maximum * 0.8).rounded())] {
            let (latencies, reached) = try await benchmark.run(rate: rate, name: name)
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

    private func runJobLatency(jobs: Int, directory: URL) async throws {
        let roundTrips = Percentiles(try LatencyBenchmark.zeroMQRoundTrips(10_000))
        let commits = Percentiles(try SaveRoundTripBenchmark.oneRowCommits(jobs, synchronous: "FULL", in: directory))
        // Three of each: the push, the lease and assignment, the completing save (its end published on the feed).
        let limit = (p50: (roundTrips.p50 + commits.p50) * 3, p99: (roundTrips.p99 + commits.p99) * 3)
        let measured = Percentiles(try await JobLatencyBenchmark(jobs: jobs, directory: directory).run())
        let parts =
            "3 × (round trip \(Figure.format(roundTrips.p50.seconds * 1000)) + commit "
            + "\(Figure.format(commits.p50.seconds * 1000)) ms)"
        Self.printPercentiles(
            "job latency", measured, limit: limit,
            note: "push → done on $jobs, one job at a time; baseline (the limit): \(parts)")
    }

    /// Prints `name p50` and `name p99` in milliseconds against the limit's.
    private static func printPercentiles(
        _ name: String, _ measured: Percentiles, limit: (p50: Duration, p99: Duration), note: String
    ) {
        for (suffix, value, base) in [("p50", measured.p50, limit.p50), ("p99", measured.p99, limit.p99)] {
            Terminal.line(
                Figure(
                    name: "\(name) \(suffix)", tributary: value.seconds * 1000, baseline: base.seconds * 1000,
                    unit: "ms", smallerIsBetter: true, note: note
                ).line)
        }
    }

    private func runSaves(saves: Int, directory: URL) async throws {
        let baseline = Percentiles(try LatencyBenchmark.zeroMQRoundTrips(10_000))
        // The limit for one saver: a ZeroMQ round trip and a one-row commit through SQLite's C API, back to back,
        // synced as the coordinator's default durability (full) syncs.
        let commits = Percentiles(try SaveRoundTripBenchmark.oneRowCommits(saves, synchronous: "FULL", in: directory))
        let limit = (p50: baseline.p50 + commits.p50, p99: baseline.p99 + commits.p99)
        let roundTrips = SaveRoundTripBenchmark(directory: directory)
        let alone = try await roundTrips.run(saves: saves, savers: 1)
        let measured = Percentiles(alone.latencies)
        let parts =
            "round trip \(Figure.format(baseline.p50.seconds * 1000)) + commit \(Figure.format(commits.p50.seconds * 1000)) ms"
        Self.printPercentiles(
            "save round trip", measured, limit: limit,
            note: "one view context, one edit a save; baseline: a ZeroMQ round trip + a one-row C-API commit")
        Terminal.line(
            Figure(
                name: "save round trip", tributary: alone.savesPerSecond, baseline: 1 / limit.p50.seconds,
                unit: "saves/s", note: "the edit between saves included; baseline (the limit for one saver): \(parts)"
            ).line)
        // The same saver editing and saving in one block of its context, on a thread of its own (a UI's main thread).
        var inBlocks = roundTrips
        inBlocks.inBlock = true
        let aloneInBlocks = try await inBlocks.run(saves: saves, savers: 1)
        let inBlockPercentiles = Percentiles(aloneInBlocks.latencies)
        Terminal.line(
            Figure(
                name: "save round trip (in a block)", tributary: aloneInBlocks.savesPerSecond,
                baseline: 1 / limit.p50.seconds, unit: "saves/s",
                note:
                    "try context.save() inside performAndWait, p50 \(Figure.format(inBlockPercentiles.p50.seconds * 1000)) ms, "
                    + "p99 \(Figure.format(inBlockPercentiles.p99.seconds * 1000)) ms; baseline: the limit for one saver"
            ).line)
        let shared = try await roundTrips.run(saves: saves * 4, savers: 16)
        let sharedPercentiles = Percentiles(shared.latencies)
        Terminal.line(
            Figure(
                name: "saves, 16 savers", tributary: shared.savesPerSecond, baseline: alone.savesPerSecond,
                unit: "saves/s",
                note:
                    "16 contexts over one connection at once (a request handler's), p50 \(Figure.format(sharedPercentiles.p50.seconds * 1000)) ms, p99 "
                    + "\(Figure.format(sharedPercentiles.p99.seconds * 1000)) ms; baseline: one saver"
            ).line)
        // What syncing each commit costs: the same savers on a coordinator at --durability normal.
        var unsynced = roundTrips
        unsynced.durability = .normal
        let aloneNormal = try await unsynced.run(saves: saves, savers: 1)
        let sharedNormal = try await unsynced.run(saves: saves * 4, savers: 16)
        for (name, full, normal) in [
            ("save round trip", alone, aloneNormal), ("saves, 16 savers", shared, sharedNormal),
        ] {
            Terminal.line(
                Figure(
                    name: "\(name) @full", tributary: full.savesPerSecond, baseline: normal.savesPerSecond,
                    unit: "saves/s",
                    note: "p99 \(Figure.format(Percentiles(full.latencies).p99.seconds * 1000)) against "
                        + "\(Figure.format(Percentiles(normal.latencies).p99.seconds * 1000)) ms; "
                        + "baseline: the same at --durability normal"
                ).line)
        }
    }

    /// - Parameter imported: whether `store` holds the import's store already.
    private func runLive(
        rows: Int, users: Int, saves: Int, directory: URL, store: URL, imported: Bool
    ) async throws {
        let benchmark = LiveResultsBenchmark(directory: directory)
        defer { try? FileManager.default.removeItem(at: store) }
        if !imported { try await importStore(rows: rows, users: users, directory: directory, at: store) }
        let rounds = quick ? 1 : self.rounds
        let (fetched, whole) = try await benchmark.viewStart(store: store, rounds: rounds)
        let of = rounds > 1 ? "; medians of \(rounds) alternated rounds" : ""
        Terminal.line(
            Figure(
                name: "live view start", tributary: fetched.seconds * 1000, baseline: whole.seconds * 1000, unit: "ms",
                smallerIsBetter: true,
                note: "a view holding what it fetched, to a 1,000-row live result over \(rows.formatted()) pull "
                    + "requests; baseline: the view loading the whole entity first\(of)"
            ).line)
        Terminal.line(
            Figure(
                name: "live view memory", tributary: fetched.peakBytes / 1_048_576,
                baseline: whole.peakBytes / 1_048_576, unit: "MB", smallerIsBetter: true,
                note: "the view's process, peak RSS; baseline: the view loading the whole entity first\(of)"
            ).line)
        Self.printUpdate(
            try await benchmark.update(saves: saves, rate: 1_000), name: "live update",
            consumer: "the live result's consumer")
    }

    /// The aggregate figures on the import's store (an import of their own when none ran): a grouped count and sum
    /// by a to-one key path fetched without and with a declared index, against a view loading the entity and adding
    /// up in Swift; then a live aggregate's update latency at the rate of the live figures against a subscriber's.
    /// The store is kept for the live figures.
    private func runAggregates(
        rows: Int, users: Int, saves: Int, directory: URL, store: URL, imported: Bool
    ) async throws {
        if !imported { try await importStore(rows: rows, users: users, directory: directory, at: store) }
        let rounds = quick ? 1 : self.rounds
        let benchmark = AggregateBenchmark()
        let plain = try await benchmark.fetch(store: store, indexed: false, rounds: rounds)
        let indexed = try await benchmark.fetch(store: store, indexed: true, rounds: rounds)
        let swift = try await benchmark.inSwift(store: store, rounds: rounds)
        // Dropped again, so that the live figures read the store as imported.
        _ = try await benchmark.fetch(store: store, indexed: false, rounds: 0)
        guard AggregateBenchmark.agree(plain.groups, indexed.groups),
            AggregateBenchmark.agree(plain.groups, swift.groups)
        else {
            throw BaselineError("the aggregate fetches and the sums in Swift disagree")
        }
        let of = rounds > 1 ? "; medians of \(rounds) rounds" : ""
        Terminal.line(
            Figure(
                name: "aggregate fetch", tributary: plain.seconds * 1000, baseline: swift.seconds * 1000, unit: "ms",
                smallerIsBetter: true,
                note: "count and sum of additions of \(rows.formatted()) pull requests by author.login "
                    + "(\(plain.groups.count.formatted()) groups), one query; baseline: a view loading the pull "
                    + "requests and users and adding up in Swift\(of)"
            ).line)
        Terminal.line(
            Figure(
                name: "aggregate (index)", tributary: indexed.seconds * 1000, baseline: plain.seconds * 1000,
                unit: "ms", smallerIsBetter: true,
                note: "the same with the model declaring an index on PullRequest(author, additions); baseline: "
                    + "without it\(of)"
            ).line)
        Self.printUpdate(
            try await LiveResultsBenchmark(directory: directory).update(saves: saves, rate: 1_000, aggregate: true),
            name: "live aggregate",
            consumer: "a live aggregate's consumer (the count and greatest login of the users the saves insert)")
    }

    /// Imports the demo data into a store kept at `store`, for the figures that read a large store.
    private func importStore(rows: Int, users: Int, directory: URL, at store: URL) async throws {
        _ = try await ImportBenchmark(
            input: DemoData.pullRequests(count: rows, users: users), rows: rows, workers: workers,
            extraArguments: coordinatorArguments, directory: directory, rowsPerJob: rowsPerJob, batchSize: batchSize
        ).run(stalledSubscriber: false, name: store.lastPathComponent, keep: true)
    }

    /// Prints the p50 and p99 lines of an update latency measured by ``LiveResultsBenchmark/update(saves:rate:aggregate:)``.
    private static func printUpdate(
        _ measured: (live: [Duration], feed: [Duration], savesPerSecond: Double), name: String, consumer: String
    ) {
        let (tributary, baseline) = (Percentiles(measured.live), Percentiles(measured.feed))
        for (percentile, value, base) in [("p50", tributary.p50, baseline.p50), ("p99", tributary.p99, baseline.p99)] {
            Terminal.line(
                Figure(
                    name: "\(name) \(percentile)", tributary: value.seconds * 1000, baseline: base.seconds * 1000,
                    unit: "ms", smallerIsBetter: true,
                    note: "from the commit to \(consumer), at 1,000 saves/s by 4 savers "
                        + "(\(Int(measured.savesPerSecond)) commits/s); baseline: a subscriber's didSave of the same commits"
                ).line)
        }
    }

    /// - Parameter store: where the first round's store is kept (for the live figures), if anywhere.
    private func runImport(
        rows: Int, users: Int, selected: Set<Benchmark>, directory: URL, keepingStoreAt store: URL?
    ) async throws {
        let input = DemoData.pullRequests(count: rows, users: users)
        let benchmark = ImportBenchmark(
            input: input, rows: rows, workers: workers,
            extraArguments: coordinatorArguments, directory: directory, rowsPerJob: rowsPerJob, batchSize: batchSize)
        let plain = try await benchmark.run(
            stalledSubscriber: false, name: store?.lastPathComponent, keep: store != nil)
        if let footprint = plain.footprint {
            Terminal.line("store on disk           \(footprint.summary(rows: rows))")
        }
        let rounds = quick ? 1 : self.rounds
        var imports = [plain.rowsPerSecond]
        var peaks = [plain.coordinatorPeakBytes]
        func importRound(_ index: Int) async throws {
            let result = try await benchmark.run(stalledSubscriber: false, name: "import-\(index)")
            imports.append(result.rowsPerSecond)
            peaks.append(result.coordinatorPeakBytes)
        }
        if selected.contains(.import) && noBaselines {
            for index in 1..<rounds {
                try await importRound(index)
            }
            Terminal.line("import                 tributary \(Figure.format(Self.median(imports))) rows/s")
            if imports.count > 1 { Terminal.line(Self.roundsLine(imports: imports, limits: [])) }
        } else if selected.contains(.import) {
            let values = DemoData.pullRequestValues(count: rows, users: users)
            // Alternated with the import's rounds, each into a file of its own (removed once measured), so that both
            // medians span the same minutes.
            func limitRound(_ round: Int) throws -> Double {
                let path = directory.appendingPathComponent("limit-\(round).sqlite").path
                defer {
                    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
                }
                return try SQLiteBaseline(
                    pullRequests: values, users: users, path: path, layout: .integerKeys, rowsPerTransaction: 50_000,
                    cacheSize: -262_144
                ).run()
            }
            // The import at --durability normal, alternated too: what syncing each group commit costs.
            let unsynced = ImportBenchmark(
                input: input, rows: rows, workers: workers,
                extraArguments: coordinatorArguments + ["--durability", Durability.normal.rawValue],
                directory: directory,
                rowsPerJob: rowsPerJob, batchSize: batchSize)
            func normalRound(_ index: Int) async throws -> Double {
                try await unsynced.run(stalledSubscriber: false, name: "import-normal-\(index)").rowsPerSecond
            }
            var limits = [try limitRound(0)]
            var normals = [try await normalRound(0)]
            for index in 1..<rounds {
                try await importRound(index)
                limits.append(try limitRound(index))
                normals.append(try await normalRound(index))
            }
            let sameSchema = try SQLiteBaseline(
                pullRequests: values, users: users, path: directory.appendingPathComponent("baseline.sqlite").path
            ).run()
            let peer = try PeerBaseline(input: input, directory: directory).run()
            let median = Self.median(imports)
            let of = imports.count > 1 ? "; medians of \(imports.count) alternated rounds" : ""
            for (name, baseline, note) in [
                ("import", sameSchema, "baseline: raw SQLite, the store's schema, 1,000-row transactions"),
                (
                    "import vs the limit", Self.median(limits),
                    "baseline: C API, integer keys, 50,000-row transactions, 256 MiB\(of)"
                ),
                ("import vs the peer", peer, "baseline: one Python process, json + sqlite3, integer keys"),
                ("import @full", Self.median(normals), "baseline: the same at --durability normal\(of)"),
            ] {
                Terminal.line(
                    Figure(name: name, tributary: median, baseline: baseline, unit: "rows/s", note: note).line)
            }
            if imports.count > 1 { Terminal.line(Self.roundsLine(imports: imports, limits: limits)) }
        }
        if selected.contains(.scaling) {
            try await runScaling(
                rows: rows, users: users, at: Self.median(imports), of: imports.count, directory: directory)
        }
        let ofRounds = imports.count > 1 ? ", the median of its \(imports.count) rounds" : ""
        if selected.contains(.memory) {
            let stalled = try await benchmark.run(stalledSubscriber: true)
            Terminal.line(
                Figure(
                    name: "memory (stalled sub)", tributary: stalled.coordinatorPeakBytes / 1_048_576,
                    baseline: Self.median(peaks) / 1_048_576, unit: "MB", smallerIsBetter: true,
                    note: "baseline: the same import with no subscriber\(ofRounds)"
                ).line)
            Terminal.line(
                Figure(
                    name: "import (stalled sub)", tributary: stalled.rowsPerSecond, baseline: Self.median(imports),
                    unit: "rows/s", note: "baseline: the same import with no subscriber\(ofRounds)"
                ).line)
        }
    }

    /// The writer alone (see ``MergeBenchmark``), `rounds` times: each round, then the medians.
    private func runMerge(rows: Int, users: Int, directory: URL) async throws {
        let benchmark = MergeBenchmark(
            input: DemoData.pullRequests(count: rows, users: users), rows: rows, directory: directory,
            rowsPerSave: batchSize ?? 1000, groupSize: mergeGroup)
        var speeds: [Double] = []
        var costs: [Double] = []
        for round in 0..<(quick ? 1 : rounds) {
            let result = try await benchmark.run(name: "merge-\(round)")
            speeds.append(result.rowsPerSecond)
            costs.append(result.cpuMicrosecondsPerRow)
            Terminal.error(
                "merge round \(round + 1): \(Figure.format(result.rowsPerSecond)) rows/s, "
                    + String(format: "%.2f", result.cpuMicrosecondsPerRow) + " µs of CPU per row; change sets built in "
                    + String(format: "%.2f", result.buildMicrosecondsPerRow) + " µs per row")
        }
        Terminal.line(
            "merge (writer alone)   tributary \(Figure.format(Self.median(speeds))) rows/s, "
                + String(format: "%.2f", Self.median(costs)) + " µs of CPU per row"
                + (speeds.count > 1 ? " (medians of \(speeds.count) rounds)" : ""))
    }

    /// The middle value (the mean of the two middle ones for an even count).
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
    }

    /// Each round's figures, in the order run.
    static func roundsLine(imports: [Double], limits: [Double]) -> String {
        let rounds = imports.map { Figure.format($0) }.joined(separator: " / ")
        let limit = limits.isEmpty ? "" : "; the limit \(limits.map { Figure.format($0) }.joined(separator: " / "))"
        return "import rounds          tributary \(rounds) rows/s\(limit)"
    }

    /// Rows/s at 100,000 and 5,000,000 rows against the main figure (`rows`), and with 1 and 4 workers (at a fifth
    /// of `rows`) against 2: the cost of a row should not grow with the store, and workers should add speed.
    /// - Parameter main: the import's figure at `rows`, the median of its `rounds` rounds.
    private func runScaling(rows: Int, users: Int, at main: Double, of rounds: Int, directory: URL) async throws {
        func importing(_ count: Int, workers: Int) async throws -> Double {
            let users = self.users ?? max(1, count / 50)
            let benchmark = ImportBenchmark(
                input: DemoData.pullRequests(count: count, users: users), rows: count, workers: workers,
                extraArguments: coordinatorArguments, directory: directory, rowsPerJob: rowsPerJob,
                batchSize: batchSize)
            return try await benchmark.run(stalledSubscriber: false, name: "scaling-\(count)-\(workers)").rowsPerSecond
        }
        for count in quick ? [10_000, 300_000] : [100_000, 5_000_000] {
            let measured = try await importing(count, workers: workers)
            Terminal.line(
                Figure(
                    name: "import, \(count.formatted()) rows", tributary: measured, baseline: main, unit: "rows/s",
                    note:
                        "baseline: the import at \(rows.formatted()) rows\(rounds > 1 ? ", the median of its \(rounds) rounds" : "")"
                ).line)
        }
        let smaller = max(10_000, rows / 5)
        let reference = try await importing(smaller, workers: workers)
        for count in [1, 4] where count != workers {
            let measured = try await importing(smaller, workers: count)
            Terminal.line(
                Figure(
                    name: "import, \(count) worker\(count == 1 ? "" : "s")", tributary: measured, baseline: reference,
                    unit: "rows/s", note: "baseline: \(workers) workers, both at \(smaller.formatted()) rows"
                ).line)
        }
    }
}
