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
    static func jobs(_ count: Int, queue: String, kind: String = "noop") -> [JobSpec] {
        Array(repeating: JobSpec(kind: kind, queue: queue), count: count)
    }

    static func worker(_ endpoint: String, queues: String, concurrency: Int = 8) throws -> StartedProcess {
        try StartedProcess.start(
            "tributary-worker",
            ["--connect", endpoint, "--queues", queues, "--concurrency", String(concurrency), "--log-level", "error"])
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

        let defaults = try await client.push(Self.jobs(20, queue: JobQueue.defaultName)).ids
        let imports = try await client.push(Self.jobs(5, queue: "imports")).ids
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
        // `jobs show` says why a default job waits.
        let waiting = try await client.job(defaults[0]).waiting ?? ""
        #expect(waiting.contains("no connected worker serves queue 'default'"), "\(waiting)")
        for row in try Self.jobRows(coordinator.storePath) where row.queue == "default" {
            #expect(
                row.state == "queued" && row.attempt == 0 && row.leasedAt == 0, "job \(row.id) of default was leased")
        }

        // The imports-only worker goes; newer imports jobs, then a worker of both queues taking one job at a time:
        // every imports job goes before any of the older default ones.
        importsOnly.kill()
        try await waitUntil("the imports-only worker to be gone") { try await client.status().workers.isEmpty }
        let later = try await client.push(Self.jobs(3, queue: "imports")).ids
        let both = try Self.worker(endpoint, queues: "imports,default", concurrency: 1)
        defer { both.kill() }
        try await waitUntil("every job to be done") {
            try Self.jobRows(coordinator.storePath).allSatisfy { $0.state == "done" }
        }
        let rows = try Self.jobRows(coordinator.storePath)
        let leased = Dictionary(uniqueKeysWithValues: rows.map { ($0.id, $0.leasedAt) })
        let lastImport = try #require(later.compactMap { leased[$0] }.max())
        let firstDefault = try #require(defaults.compactMap { leased[$0] }.min())
        #expect(lastImport < firstDefault, "a default job was leased before an imports job")
        #expect(rows.count == defaults.count + imports.count + later.count)
        #expect(try await client.status().queues.isEmpty)
        // The default jobs waited in their queue until a worker served it: their wait is measured from then.
        let waited = try await MetricsIntegrationTests.scrape(try #require(coordinator.process.httpURL))
        #expect((waited.value("tributary_job_queue_wait_seconds_sum", ["kind": "noop"]) ?? 0) > 1)
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

/// Concurrency limits (`--limit`) with real processes: the most jobs of a kind running at once, read back from the
/// store's lease and completion times.
@Suite("Concurrency limits", .serialized)
struct RunLimitTests {
    /// The most intervals [leased, done] open at once.
    static func maximumOverlap(_ intervals: [(start: Double, end: Double)]) -> Int {
        // At equal times an end comes before a start: the store counted the job done when the next was leased.
        var events: [(time: Double, change: Int)] = []
        for interval in intervals {
            events.append((interval.start, 1))
            events.append((interval.end, -1))
        }
        events.sort { $0.time == $1.time ? $0.change < $1.change : $0.time < $1.time }
        var open = 0
        var most = 0
        for event in events {
            open += event.change
            most = max(most, open)
        }
        return most
    }

    @Test("a limit of 2 running imports holds across 3 workers (observed from the store); status shows it")
    func kindLimitHolds() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 3, arguments: ["--limit", "kind:import=2", "--limit", "queue:other=5"])
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let rows = DemoData.pullRequests(count: 12_000, users: 300)
        let pushed = try await client.pushImport(rows, rowsPerJob: 400)
        #expect(pushed.ids.count == 30)
        // Read while the import runs (or after it, on a loaded machine): never more than the limit.
        let status = try await client.status()
        #expect((status.limits.first?.running ?? 0) <= 2)
        #expect(status.limits.map(\.name) == ["kind:import", "queue:other"])
        #expect(status.limits.first?.limit == 2)
        _ = try await client.finish(pushed.batch, timeout: .seconds(300))

        let intervals = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try Row.fetchAll(db, sql: "SELECT leased_at, updated_at, state FROM tributary_jobs").map { row in
                #expect(row["state"] as String == "done")
                return (start: row["leased_at"] as Double, end: row["updated_at"] as Double)
            }
        }
        #expect(intervals.count == 30)
        #expect(Self.maximumOverlap(intervals) == 2, "jobs of kind import ran more than 2 at once")
    }

    @Test(
        "a rate limit of 4 starts a second holds in every 1 s window across 3 workers, and keeps that pace within one")
    func rateLimitHolds() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 3, arguments: ["--rate-limit", "kind:noop=4/1s"])
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let status = try await client.status()
        #expect(status.limits.map(\.name) == ["kind:noop"] && status.limits.first?.periodSeconds == 1)
        let pushed = try await client.push(QueueTests.jobs(48, queue: JobQueue.defaultName))
        _ = try await client.finish(pushed.batch, timeout: .seconds(120))
        let starts = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try Double.fetchAll(db, sql: "SELECT leased_at FROM tributary_jobs ORDER BY leased_at")
        }
        #expect(starts.count == 48)
        // Every window of one second that opens at a start holds at most 4 starts.
        for (index, start) in starts.enumerated() {
            let inWindow = starts[index...].prefix { $0 < start + 1 }.count
            #expect(inWindow <= 4, "\(inWindow) starts in the second from \(start)")
        }
        // And the pace is the limit's, within one: 40 starts in the first 10 seconds (a held-back job goes out when
        // the window has room again, not at the router's next tick).
        let first = try #require(starts.first)
        let inTen = starts.filter { $0 < first + 10 }.count
        #expect((39...41).contains(inTen), "\(inTen) starts in the first 10 s")
        // Each start goes out as soon as the window allows it: the 5th start after any start comes within 0.2 s of
        // that start's window closing (with dispatches only at the router's ticks, up to 0.5 s later).
        let late = zip(starts, starts.dropFirst(4)).map { $1 - $0 }.filter { $0 > 1.2 }
        #expect(late.isEmpty, "starts later than their window allowed: \(late)")
    }

    @Test(
        "a limit of 2 per customer holds across 3 workers for each customer (from the store); `jobs show` and status name it"
    )
    func perArgumentLimitHolds() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 3,
            arguments: [
                "--limit", "kind:noop/customer=2", "--rate-limit", "kind:mail/customer=3/1s", "--limit",
                "kind:hold/customer=1",
            ])
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let customers = ["acme", "globex", "initech"]
        let specs = (0..<90).map { index in JobSpec(kind: "noop", arguments: ["customer": customers[index % 3]]) }
        let pushed = try await client.push(specs)
        _ = try await client.finish(pushed.batch, timeout: .seconds(120))
        let rows = try DatabaseQueue(path: coordinator.storePath).read { db in
            try Row.fetchAll(db, sql: "SELECT arguments, leased_at, updated_at, state FROM tributary_jobs")
        }
        #expect(rows.count == 90 && rows.allSatisfy { $0["state"] as String == "done" })
        var overlaps: [String: Int] = [:]
        for customer in customers {
            let intervals = rows.filter { ($0["arguments"] as String).contains(customer) }.map {
                (start: $0["leased_at"] as Double, end: $0["updated_at"] as Double)
            }
            overlaps[customer] = Self.maximumOverlap(intervals)
        }
        #expect(overlaps.values.allSatisfy { $0 <= 2 }, "more than 2 ran at once for a customer: \(overlaps)")
        #expect(
            Self.maximumOverlap(rows.map { ($0["leased_at"] as Double, $0["updated_at"] as Double) }) > 2,
            "customers ran beside each other")
        let status = try await client.status()
        #expect(
            status.limits.map(\.name) == ["kind:noop/customer", "kind:hold/customer", "kind:mail/customer"],
            "\(status.limits)")

        // Jobs that hold on until cancelled: one per customer runs, and `jobs show` says why the other waits.
        let holds = try await client.push(
            ["acme", "acme", "globex"].map { JobSpec(kind: "hold", arguments: ["customer": $0]) })
        let worker = InProcessWorker.start(
            endpoint: coordinator.process.listenEndpoint, handlers: [SecurityTests.Hold(completes: false)])
        defer { worker.cancel() }
        try await waitUntil("one hold job per customer to run") {
            var running = 0
            for id in holds.ids where try await client.job(id).state == .running { running += 1 }
            return running == 2
        }
        let waiting = try await client.job(holds.ids[1])
        #expect(waiting.state == .queued)
        let reason = waiting.waiting ?? ""
        #expect(reason.contains("kind:hold/customer=acme is at its limit (1 running of 1)"), "\(reason)")
        for id in holds.ids { _ = try? await client.cancel(id) }
    }

    @Test("per-argument limits parse (kind:NAME/ARG=N, kind:NAME/ARG=M/PERIOD) and name what is wrong otherwise")
    func perArgumentParsing() throws {
        var limits = RunLimits()
        try limits.add("kind:export/customer=2")
        try limits.addRate("queue:mail/tenant.id=5/1s")
        #expect(
            limits.perArgument == [
                .init(target: .kind("export"), argument: "customer", count: 2),
                .init(target: .queue("mail"), argument: "tenant.id", count: 5, rate: .init(count: 5, seconds: 1)),
            ])
        #expect(limits.concern(kinds: ["export"], queues: ["default"]))
        #expect(!limits.concern(kinds: ["other"], queues: ["default"]))
        for bad in ["kind:export/=2", "kind:export/a b=2", "kind:export/x\"y=2"] {
            #expect(throws: RunLimitError.self, "\(bad)") { try limits.add(bad) }
        }
    }

    @Test("--rate-limit takes kind:NAME=M/PERIOD and queue:NAME=M/PERIOD, and names what is wrong otherwise")
    func rateParsing() throws {
        var limits = RunLimits()
        try limits.addRate("kind:mail=10/1s")
        try limits.addRate("queue:imports=100/5m")
        try limits.addRate("kind:x=1/1500ms")
        #expect(limits.rateByKind["mail"] == RunLimits.Rate(count: 10, seconds: 1))
        #expect(limits.rateByQueue["imports"] == RunLimits.Rate(count: 100, seconds: 300))
        #expect(limits.rateByKind["x"] == RunLimits.Rate(count: 1, seconds: 1.5))
        for bad in [
            "kind:mail=10", "kind:mail=0/1s", "kind:mail=10/1y", "mail=10/1s", "kind:mail=10/0s", "kind:m=1/500ms",
        ] {
            #expect(throws: RunLimitError.self, "\(bad)") { try limits.addRate(bad) }
        }
    }

    @Test("--limit takes kind:NAME=N and queue:NAME=N, and names what is wrong otherwise")
    func parsing() throws {
        var limits = RunLimits()
        try limits.add("kind:report=2")
        try limits.add("queue:imports=8")
        #expect(limits == RunLimits(byKind: ["report": 2], byQueue: ["imports": 8]))
        for bad in ["report=2", "kind:=2", "kind:report=0", "kind:report=x", "queue:a b=1"] {
            #expect(throws: RunLimitError.self, "\(bad)") { try limits.add(bad) }
        }
    }
}

