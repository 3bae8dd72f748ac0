import Foundation
import GRDB
import Testing

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Paused queues in the store: a group commit's claims leave their jobs where they are, and share out only the
/// jobs of the queues still served.
@Suite("Paused queues: the store")
struct QueuePauseStoreTests {
    let directory: TemporaryDirectory
    let store: RootStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
    }

    func claim(_ workers: [String]) async throws -> [[ClaimedJob]] {
        let claims = workers.map {
            ClaimRequest(worker: $0, kinds: ["noop"], queues: ["imports", "default"], limit: 8)
        }
        return try await store.saves.queueGroupCommit([], thenClaim: claims).value.claims.map { try $0.get() }
    }

    @Test(
        "a paused queue's jobs are not claimed and the served queue's are shared as if it had none; resumed, they are")
    func pausedQueueIsLeftOut() async throws {
        let imports = try await store.jobs.pushJobs(
            Array(repeating: JobSpec(kind: "noop", queue: "imports"), count: 2), batch: "b")
        let defaults = try await store.jobs.pushJobs(Array(repeating: JobSpec(kind: "noop"), count: 2), batch: "b")
        #expect(try await store.jobs.setQueue("imports", paused: true))
        #expect(try await !store.jobs.setQueue("imports", paused: true), "pausing a paused queue changes nothing")

        // Two claims of 8 that serve imports first: the two default jobs go one each (counted without imports').
        let claimed = try await claim(["w1", "w2"])
        #expect(claimed.map { $0.map(\.id) } == [[defaults.ids[0]], [defaults.ids[1]]])
        let overview = try await store.jobs.overview()
        #expect(overview.queues.map(\.name) == ["imports"] && overview.queues[0].paused)
        #expect(overview.queues[0].queued == 2)

        #expect(try await store.jobs.setQueue("imports", paused: false))
        #expect(try await !store.jobs.setQueue("imports", paused: false), "resuming a served queue changes nothing")
        #expect(try await claim(["w1"])[0].map(\.id) == imports.ids)
        #expect(try await store.jobs.overview().queues.isEmpty)
    }

    @Test("a queue paused before it has jobs is listed as paused, and stays paused when the store is opened again")
    func pauseIsKept() async throws {
        try await store.jobs.setQueue("later", paused: true)
        try store.close()
        let reopened = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        defer { try? reopened.close() }
        let queues = try await reopened.jobs.overview().queues
        #expect(queues.map(\.name) == ["later"] && queues[0].paused && queues[0].queued == 0)
        _ = try await reopened.jobs.pushJobs([JobSpec(kind: "noop", queue: "later")], batch: "b")
        let claims = [ClaimRequest(worker: "w1", kinds: ["noop"], queues: ["later"], limit: 8)]
        #expect(try await reopened.saves.queueGroupCommit([], thenClaim: claims).value.claims[0].get().isEmpty)
    }

    @Test("at most 1,000 queues are paused at once: one more is refused, naming the limit; a paused one pauses again")
    func pausesAreBounded() async throws {
        try await store.pool.write { db in
            for index in 0..<JobStore.maximumPausedQueues {
                try db.execute(
                    sql: "INSERT INTO tributary_paused_queues (name, paused_at) VALUES (?, 0)", arguments: ["q\(index)"]
                )
            }
        }
        let error = await #expect(throws: StoreError.self) { try await store.jobs.setQueue("one-more", paused: true) }
        #expect(error?.message.contains("1000 queues are paused already") == true, "\(String(describing: error))")
        #expect(try await !store.jobs.setQueue("q7", paused: true))
        #expect(try await store.jobs.setQueue("q7", paused: false))
        #expect(try await store.jobs.setQueue("one-more", paused: true))
    }
}

/// Pausing and resuming a queue with real processes: `tributary queues`, a worker serving it, a restart.
@Suite("Paused queues: real coordinator", .serialized)
struct QueuePauseIntegrationTests {
    static func states(_ storePath: String, queue: String) throws -> [String] {
        try DatabaseQueue(path: storePath).read { db in
            try String.fetchAll(
                db, sql: "SELECT state FROM tributary_jobs WHERE queue = ? ORDER BY id", arguments: [queue])
        }
    }

