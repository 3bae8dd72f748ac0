import Foundation
import GRDB
import Testing
import TributaryCommandSupport
import ZeroMQ

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Real processes killed while they work: nothing acknowledged may be lost, nothing may apply twice.
@Suite("Chaos: workers and the coordinator killed during an import", .serialized)
struct ChaosTests {
    /// A worker process the driver kills and starts again.
    final class WorkerProcess {
        private(set) var process: Process
        let endpoint: String
        /// More arguments (a `--job-log`).
        let arguments: [String]

        init(endpoint: String, arguments: [String] = []) throws {
            self.endpoint = endpoint
            self.arguments = arguments
            process = try Self.launch(endpoint, arguments: arguments)
        }

        static func launch(_ endpoint: String, arguments: [String] = []) throws -> Process {
            let process = Process()
            process.executableURL = Binaries.url("tributary-worker")
            process.arguments =
                [
                    "--connect", endpoint, "--heartbeat-ms", "200", "--concurrency", "2", "--log-level", "critical",
                ] + arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }

        func signal(_ signal: Int32) async throws {
            kill(process.processIdentifier, signal)
            await process.exited()
            process = try Self.launch(endpoint, arguments: arguments)
        }

        /// Stops it gracefully (SIGTERM) and waits for it to exit.
        /// - Returns: its exit status.
        func terminate() async -> Int32 {
            kill(process.processIdentifier, SIGTERM)
            await process.exited()
            return process.terminationStatus
        }

        func stop() {
            // SIGKILL ends it at once (no graceful stop to wait for).
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// Two loopback ports free right now (bound, read, released).
    static func freePorts() throws -> (Int, Int) {
        let context = try ZMQContext()
        let first = try context.makeSocket(.router)
        let second = try context.makeSocket(.router)
        func port(_ endpoint: String) -> Int { Int(endpoint.split(separator: ":").last ?? "") ?? 0 }
        let ports = (port(try first.bind("tcp://127.0.0.1:*")), port(try second.bind("tcp://127.0.0.1:*")))
        first.close()
        second.close()
        context.terminate()
        return ports
    }

    @Test(
        "200 jobs through 3 workers while workers are SIGKILLed, the coordinator is killed and restarted, and a worker is SIGTERMed"
    )
    func chaos() async throws {
        let directory = try TemporaryDirectory()
        let input = DemoData.pullRequests(count: 100_000, users: 500)
        let expected = try ImportIntegrationTests.Expected(input)
        let (listenPort, feedPort) = try Self.freePorts()
        let listen = "tcp://127.0.0.1:\(listenPort)"
        let modelPath = try directory.write("model.json", DemoData.modelJSON)
        let storePath = directory.path("store.sqlite")
        let arguments = [
            "--store", storePath, "--model", modelPath, "--listen", listen, "--feed", "tcp://127.0.0.1:\(feedPort)",
            "--log-level", "warning",
            // A concurrency limit in play: claims go through the limited path (3 workers × 2 would run 6).
            "--limit", "kind:import=4",
        ]
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: try directory.write("coordinator.log", "")))
        func startCoordinator() async throws -> CoordinatorProcess {
            try await CoordinatorProcess.start(
                executable: Binaries.url("tributary-coordinator"), arguments: arguments, log: log)
        }
        var coordinator = try await startCoordinator()
        let workers = try (0..<3).map { _ in try WorkerProcess(endpoint: listen) }
        defer { workers.forEach { $0.stop() } }

        let client = try JobClient(endpoint: listen)
        // With a batch callback: pushed exactly once, in the transaction that finishes the batch, whatever dies.
        let pushed = try await client.pushImport(
            input, rowsPerJob: 500, onComplete: JobSpec(kind: "noop"))
        #expect(pushed.ids.count == 200)
        // Dependencies in play: 10 jobs each waiting for two import jobs, 10 waiting for the whole import batch,
        // and 10 more each waiting for one of those (a chain through the same push).
        let noop = JobSpec(kind: "noop")
        let children: [JobSpec] =
            (0..<10).map { index in noop.with { $0.afterJobs = [pushed.ids[index * 20], pushed.ids[index * 20 + 19]] } }
            + (0..<10).map { _ in noop.with { $0.afterBatches = [pushed.batch] } }
            + (0..<10).map { index in noop.with { $0.afterPushed = [10 + index] } }
        let dependents = try await client.push(children)

