import Foundation
import Testing

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryProtocol

/// The client's answers as domain types: the coordinator's status, batches, pushes, subscribers and schedule actions
/// converted from the wire (checked), and their JSON, the one form the CLI's `--json` and the HTTP API print.
@Suite("Coordinator status and the client's answers", .serialized)
struct CoordinatorStatusTests {
    /// A status with every optional field set and every part present.
    static let fullStatus: CoordinatorStatus = {
        var status = CoordinatorStatus()
        status.workers = [
            .init(id: "w1", name: "pool-1", pid: 41, state: .busy, secondsSinceHeartbeat: 0.5, currentJobID: 12),
            .init(id: "w2", name: "pool-2", pid: 42, state: .idle, secondsSinceHeartbeat: 1.5, currentJobID: nil),
        ]
        status.jobs = JobCounts([.queued: 3, .running: 1, .done: 7])
        status.lastSeq = 90
        status.oldestHistorySeq = 10
        status.storePath = "/var/lib/tributary/store.sqlite"
        status.pool = [.init(name: "pool-1", pid: 41, restarts: 2, lastExitStatus: 9, crashLooping: true)]
        var running = JobJSONTests.fullJob
        running.state = .running
        running.errors = []
        running.waiting = nil
        status.running = [running]
        status.limits = [
            .init(target: .kind("report"), limit: 2, running: 1, periodSeconds: nil),
            .init(target: .queue("mail"), limit: 10, running: 0, periodSeconds: 1),
            .init(target: .kind("export"), argument: "customer", limit: 2, running: 2, periodSeconds: nil),
        ]
        status.queues = [.init(name: "imports", queued: 3, latencySeconds: 4.5, paused: true)]
        return status
    }()

    static func object(_ text: String) throws -> [String: Any] {
        try JobJSONTests.object(text)
    }

    @Test("a status goes to the wire and back unchanged; limit targets are read into kind or queue and argument")
    func statusRoundTrip() throws {
        let wire = Self.fullStatus.wire
        #expect(wire.limits.map(\.target) == ["kind:report", "queue:mail", "kind:export/customer"])
        #expect(wire.workers.map(\.state) == ["busy", "idle"] && wire.workers.map(\.currentJobID) == [12, 0])
        #expect(try CoordinatorStatus(wire) == Self.fullStatus)
        let limit = try CoordinatorStatus.Limit(.with { $0.target = "queue:mail/tenant.id" })
        #expect(limit.target == .queue("mail") && limit.argument == "tenant.id" && limit.name == "queue:mail/tenant.id")
    }

