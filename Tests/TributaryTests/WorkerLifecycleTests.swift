import Foundation
import Testing

/// A worker process's own lifecycle: signals before it registered, and a coordinator that vanishes.
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
}