/// Weighted queues: a worker started with `--queues imports:3,default:1` takes from imports about three times in
/// four while both have jobs.
@Suite("Weighted queues", .serialized)
struct WeightedQueueTests {
    @Test("--queues a:3,b:1 parses to weights; a claim's order puts a first about 3 times in 4; bad weights refused")
    func claimOrder() throws {
        let (names, weights) = try JobQueue.weightedList("imports:3, default:1")
        #expect(names == ["imports", "default"] && weights == [3, 1])
        #expect(try JobQueue.weightedList("a,b").weights.isEmpty)
        for bad in ["a:3,b", "a:0,b:1", "a:1001", "a:x", "a:1,a:2"] {
            #expect(throws: JobQueueListError.self, "\(bad)") { try JobQueue.weightedList(bad) }
        }
        // Seeded (the demo data's generator), so the check is the same every run.
        var generator = SplitMix64(seed: 42)
        var first = 0
        for _ in 0..<10_000 {
            let order = JobQueue.claimOrder(names, weights: weights, using: &generator)
            #expect(Set(order) == Set(names) && order.count == 2)
            if order[0] == "imports" { first += 1 }
        }
        #expect((7_200...7_800).contains(first), "imports first \(first) times in 10,000")
        #expect(JobQueue.claimOrder(names, weights: [], using: &generator) == names)
        // Three queues: the order after the first pick follows the weights left.
        var secondB = 0
        var firstA = 0
        for _ in 0..<10_000 {
            let order = JobQueue.claimOrder(["a", "b", "c"], weights: [2, 1, 1], using: &generator)
            if order[0] == "a" {
                firstA += 1
                if order[1] == "b" { secondB += 1 }
            }
        }
        #expect((4_700...5_300).contains(firstA), "a first \(firstA) times in 10,000")
        #expect(abs(Double(secondB) / Double(firstA) - 0.5) < 0.05, "b second \(secondB) of \(firstA)")
        #expect(throws: JobQueueListError.self) { try JobQueue.list("a:1,b:2") }
        #expect(try JobQueue.weightedList("a: 3, b :1").weights == [3, 1])
    }