    @Test("a worker state, limit target or schedule action this version does not know is refused by name")
    func unknownNamesRefused() throws {
        var wire = Self.fullStatus.wire
        wire.workers[0].state = "sleepy"
        let state = try #require(throws: ProtocolError.self) { try CoordinatorStatus(wire) }
        #expect(state.message.contains("unknown worker state 'sleepy' (one of idle, busy)"), "\(state.message)")
        for target in ["host:a", "kind:", "kind:export/", ""] {
            let error = try #require(throws: ProtocolError.self) {
                try CoordinatorStatus.Limit(.with { $0.target = target })
            }
            #expect(error.code == .invalidRequest && error.message.contains("'\(target)'"), "\(error.message)")
        }
        let action = try #require(throws: ProtocolError.self) { try ScheduleAction(wire: "snooze") }
        #expect(action.message.contains("unknown schedule action 'snooze' (one of pause, resume, delete)"))
        #expect(try ScheduleAction.allCases.map { try ScheduleAction(wire: $0.rawValue) } == ScheduleAction.allCases)
    }

    @Test("a status's JSON has every field of every part, zero and empty ones included, under the protocol's names")
    func everyStatusField() throws {
        let json = try Self.object(try JobJSON.text(Self.fullStatus))
        #expect(Set(json.keys) == JobJSONTests.expectedKeys(of: Self.fullStatus))
        let workers = try #require(json["workers"] as? [[String: Any]])
        let workerKeys = JobJSONTests.expectedKeys(
            of: Self.fullStatus.workers[0], renamed: ["id": "workerId", "currentJobID": "currentJobId"])
        #expect(workers.allSatisfy { Set($0.keys) == workerKeys }, "\(workers)")
        #expect(workers.map { $0["state"] as? String } == ["busy", "idle"])
        #expect(workers.map { $0["currentJobId"] as? Int } == [12, 0])
        let counts = try #require(json["jobs"] as? [String: Int])
        #expect(counts == ["waiting": 0, "queued": 3, "running": 1, "done": 7, "dead": 0, "cancelled": 0])
        let pool = try #require((json["pool"] as? [[String: Any]])?.first)
        #expect(Set(pool.keys) == JobJSONTests.expectedKeys(of: Self.fullStatus.pool[0]))
        let limits = try #require(json["limits"] as? [[String: Any]])
        // A per-argument limit's argument is written in its target (`kind:export/customer`).
        let limitKeys = JobJSONTests.expectedKeys(of: Self.fullStatus.limits[0]).subtracting(["argument"])
        #expect(limits.allSatisfy { Set($0.keys) == limitKeys }, "\(limits)")
        #expect(limits.map { $0["target"] as? String } == ["kind:report", "queue:mail", "kind:export/customer"])
        #expect(limits.map { $0["periodSeconds"] as? Double } == [0, 1, 0])
        let queue = try #require((json["queues"] as? [[String: Any]])?.first)
        #expect(Set(queue.keys) == JobJSONTests.expectedKeys(of: Self.fullStatus.queues[0]))
        let running = try #require((json["running"] as? [[String: Any]])?.first)
        #expect(
            Set(running.keys) == JobJSONTests.expectedKeys(of: JobJSONTests.fullJob, renamed: JobJSONTests.jobRenames))
        #expect(json["storePath"] as? String == "/var/lib/tributary/store.sqlite")
    }

    @Test("a batch, a push and subscribers: from the wire and back, and their JSON with every field")
    func batchPushAndSubscribers() throws {
        var batch = BatchStatus(batch: "nightly")
        (batch.totalJobs, batch.doneJobs, batch.deadJobs, batch.cancelledJobs) = (5, 3, 1, 1)
        (batch.totalRows, batch.doneRows) = (500, 300)
        batch.dead = [.init(id: 4, message: "boom", attempts: 3)]
        #expect(BatchStatus(batch.wire) == batch && batch.isFinished)
        let batchJSON = try Self.object(try JobJSON.text(batch))
        #expect(Set(batchJSON.keys) == JobJSONTests.expectedKeys(of: batch))
        let dead = try #require((batchJSON["dead"] as? [[String: Any]])?.first)
        #expect(dead["jobId"] as? Int == 4 && dead["message"] as? String == "boom" && dead["attempts"] as? Int == 3)
        #expect(try Self.object(try JobJSON.text(BatchStatus(batch: "empty")))["dead"] as? [Any] != nil)

        let first = PushedBatch(batch: "b", ids: [1, 2], duplicates: [1])
        #expect(PushedBatch(first.wire) == first)
        let both = first.appending(PushedBatch(batch: "b", ids: [7, 8], duplicates: [0]))
        #expect(both == PushedBatch(batch: "b", ids: [1, 2, 7, 8], duplicates: [1, 2]))
        let pushJSON = try Self.object(try JobJSON.text(both))
        #expect(pushJSON["jobIds"] as? [Int] == [1, 2, 7, 8] && pushJSON["duplicates"] as? [Int] == [1, 2])
        #expect(Set(pushJSON.keys) == ["batch", "jobIds", "duplicates"])

        let subscriber = DurableSubscriber(name: "audit", position: 12, updatedAt: Date(timeIntervalSince1970: 100))
        #expect(DurableSubscriber(subscriber.wire) == subscriber)
        let list = try #require(try Self.object(try JobJSON.text([subscriber]))["subscribers"] as? [[String: Any]])
        #expect(Set(list[0].keys) == JobJSONTests.expectedKeys(of: subscriber))
        #expect(list[0]["updatedAt"] as? Double == 100 && list[0]["position"] as? Int == 12)
        let backup = BackupInfo(path: "/b.sqlite", bytes: 4096, lastSeq: 9, seconds: 0.25)
        #expect(BackupInfo(backup.wire) == backup)
    }

    @Test("status --json and GET /api/status have the same fields; a batch and the subscribers have every field")
    func cliAndHTTPAgree() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: ["--limit", "kind:export/customer=2"])
        defer { Task { await coordinator.process.stop() } }
        let jobs = ["--listen", coordinator.process.listenEndpoint]
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let pushed = try await client.push([JobSpec(kind: "noop", queue: "imports")], batch: "nightly")
        _ = try await client.updateSubscriber(name: "audit", position: 0)
        let status = try await client.status()
        await client.close()
        #expect(status.jobs[.queued] == 1 && status.queues.map(\.name) == ["imports"])
        #expect(status.limits.first?.target == .kind("export") && status.limits.first?.argument == "customer")

        let printed = try Self.object(try await Binaries.run("tributary", ["status", "--json"] + jobs).output)
        let url = try #require(coordinator.process.httpURL)
        let served = try Self.object(try await HTTPRequests.send(url + "api/status").body)
        for json in [printed, served] {
            #expect(Set(json.keys) == JobJSONTests.expectedKeys(of: status), "\(json.keys.sorted())")
            #expect((json["jobs"] as? [String: Int])?.count == JobState.allCases.count, "\(json)")
            #expect((json["running"] as? [Any])?.isEmpty == true && (json["workers"] as? [Any])?.isEmpty == true)
            #expect((json["limits"] as? [[String: Any]])?.first?["target"] as? String == "kind:export/customer")
            #expect(json["lastSeq"] as? Int == 0, "a zero is written, not left out")
        }
        let batch = try Self.object(try await HTTPRequests.send(url + "api/batches/" + pushed.batch).body)
        #expect(Set(batch.keys) == JobJSONTests.expectedKeys(of: BatchStatus(batch: "")), "\(batch)")
        #expect(batch["doneJobs"] as? Int == 0 && (batch["dead"] as? [Any])?.isEmpty == true)
        let subscribers = try Self.object(try await HTTPRequests.send(url + "api/subscribers").body)
        let audit = try #require((subscribers["subscribers"] as? [[String: Any]])?.first)
        #expect(audit["name"] as? String == "audit" && audit["position"] as? Int == 0, "\(audit)")
    }
}
