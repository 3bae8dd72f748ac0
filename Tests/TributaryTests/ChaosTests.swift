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

        init(endpoint: String) throws {
            self.endpoint = endpoint
            process = try Self.launch(endpoint)
        }

        static func launch(_ endpoint: String) throws -> Process {
            let process = Process()
            process.executableURL = Binaries.url("tributary-worker")
            process.arguments = [
                "--connect", endpoint, "--heartbeat-ms", "200", "--concurrency", "2", "--log-level", "critical",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }

        func signal(_ signal: Int32) async throws {
            kill(process.processIdentifier, signal)
            await process.exited()
            process = try Self.launch(endpoint)
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
}