    @Test("a worker of imports:3,default:1 takes imports about 3 times in 4 while both queues have jobs")
    func weightedWorker() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let endpoint = coordinator.process.listenEndpoint
        let client = try JobClient(endpoint: endpoint)
        defer { Task { await client.close() } }
        _ = try await client.push(QueueTests.jobs(100, queue: JobQueue.defaultName))
        let imports = try await client.push(QueueTests.jobs(100, queue: "imports"))
        let worker = try QueueTests.worker(endpoint, queues: "imports:3,default:1", concurrency: 1)
        defer { worker.kill() }
        _ = try await client.finish(imports.batch, timeout: .seconds(120))
        let leased = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try String.fetchAll(
                db, sql: "SELECT queue FROM tributary_jobs WHERE leased_at > 0 ORDER BY leased_at, id LIMIT 80")
        }
        #expect(leased.count == 80)
        let fromImports = leased.filter { $0 == "imports" }.count
        // 80 draws at 3/4: 60 expected, standard deviation 3.9.
        #expect((45...75).contains(fromImports), "\(fromImports) of the first 80 jobs came from imports")
    }
}

/// Batch callbacks with real processes: one job pushed when the batch finishes, with its counts, whatever ends it.
@Suite("Batch callbacks", .serialized)
struct BatchCallbackTests {
    /// The jobs of the batch `name`, as (kind, state, arguments).
    static func jobs(ofBatch name: String, in storePath: String) throws -> [(
        kind: String, state: String, arguments: String
    )] {
        try DatabaseQueue(path: storePath).read { db in
            try Row.fetchAll(
                db, sql: "SELECT kind, state, arguments FROM tributary_jobs WHERE batch = ?", arguments: [name]
            )
            .map { ($0["kind"], $0["state"], $0["arguments"]) }
        }
    }