        // The driver: a SIGKILL every ~0.5 s, the coordinator killed once, one SIGTERM; bounded in time.
        var random = SystemRandomNumberGenerator()
        let deadline = ContinuousClock.now + .seconds(300)
        var round = 0
        var finished: BatchStatus?
        while finished == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(500))
            round += 1
            if round == 4 {
                kill(coordinator.pid, SIGKILL)
                _ = await coordinator.stop()
                coordinator = try await startCoordinator()
            } else if round == 7 {
                try await workers[Int.random(in: 0..<3, using: &random)].signal(SIGTERM)
            } else if round < 40 {
                try await workers[Int.random(in: 0..<3, using: &random)].signal(SIGKILL)
            }
            // The coordinator may be down for a moment: a refused or unanswered poll is simply retried.
            if let status = try? await client.batchStatus(pushed.batch),
                status.doneJobs + status.deadJobs == status.totalJobs,
                let waiting = try? await client.batchStatus(dependents.batch),
                waiting.doneJobs + waiting.deadJobs + waiting.cancelledJobs == waiting.totalJobs
            {
                finished = status
            }
        }
        await client.close()
        #expect(await coordinator.stop() == 0)
        let status = try #require(finished, "the import did not finish in time")
        #expect(status.doneJobs == 200 && status.deadJobs == 0 && status.doneRows == 100_000)

        let store = try DatabaseQueue(path: storePath)
        try await store.read { db in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest") == 100_000)
            #expect(try AppliedOnce.rewrittenObjects(of: "PullRequest", in: db) == 0)
            let mismatches = try expected.mismatches(in: db)
            #expect(mismatches.users == 0, "one User per login of the input")
            #expect(mismatches.authors == 0 && mismatches.reviewers == 0, "authors and reviewers match the input")
            // The chaos reached running jobs: some attempts were lost (to a kill or the coordinator's restart).
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE errors <> '[]'") ?? 0 > 0)
            // Sequence numbers: every commit numbered, none skipped.
            let (count, maximum) = try #require(
                try Row.fetchOne(db, sql: "SELECT COUNT(*) AS n, MAX(seq) AS m FROM tributary_history")
                    .map { ($0["n"] as Int, $0["m"] as Int) })
            #expect(count == maximum, "the history's sequence numbers have no gaps")
            #expect(
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE batch = ?",
                    arguments: ["\(pushed.batch)/complete"])
                    == 1, "the batch's callback was pushed once")
            // Every dependent job done, each leased only after every parent was done.
            #expect(
                try String.fetchAll(
                    db, sql: "SELECT DISTINCT state FROM tributary_jobs WHERE batch = ?", arguments: [dependents.batch])
                    == ["done"])
            let early = try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM tributary_job_parents d JOIN tributary_jobs c ON c.id = d.child
                    JOIN tributary_jobs p ON p.id = d.parent WHERE c.leased_at < p.updated_at
                    """)
            #expect(early == 0, "a child was leased before a parent job was done")
            let beforeBatch = try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM tributary_batch_parents d JOIN tributary_jobs c ON c.id = d.child
                    WHERE c.leased_at < (SELECT MAX(updated_at) FROM tributary_jobs WHERE batch = d.batch)
                    """)
            #expect(beforeBatch == 0, "a child was leased before its parent batch was done")
        }
    }

    /// A job whose first attempt tells the test it is about to save, waits for the test's go, then saves a user with
    /// a large name and completes; later attempts save and complete at once.
    struct SaveOnSignal: JobHandler {
        let kind = "save-on-signal"
        let started: AsyncStream<Void>.Continuation
        let go: AsyncStream<Void>

        func run(_ job: JobRun) async throws {
            if job.attempt == 1 {
                started.yield()
                for await _ in go { break }
            }
            let context = job.makeContext()
            try await context.perform { context in
                let user = try context.insert("User")
                user["login"] = .string("attempt-\(job.attempt)")
                user["name"] = .string(String(repeating: "n", count: SaveOnSignal.nameLength))
            }
            try await job.complete(context, progress: 1)
        }

        /// Large enough that the save alone fills the coordinator's socket past anything else sent meanwhile.
        static let nameLength = 20_000
    }

    /// Whether process `pid` is stopped by a signal (`T` in `/proc/PID/stat`).
    static func isStopped(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: end)...].split(separator: " ").first == "T"
    }

    /// The bytes waiting unread in the sockets that accepted connections on `port` (`/proc/net/tcp`, read to its end:
    /// a read of its reported size, 0, stops at its first page).
    static func unreadBytes(onPort port: Int) throws -> Int {
        let table = try #require(FileHandle(forReadingAtPath: "/proc/net/tcp"))
        defer { try? table.close() }
        return String(decoding: try table.readToEnd() ?? Data(), as: UTF8.self).split(separator: "\n").dropFirst()
            .reduce(0) { total, line in
                let fields = line.split(separator: " ")
                guard fields.count > 4, fields[3] == "01",
                    let local = fields[1].split(separator: ":").last, Int(local, radix: 16) == port,
                    let queued = fields[4].split(separator: ":").last, let bytes = Int(queued, radix: 16)
                else { return total }
                return total + bytes
            }
    }

    @Test(
        "a job's save that a killed coordinator held unanswered is sent again once the worker registers with the next, not after its 60 s timeout"
    )
    func saveSentAgainAfterRestart() async throws {
        let directory = try TemporaryDirectory()
        let (listenPort, feedPort) = try Self.freePorts()
        let listen = "tcp://127.0.0.1:\(listenPort)"
        let storePath = directory.path("store.sqlite")
        let arguments = [
            "--store", storePath, "--model", try directory.write("model.json", DemoData.modelJSON), "--listen", listen,
            "--feed", "tcp://127.0.0.1:\(feedPort)", "--log-level", "info",
        ]
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: try directory.write("coordinator.log", "")))
        func startCoordinator() async throws -> CoordinatorProcess {
            try await CoordinatorProcess.start(
                executable: Binaries.url("tributary-coordinator"), arguments: arguments, log: log)
        }
        var coordinator = try await startCoordinator()
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let (go, goContinuation) = AsyncStream.makeStream(of: Void.self)
        // One slot: while the first attempt's save waits, the worker has no room for the job's next attempt.
        let worker = InProcessWorker.start(
            endpoint: listen, handlers: [SaveOnSignal(started: startedContinuation, go: go)],
            heartbeat: .milliseconds(300), concurrency: 1)
        defer { worker.cancel() }
        let client = try JobClient(endpoint: listen)
        let batch = try await client.push([JobSpec(kind: "save-on-signal")]).batch
        for await _ in started { break }

        // The coordinator stopped, the save goes into its socket, unread; then it dies with it. Counted from the
        // stop on: until then the coordinator may still read what waits in its sockets.
        kill(coordinator.pid, SIGSTOP)
        let stopped = coordinator.pid
        let status: BatchStatus
        do {
            try await waitUntil("the coordinator stopped") { Self.isStopped(stopped) }
            let before = try Self.unreadBytes(onPort: listenPort)
            goContinuation.yield()
            try await waitUntil("the save waits in the stopped coordinator's socket") {
                try Self.unreadBytes(onPort: listenPort) >= before + SaveOnSignal.nameLength
            }
            kill(stopped, SIGKILL)
            _ = await coordinator.stop()
            coordinator = try await startCoordinator()
            // Without the save sent again, the worker's one slot stays taken until its 60 s timeout.
            status = try await client.finish(batch, timeout: .seconds(40))
        } catch {
            // Neither the stopped coordinator nor the next one is left behind.
            kill(stopped, SIGKILL)
            _ = await coordinator.stop()
            throw error
        }
        await client.close()
        #expect(await coordinator.stop() == 0)
        #expect(status.doneJobs == 1)
        let (attempts, logins) = try await DatabaseQueue(path: storePath).read { db in
            (
                try Int.fetchOne(db, sql: "SELECT attempt FROM tributary_jobs") ?? 0,
                try String.fetchAll(db, sql: "SELECT login FROM User")
            )
        }
        // The first attempt was lost with the coordinator (its save never read), a later one saved once.
        #expect(attempts >= 2)
        #expect(logins.count == 1 && logins.first != "attempt-1", "\(logins)")
    }
}
