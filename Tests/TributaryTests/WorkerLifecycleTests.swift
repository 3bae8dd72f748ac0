import Foundation
import GRDB
import Testing

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo

/// A worker process's own lifecycle: signals before it registered, a coordinator that vanishes, and jobs that
/// outlast the worker's shutdown timeout.
@Suite("Integration: a worker's lifecycle", .serialized)
struct WorkerLifecycleTests {
    @Test(
        "a worker that no coordinator answers exits 0 on SIGTERM and SIGINT",
        arguments: [SIGTERM, SIGINT])
    func stopsBeforeRegistering(signal: Int32) async throws {
        // A port nothing listens on (bound once, then released).
        let (port, _) = try ChaosTests.freePorts()
        let worker = try StartedProcess.start("tributary-worker", ["--connect", "tcp://127.0.0.1:\(port)"])
        defer { worker.kill() }
        _ = try await worker.waitForError(containing: "waiting for the coordinator")
        kill(worker.pid, signal)
        #expect(try await worker.waitForExit(timeout: .seconds(15)) == 0)
    }

    @Test("a worker whose key the coordinator does not admit exits 0 on SIGTERM")
    func stopsWhenNotAdmitted() async throws {
        let directory = try TemporaryDirectory()
        let keys = try SecurityTests.Keys(in: directory)
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: keys.coordinatorArguments)
        defer { Task { await coordinator.process.stop() } }
        // u1 has a key pair, but its public key is not in the allow-list.
        let worker = try StartedProcess.start(
            "tributary-worker",
            [
                "--connect", coordinator.process.listenEndpoint, "--curve-secret", "\(keys.keys)/u1.secret",
                "--server-key", "\(keys.keys)/coordinator.pub",
            ])
        defer { worker.kill() }
        _ = try await worker.waitForError(containing: "waiting for the coordinator")
        kill(worker.pid, SIGTERM)
        #expect(try await worker.waitForExit(timeout: .seconds(15)) == 0)
    }

    @Test("--shutdown-seconds out of 0 to 3600, a negative number included, is refused naming the range")
    func badShutdownSeconds() async throws {
        for value in ["-1", "3601", "abc"] {
            let refused = try await Binaries.run("tributary-worker", ["--shutdown-seconds", value])
            #expect(refused.status != 0)
            #expect(
                refused.error.contains(
                    value == "abc" ? "--shutdown-seconds" : "--shutdown-seconds must be between 0 and 3600"),
                "\(value): \(refused.error)")
        }
    }

    @Test(
        "a job still running at the worker's shutdown timeout is interrupted: the worker stops, the job is queued again with no attempt counted, its committed batches kept once"
    )
    func shutdownTimeoutInterruptsJobs() async throws {
        let directory = try TemporaryDirectory()
        let sawCancellation = Locked(false)
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let (group, worker) = InProcessWorker.startStoppable(
            endpoint: coordinator.process.listenEndpoint,
            handlers: [EndlessHandler(sawCancellation: sawCancellation)], shutdownTimeout: .milliseconds(500))
        defer { worker.cancel() }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        // A job that saves a user every few milliseconds for minutes: only the timeout ends it.
        let id = try await client.push([JobSpec(kind: "endless")]).ids[0]
        try await waitUntil("the job to commit a few batches") { try await client.job(id).done >= 3 }
        await group.triggerGracefulShutdown()
        try await withTimeout("the worker to stop at its shutdown timeout", .seconds(30)) {
            try await withTaskCancellationHandler {
                try await worker.value
            } onCancel: {
                worker.cancel()
            }
        }
        #expect(sawCancellation.value, "the handler was stopped by a cancellation")
        try await waitUntil("the goodbye to hand the job back") { try await client.job(id).state == .queued }
        let job = try await client.job(id)
        #expect(job.attemptsCounted == 0 && job.errors.isEmpty, "an interrupted attempt is not the job's failure")
        let users = try await DatabaseQueue(path: directory.path("store.sqlite")).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM User WHERE login LIKE 'endless-%'") ?? 0
        }
        #expect(users >= 3 && users == Int(job.done), "each committed batch is in the store once")
    }

    @Test(
        "SIGTERM to a worker whose coordinator was killed with a save unanswered: it exits 0 at its shutdown timeout, not the save's minute"
    )
    func shutdownTimeoutGivesUpUnansweredSaves() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let worker = try StartedProcess.start(
            "tributary-worker", ["--connect", coordinator.process.listenEndpoint, "--shutdown-seconds", "1"])
        defer { worker.kill() }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        // One job of many batches: once its first batch committed, it has more saves to send.
        let pushed = try await client.pushImport(DemoData.pullRequests(count: 60_000, users: 500), rowsPerJob: 60_000)
        try await waitUntil("the job's first batch") { try await client.batchStatus(pushed.batch).doneRows > 0 }
        await client.close()
        kill(coordinator.process.pid, SIGKILL)
        kill(worker.pid, SIGTERM)
        #expect(try await worker.waitForExit(timeout: .seconds(20)) == 0)
        // The job was still running when the coordinator died: the worker had saves left to send.
        let state = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try String.fetchOne(db, sql: "SELECT state FROM tributary_jobs WHERE id = ?", arguments: [pushed.ids[0]])
        }
        #expect(state == "running")
    }
}
