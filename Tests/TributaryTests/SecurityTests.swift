import Foundation
import GRDB
import Testing

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryMessaging
@testable import TributaryProtocol

/// CURVE on every socket with a ZAP allow-list, against real coordinator and worker processes.
@Suite("Integration: CURVE, the allow-list and roles", .serialized)
struct SecurityTests {
    /// Key files for one test: the coordinator's pair, peers' pairs in `keys/`, and the allow-list folder with
    /// the public files of the admitted ones (w1 worker, w2 worker, c1 client, s1 subscriber; u1 is not admitted).
    struct Keys {
        let keys: String
        let allow: String

        init(in directory: TemporaryDirectory) throws {
            keys = directory.path("keys")
            allow = directory.path("allow")
            try FileManager.default.createDirectory(atPath: allow, withIntermediateDirectories: true)
            _ = try CurveKeyFile.generate(in: keys, name: "coordinator", role: .worker)
            for (name, role) in [
                ("w1", CurveKeyFile.Role.worker), ("w2", .worker), ("c1", .client), ("s1", .subscriber),
            ] {
                let made = try CurveKeyFile.generate(in: keys, name: name, role: role)
                try FileManager.default.copyItem(atPath: made.publicPath, toPath: "\(allow)/\(name).pub")
            }
            _ = try CurveKeyFile.generate(in: keys, name: "u1", role: .client)
        }

        var coordinatorArguments: [String] { ["--curve-secret", "\(keys)/coordinator.secret", "--allow", allow] }

        func peer(_ name: String, server: String = "coordinator") throws -> CurveClientKeys {
            try CurveClientKeys(secretFile: "\(keys)/\(name).secret", serverKeyFile: "\(keys)/\(server).pub")
        }
    }

    /// Whether the coordinator answers a status request over `connection` within a short time.
    static func answers(_ connection: CoordinatorConnection) async -> Bool {
        (try? await connection.request(.statusRequest(.init()), timeout: .seconds(2))) != nil
    }

    @Test(
        "an allowed worker imports; unknown, missing or mismatched keys get nothing in; roles bound what each may send")
    func admissionAndRoles() async throws {
        let directory = try TemporaryDirectory()
        let keys = try Keys(in: directory)
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: keys.coordinatorArguments)
        defer { Task { await coordinator.process.stop() } }
        let endpoint = coordinator.process.listenEndpoint

        let worker = Process()
        worker.executableURL = Binaries.url("tributary-worker")
        worker.arguments = [
            "--connect", endpoint, "--curve-secret", "\(keys.keys)/w1.secret", "--server-key",
            "\(keys.keys)/coordinator.pub", "--log-level", "critical",
        ]
        try worker.run()
        defer { worker.terminate() }
        let client = try JobClient(endpoint: endpoint, curve: try keys.peer("c1"))
        let status = try await client.finish(
            try await client.pushImport(DemoData.pullRequests(count: 500, users: 10), rowsPerJob: 100).batch)
        #expect(status.doneJobs == 5 && status.doneRows == 500)

        // Refused at the handshake: nothing they send arrives, so nothing is answered.
        var spec = Tributary_V1_JobSpec()
        spec.kind = "import"
        spec.arguments = ["entity": "PullRequest"]
        spec.payload = Data("{\"number\": 999999}\n".utf8)
        for (label, keysToUse) in [
            ("an unknown key", try keys.peer("u1")), ("no key", nil),
            ("the wrong server key", try keys.peer("c1", server: "u1")),
        ] {
            let outsider = try CoordinatorConnection(endpoint: endpoint, curve: keysToUse)
            outsider.send(.pushJobs(.with { $0.jobs = [spec] }))
            #expect(await !Self.answers(outsider), "\(label) is not let in")
            await outsider.close()
        }

