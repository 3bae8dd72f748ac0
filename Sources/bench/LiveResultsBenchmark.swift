import Foundation
import Logging
import Synchronization
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryDemo

/// The live-results figures: how fast, and in how much memory, a view over a large store shows a live result; and
/// how soon a live result's update reaches its consumer after a save.
struct LiveResultsBenchmark {
    let directory: URL

    /// The live result a probe shows: the 1,000 open pull requests with the most additions (no index helps: the
    /// coordinator reads the whole entity to answer it).
    static func request() throws -> FetchRequest {
        FetchRequest(
            entity: "PullRequest", predicate: try FetchPredicate(format: "merged == NO"),
            sortedBy: [FetchSort("additions", ascending: false), FetchSort("number")], limit: 1_000)
    }

    /// What a probe process reports: from the view's start to its first snapshot, and its peak resident memory.
    struct Start {
        let seconds: Double
        let peakBytes: Double
    }

    /// A coordinator on the store at `store` (a folder holding `store.sqlite`), then probe processes alternated
    /// `rounds` times after one not counted (which warms the coordinator's cache): a view holding what it fetched,
    /// showing ``request()``, and one that loads the whole entity first, the first of the two swapped each round.
    /// Each figure is the median of its rounds.
    func viewStart(store folder: URL, rounds: Int) async throws -> (fetched: Start, whole: Start) {
        let coordinator = try await CoordinatorProcess.startDemoStore(
            in: folder, arguments: ["--log-level", "warning"]
        ).process
        do {
            _ = try await probe(wholeEntity: false, coordinator: coordinator)
            var fetched: [Start] = []
            var whole: [Start] = []
            for round in 0..<rounds {
                for wholeEntity in round.isMultiple(of: 2) ? [false, true] : [true, false] {
                    let start = try await probe(wholeEntity: wholeEntity, coordinator: coordinator)
                    if wholeEntity { whole.append(start) } else { fetched.append(start) }
                }
            }
            await coordinator.stop()
            func median(_ starts: [Start]) -> Start {
                Start(
                    seconds: BenchCommand.median(starts.map(\.seconds)),
                    peakBytes: BenchCommand.median(starts.map(\.peakBytes)))
            }
            return (median(fetched), median(whole))
        } catch {
            await coordinator.stop()
            throw error
        }
    }