    @Test(
        "a callback runs once when every job is done or dead, with the right counts; one set on a cancelled batch too")
    func callbackRunsOnce() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        // 5 import jobs, one of which dies of a row of the wrong type.
        var rows = (0..<400).map { #"{"login": "user\#($0)", "name": "User \#($0)"}"# }
        rows[350] = #"{"login": 42}"#
        let callback = JobSpec(kind: "noop", arguments: ["report": "users"])
        let specs = NDJSONChunker.chunks(of: Data((rows.joined(separator: "\n") + "\n").utf8), rowsPerJob: 80).map {
            ImportJob.spec(entity: "User", payload: $0.payload, rows: $0.rows)
        }
        let pushed = try await client.push(specs, onComplete: callback)
        #expect(pushed.ids.count == 5)
        let done = "\(pushed.batch)/complete"
        try await waitUntil("the callback to be done", timeout: .seconds(60)) {
            try Self.jobs(ofBatch: done, in: coordinator.storePath).contains { $0.state == "done" }
        }
        let callbacks = try Self.jobs(ofBatch: done, in: coordinator.storePath)
        #expect(callbacks.count == 1, "\(callbacks)")
        let arguments = try JSONDecoder().decode(
            [String: String].self, from: Data((callbacks.first?.arguments ?? "{}").utf8))
        #expect(
            arguments == [
                "report": "users", "batch": pushed.batch, "total_jobs": "5", "done_jobs": "4", "dead_jobs": "1",
                "cancelled_jobs": "0",
            ], "\(arguments)")
        // Retrying the dead job (it dies again) finishes the batch again: no second callback.
        let dead = try #require(try await client.batchStatus(pushed.batch).dead.first?.id)
        _ = try await client.retry(dead)
        try await waitUntil("the retried job to die again") { try await client.job(dead).state == .dead }
        #expect(try Self.jobs(ofBatch: done, in: coordinator.storePath).count == 1)

        // A batch ended by cancelling its only job (a kind no worker runs) gets its callback too.
        let waiting = try await client.push([JobSpec(kind: "nobody-runs-this")], onComplete: callback)
        _ = try await client.cancel(waiting.ids[0])
        try await waitUntil("the cancelled batch's callback") {
            try Self.jobs(ofBatch: "\(waiting.batch)/complete", in: coordinator.storePath).contains {
                $0.state == "done"
            }
        }
        let cancelled = try Self.jobs(ofBatch: "\(waiting.batch)/complete", in: coordinator.storePath)
        #expect(cancelled.count == 1 && cancelled[0].arguments.contains(#""cancelled_jobs":"1""#), "\(cancelled)")
    }
}
