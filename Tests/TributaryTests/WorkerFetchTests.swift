import Foundation
import GRDB
import Testing

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Fetches in worker contexts, answered by a real coordinator process over ZeroMQ, and the sample custom worker
/// of examples/ run as its own process.
@Suite("Integration: fetches in workers and the sample custom worker", .serialized)
struct WorkerFetchTests {
    /// A job that inserts pull request 5001 without saving, then fetches; it records what its fetches returned.
    struct FetchProbe: JobHandler {
        let kind = "fetch-probe"
        let seen: Locked<[String: [Int64]]>

        func run(_ job: JobRun) async throws {
            let context = job.makeContext()
            let results = try await context.perform { context -> [String: [Int64]] in
                let pr = try context.insert("PullRequest")
                try pr.setValue(.int(5001), for: "number")
                try pr.setValue(.string("unsaved"), for: "title")
                try pr.setValue(.bool(false), for: "merged")
                try pr.setValue(.int(7), for: "additions")
                try pr.setValue(.date(Date(timeIntervalSince1970: 0)), for: "createdAt")
                let numbers = { (objects: [ManagedObject]) in
                    objects.compactMap { object -> Int64? in
                        if case .int(let number) = object["number"] { return number }
                        return nil
                    }
                }
                let small = FetchRequest(
                    entity: "PullRequest", predicate: try FetchPredicate(format: "number > %d", 5000),
                    sortedBy: [FetchSort("number")])
                let titled = FetchRequest(
                    entity: "PullRequest", predicate: try FetchPredicate(format: "title BEGINSWITH[c] %@", "UNSAV"))
                return [
                    "inserted": numbers(try context.fetch(small)),
                    "count": [Int64(try context.count(for: FetchRequest(entity: "PullRequest")))],
                    "titled": numbers(try context.fetch(titled)),
                    "ids": [Int64(try context.fetchObjectIDs(small).count)],
                ]
            }
            seen.withLock { $0 = results }
            try await job.complete(context, progress: 1)
        }
    }

    @Test("a fetch in a worker's context is answered by the coordinator and includes the context's unsaved insert")
    func workerFetchSeesUnsavedInserts() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        _ = try await client.finish(
            try await client.pushImport(DemoData.pullRequests(count: 50, users: 5), rowsPerJob: 50).batch)

        let seen = Locked<[String: [Int64]]>([:])
        let worker = InProcessWorker.start(
            endpoint: coordinator.process.listenEndpoint, handlers: [FetchProbe(seen: seen)])
        defer { worker.cancel() }
        let spec = JobSpec(kind: "fetch-probe")
        let status = try await client.finish(try await client.push([spec]).batch)
        #expect(status.doneJobs == 1, "\(status.dead.map(\.message))")
        let results = seen.withLock { $0 }
        #expect(results["inserted"] == [5001])
        #expect(results["count"] == [51], "50 stored pull requests and the unsaved one")
        #expect(results["titled"] == [5001])
        #expect(results["ids"] == [1])
        // The job's save put it in the store.
        let stored = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest WHERE number = 5001")
        }
        #expect(stored == 1)
        await client.close()
    }

    @Test("the sample triage-worker (examples/) runs its job kind: fetch, find-or-create, objectTrump")
    func sampleWorker() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        _ = try await client.finish(
            try await client.pushImport(DemoData.pullRequests(count: 300, users: 10), rowsPerJob: 100).batch)

        let worker = Process()
        worker.executableURL = Binaries.url("triage-worker")
        worker.arguments = ["--connect", coordinator.process.listenEndpoint]
        worker.standardError = FileHandle.nullDevice
        try worker.run()
        defer { worker.terminate() }

        func triage(minimum: Int) async throws -> BatchStatus {
            let spec = JobSpec(kind: "triage", arguments: ["min_additions": String(minimum)])
            return try await client.finish(try await client.push([spec]).batch)
        }
        // Twice: the first job creates the reviewer, the second finds the stored one.
        for minimum in [400, 200] {
            let status = try await triage(minimum: minimum)
            #expect(status.doneJobs == 1, "\(status.dead.map(\.message))")
            try await DatabaseQueue(path: coordinator.storePath).read { db in
                #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM User WHERE login = 'triage-bot'") == 1)
                let expected = try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM PullRequest WHERE merged = 0 AND additions >= ?",
                    arguments: [minimum])
                let reviewed = try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) FROM PullRequest p
                        JOIN PullRequest_reviewers r ON r.source = p._rowid
                        JOIN User u ON u._rowid = r.destination AND u.login = 'triage-bot'
                        WHERE p.merged = 0 AND p.additions >= ? AND abs(p.score - p.additions / 100.0) < 1e-9
                        """, arguments: [minimum])
                #expect((expected ?? 0) > 0)
                #expect(reviewed == expected)
                let wrongly = try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) FROM PullRequest p JOIN PullRequest_reviewers r ON r.source = p._rowid
                        JOIN User u ON u._rowid = r.destination AND u.login = 'triage-bot'
                        WHERE p.merged = 1 OR p.additions < 200
                        """)
                #expect(wrongly == 0)
            }
        }
        // Bad input is a permanent failure, named.
        let bad = try await triage(minimum: -1)
        #expect(bad.deadJobs == 1 && bad.dead.first?.message.contains("min_additions") == true)
        worker.terminate()
        await worker.exited()
        await client.close()
    }
}