        // Roles: a subscriber may read but not push; a client may not act as a worker.
        let subscriber = try CoordinatorConnection(endpoint: endpoint, curve: try keys.peer("s1"))
        #expect(await Self.answers(subscriber))
        let push = await #expect(throws: ProtocolError.self) {
            _ = try await subscriber.request(.pushJobs(.with { $0.jobs = [spec] }))
        }
        #expect(push?.code == .forbidden && push?.message.contains("a subscriber key may not send pushJobs") == true)
        let hello = await #expect(throws: ProtocolError.self) {
            _ = try await client.connection.request(.workerHello(.with { $0.name = "impostor" }))
        }
        #expect(hello?.code == .forbidden && hello?.message.contains("a client key") == true)

        #expect(try await client.status().jobs[.done] == 5)
        let (jobs, outsiders) = try await DatabaseQueue(path: coordinator.storePath).read { db in
            (
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_jobs"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest WHERE number = 999999")
            )
        }
        #expect(jobs == 5 && outsiders == 0)
        await subscriber.close()
        await client.close()
    }

    /// A job that holds its worker until the test ends, or completes at once.
    struct Hold: JobHandler {
        let kind = "hold"
        let completes: Bool
        func run(_ job: JobRun) async throws {
            if !completes {
                while !Task.isCancelled { try await Task.sleep(for: .milliseconds(20)) }
            }
            try await job.complete(job.makeContext(), progress: 1)
        }
    }

    @Test("revoking a worker's key and sending SIGHUP cuts it off and re-leases its job")
    func revocation() async throws {
        let directory = try TemporaryDirectory()
        let keys = try Keys(in: directory)
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: keys.coordinatorArguments)
        defer { Task { await coordinator.process.stop() } }
        let endpoint = coordinator.process.listenEndpoint
        let client = try JobClient(endpoint: endpoint, curve: try keys.peer("c1"))

        let revoked = InProcessWorker.start(
            endpoint: endpoint, handlers: [Hold(completes: false)], curve: try keys.peer("w1"))
        defer { revoked.cancel() }
        let spec = JobSpec(kind: "hold")
        let batch = try await client.push([spec]).batch
        try await waitUntil("w1 runs the job") { try await client.status().jobs[.running] == 1 }

        try FileManager.default.removeItem(atPath: "\(keys.allow)/w1.pub")
        kill(coordinator.process.pid, SIGHUP)
        try await waitUntil("the job to be back in the queue, w1 gone") {
            let status = try await client.status()
            return status.jobs[.running] == 0 && status.workers.isEmpty
        }
        // w1's messages are refused from now on; w2 takes the job and finishes it.
        let successor = InProcessWorker.start(
            endpoint: endpoint, handlers: [Hold(completes: true)], curve: try keys.peer("w2"))
        defer { successor.cancel() }
        let final = try await client.finish(batch)
        #expect(final.doneJobs == 1)
        #expect(try await client.status().workers.count == 1, "only w2 is registered")
        await client.close()
    }

    @Test("with CURVE the TCP stream carries no row values; without it, it does (the tap works)")
    func notPlaintext() async throws {
        for secure in [true, false] {
            let directory = try TemporaryDirectory()
            let keys = try Keys(in: directory)
            let coordinator = try await TestCoordinator.start(
                in: directory, workers: 1, arguments: secure ? keys.coordinatorArguments : [])
            defer { Task { await coordinator.process.stop() } }
            let port = try #require(coordinator.process.listenEndpoint.split(separator: ":").last)
            let capture = directory.path("capture.bin")
            let tap = Process()
            tap.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            tap.arguments = [
                "python3",
                URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                    .appendingPathComponent("Support/tcp_tap.py").path,
                "127.0.0.1", String(port), capture,
            ]
            let output = Pipe()
            tap.standardOutput = output
            // Its own stderr: an inherited one would keep the test runner's output open.
            tap.standardError = FileHandle.nullDevice
            try tap.run()
            // SIGKILL: the test process may ignore SIGTERM, and ignored signals stay ignored across exec.
            defer { kill(tap.processIdentifier, SIGKILL) }
            let tapPort = try #require(
                String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
                    .split(separator: "\n").first)

            let canary = "CANARY-PLAINTEXT-7391"
            let row = """
                {"number": 1, "title": "\(canary)", "merged": false, "additions": 1, "createdAt": "2024-01-01T00:00:00Z", "author": {"login": "a"}, "reviewers": []}

                """
            let client = try JobClient(
                endpoint: "tcp://127.0.0.1:\(tapPort)", curve: secure ? try keys.peer("c1") : nil)
            let status = try await client.finish(try await client.pushImport(Data(row.utf8), rowsPerJob: 1).batch)
            #expect(status.doneJobs == 1)
            await client.close()
            let bytes = try Data(contentsOf: URL(fileURLWithPath: capture))
            #expect(bytes.count > 100, "the tap carried the client's traffic")
            let sawCanary = bytes.range(of: Data(canary.utf8)) != nil
            #expect(sawCanary == !secure, secure ? "encrypted: no row value on the wire" : "plain: the tap sees it")
        }
    }
}