    @Test(
        "a queue paused with `tributary queues pause` runs none of its jobs, across a coordinator restart, until `queues resume`"
    )
    func pauseAndResume() async throws {
        let directory = try TemporaryDirectory()
        let first = try await TestCoordinator.start(in: directory, workers: 0)
        let paused = try await Binaries.run(
            "tributary", ["queues", "pause", "imports", "--listen", first.process.listenEndpoint])
        #expect(paused.status == 0, "\(paused.error)")
        #expect(paused.output.contains("imports  0 queued") && paused.output.contains("PAUSED"), "\(paused.output)")

        // The worker serves imports first: unpaused, the imports jobs would go before the default ones.
        let firstWorker = try QueueTests.worker(first.process.listenEndpoint, queues: "imports,default")
        defer { firstWorker.kill() }
        let firstClient = try JobClient(endpoint: first.process.listenEndpoint)
        let imports = try await firstClient.push(QueueTests.jobs(3, queue: "imports"))
        let defaults = try await firstClient.push(QueueTests.jobs(3, queue: JobQueue.defaultName))
        _ = try await firstClient.finish(defaults.batch)
        #expect(try Self.states(first.storePath, queue: "imports") == ["queued", "queued", "queued"])
        await firstClient.close()

        // Stopped and started again: the pause is the store's.
        #expect(await first.process.stop() == 0)
        firstWorker.kill()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let endpoint = ["--listen", coordinator.process.listenEndpoint]
        let worker = try QueueTests.worker(coordinator.process.listenEndpoint, queues: "imports,default")
        defer { worker.kill() }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let listed = try await Binaries.run("tributary", ["queues", "list", "--json"] + endpoint)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any])
        let queue = try #require((json["queues"] as? [[String: Any]])?.first)
        #expect(
            queue["name"] as? String == "imports" && queue["paused"] as? Bool == true && queue["queued"] as? Int == 3)
        let second = try await client.push(QueueTests.jobs(2, queue: JobQueue.defaultName))
        _ = try await client.finish(second.batch)
        #expect(try Self.states(coordinator.storePath, queue: "imports") == ["queued", "queued", "queued"])
        let held = try await client.job(imports.ids[0])
        #expect(held.waiting == "queue 'imports' is paused (tributary queues resume imports)", "\(held.waiting ?? "")")

        let resumed = try await Binaries.run("tributary", ["queues", "resume", "imports"] + endpoint)
        #expect(resumed.status == 0 && !resumed.output.contains("PAUSED"), "\(resumed.output) \(resumed.error)")
        let status = try await client.finish(imports.batch)
        #expect(status.doneJobs == 3)
        #expect(try await client.status().queues.isEmpty, "an emptied, served queue is no longer listed")
    }

    @Test("a bad queue name or action is refused, naming the problem, and the coordinator goes on serving")
    func badRequests() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let endpoint = ["--listen", coordinator.process.listenEndpoint]
            let badName = try await Binaries.run("tributary", ["queues", "pause", "no spaces"] + endpoint)
            #expect(badName.status != 0)
            #expect(badName.error.contains("queue 'no spaces' may hold only ASCII letters, digits"), "\(badName.error)")
            let noName = try await Binaries.run("tributary", ["queues", "resume"] + endpoint)
            #expect(noName.status != 0 && noName.error.contains("<name>"), "\(noName.error)")
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            defer { Task { await client.close() } }
            // Past the CLI's checks: the coordinator's own.
            for (name, action, message) in [
                ("imports", "drain", "unknown queue action 'drain' (one of pause, resume)"),
                ("", "pause", "a queue name has 1 to 64 characters (got 0)"),
            ] {
                let error = await #expect(throws: ProtocolError.self) {
                    try await client.connection.request(
                        .queueActionRequest(
                            .with {
                                $0.name = name
                                $0.action = action
                            }))
                }
                #expect(error?.code == .invalidRequest && error?.message == message, "\(String(describing: error))")
            }
            #expect(try await client.queue("imports", action: .pause).paused, "and it goes on serving")
        }
        #expect(exitStatus == 0)
    }
}