    /// Runs `tributary-bench --view-probe` against `coordinator` and reads what it reports once its first snapshot
    /// came; its peak memory is read from /proc before it is let go. A probe silent for 2 minutes is stopped.
    private func probe(wholeEntity: Bool, coordinator: CoordinatorProcess) async throws -> Start {
        let process = Process()
        process.executableURL = try Executables.sibling("tributary-bench")
        process.arguments = [
            "--view-probe", wholeEntity ? "entity" : "fetched", "--probe-jobs", coordinator.listenEndpoint,
            "--probe-feed", coordinator.feedEndpoint,
        ]
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        let exited = AsyncStream.makeStream(of: Void.self)
        process.terminationHandler = { _ in exited.continuation.finish() }
        try process.run()
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            if process.isRunning { process.terminate() }
        }
        var reported: String?
        for await line in LineReader(output.fileHandleForReading).lines {
            reported = line
            break
        }
        let peak = ProcessMemory.peakResidentBytes(pid: process.processIdentifier)
        try? input.fileHandleForWriting.close()
        for await _ in exited.stream {}
        watchdog.cancel()
        guard let reported, reported.hasPrefix("ready "), let seconds = Double(reported.dropFirst(6)) else {
            throw BaselineError("the view probe did not report its start (it printed \(reported ?? "nothing"))")
        }
        return Start(seconds: seconds, peakBytes: peak)
    }

    /// The probe's side (`tributary-bench --view-probe`): starts a view, takes the first snapshot of ``request``,
    /// prints `ready <seconds>`, then holds the view until its standard input closes.
    static func runProbe(wholeEntity: Bool, jobs: String, feed: String) async throws {
        let started = ContinuousClock.now
        let view = try await ViewContext.start(
            feed: feed, jobs: jobs, model: DemoData.model,
            contents: wholeEntity ? .entities(["PullRequest"]) : .fetched)
        let request = try request()
        let results = try await view.results(for: request)
        var snapshots = results.makeAsyncIterator()
        guard let first = try await snapshots.next(), first.ids.count == request.fetchLimit else {
            throw BaselineError("the live result did not show \(request.fetchLimit) rows")
        }
        let seconds = (ContinuousClock.now - started).seconds
        Terminal.line("ready \(seconds)")
        for await _ in StandardInputLines.lines() {}
        results.cancel()
        await view.close()
    }

    /// How many probe jobs share the saves of ``update(saves:rate:)``.
    static let savers = 4

    /// The saver's side (`tributary-bench --save-probe`): a worker running ``LatencyProbe`` jobs until its standard
    /// input closes.
    static func runSaver(jobs: String, logger: Logger) async throws {
        var configuration = WorkerConfiguration()
        configuration.endpoint = jobs
        configuration.name = "live-saver"
        configuration.register(LatencyProbe(recorder: SaveRecorder()))
        let worker = Task { [configuration] in
            try await WorkerService(configuration: configuration, logger: logger).run()
        }
        for await _ in StandardInputLines.lines() {}
        worker.cancel()
        _ = await worker.result
    }

    /// Saves at `rate` a second (one new user each, by ``savers`` probe jobs of a worker in a process of its own,
    /// `tributary-bench --save-probe`, as savers are in other processes than a view) followed by a live result in a view in this process (the 100 users with the greatest logins,
    /// which each save enters) and by a plain subscriber. Returns, for each commit, the time from the commit (its
    /// didSave's `committedAt`) to the first snapshot at or after it, the same to the subscriber's didSave (the
    /// baseline), both on the wall clock of this machine, and the commits per second reached.
    ///
    /// With `aggregate`, the view follows a live aggregate instead: the count and the greatest login of those users,
    /// which each save moves.
    func update(saves: Int, rate: Double, aggregate: Bool = false) async throws -> (
        live: [Duration], feed: [Duration], savesPerSecond: Double
    ) {
        let coordinator = try await CoordinatorProcess.startDemoStore(
            in: directory.appendingPathComponent(aggregate ? "live-aggregate-update" : "live-update"),
            arguments: ["--log-level", "warning"]
        ).process
        let saver = Process()
        saver.executableURL = try Executables.sibling("tributary-bench")
        saver.arguments = ["--save-probe", "--probe-jobs", coordinator.listenEndpoint]
        let input = Pipe()
        saver.standardInput = input
        let exited = AsyncStream.makeStream(of: Void.self)
        saver.terminationHandler = { _ in exited.continuation.finish() }
        try saver.run()
        func stopSaver() async {
            try? input.fileHandleForWriting.close()
            for await _ in exited.stream {}
        }
        do {
            let view = try await ViewContext.start(
                feed: coordinator.feedEndpoint, jobs: coordinator.listenEndpoint, model: DemoData.model,
                contents: .fetched)
            let probes = try FetchPredicate(format: "login BEGINSWITH %@", "probe-")
            let snapshots = Mutex<[(seq: UInt64, at: Date)]>([])
            let consumer: Task<Void, any Error>
            let cancelResults: @Sendable () -> Void
            if aggregate {
                let results = try await view.results(
                    for: AggregateRequest(entity: "User", predicate: probes, aggregates: [.count(), .max("login")]))
                consumer = Task {
                    for try await snapshot in results { snapshots.withLock { $0.append((snapshot.seq, Date())) } }
                }
                cancelResults = { results.cancel() }
            } else {
                let results = try await view.results(
                    for: FetchRequest(
                        entity: "User", predicate: probes, sortedBy: [FetchSort("login", ascending: false)],
                        limit: 100))
                consumer = Task {
                    for try await snapshot in results { snapshots.withLock { $0.append((snapshot.seq, Date())) } }
                }
                cancelResults = { results.cancel() }
            }
            var options = ChangeFeed.Options()
            options.filter = FeedFilter(entities: ["User"])
            let feed = try ChangeFeed(
                feed: coordinator.feedEndpoint, jobs: coordinator.listenEndpoint, options: options)
            var events = feed.makeAsyncIterator()
            guard case .caughtUp = try await events.next() else { throw BaselineError("the feed did not connect") }
            let delivered = Mutex<[UInt64: (committed: Date, arrived: Date, users: Int)]>([:])
            let subscriber = Task { [events] in
                var events = events
                while let event = try await events.next() {
                    guard case .didSave(let save) = event else { continue }
                    let arrived = Date()
                    delivered.withLock { $0[save.seq] = (save.committedAt, arrived, save.inserted.count) }
                }
            }
            defer { subscriber.cancel() }
            let client = try JobClient(endpoint: coordinator.listenEndpoint)
            while try await client.status().workers.count < 1 {
                try await Task.sleep(for: .milliseconds(20))
            }
            // Several savers, as one saver's round trip may not reach the rate on a slow machine.
            let pushed = try await client.push(
                Array(
                    repeating: JobSpec(
                        kind: LatencyProbe.kindName,
                        arguments: ["saves": String(saves / Self.savers), "rate": String(rate / Double(Self.savers))],
                        total: UInt64(saves / Self.savers)),
                    count: Self.savers))
            let status = try await client.waitForBatch(pushed.batch, every: .milliseconds(10))
            guard status.deadJobs == 0 else { throw BaselineError("the latency probe's job failed") }
            let saved = saves / Self.savers * Self.savers
            // The subscriber and the view get the last commits within moments of the jobs' end: every user inserted.
            let deadline = ContinuousClock.now + .seconds(10)
            var last: UInt64 = 0
            while ContinuousClock.now < deadline {
                let (users, seq) = delivered.withLock { ($0.values.reduce(0) { $0 + $1.users }, $0.keys.max() ?? 0) }
                last = seq
                if users >= saved, snapshots.withLock({ $0.last?.seq ?? 0 }) >= last { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            cancelResults()
            consumer.cancel()
            let arrivals = snapshots.withLock { $0 }
            guard (arrivals.last?.seq ?? 0) >= last else {
                throw BaselineError("the live result did not reach the last save (seq \(last))")
            }
            // Each commit reaches the consumer with the first snapshot at or after it.
            let commits = delivered.withLock { $0 }.filter { $0.value.users > 0 }
            let live = commits.map { seq, times in
                let index = arrivals.partitioningIndex { $0.seq >= seq }
                return Duration.seconds(arrivals[index].at.timeIntervalSince(times.committed))
            }
            let plain = commits.values.map { Duration.seconds($0.arrived.timeIntervalSince($0.committed)) }
            let earliest = commits.values.map(\.committed).min() ?? Date()
            let latest = commits.values.map(\.committed).max() ?? Date()
            await client.close()
            await feed.close()
            await view.close()
            await stopSaver()
            await coordinator.stop()
            return (live, plain, Double(commits.count - 1) / max(latest.timeIntervalSince(earliest), 1e-9))
        } catch {
            await stopSaver()
            await coordinator.stop()
            throw error
        }
    }
}

extension Array {
    /// The first index whose element satisfies `belongs`, for an array where those elements come after the others.
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
