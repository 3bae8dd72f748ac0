import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

/// A status's job counts and queue depths, read from the partial indexes, against the same figures computed from
/// every job row by a connection of the test's own.
@Suite("Job counts and queue latency from the indexes")
struct JobOverviewTests {
    let directory: TemporaryDirectory
    let store: RootStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try RootStore.open(
            path: directory.path("store.sqlite"), model: try Model.decode(Data(everyTypeModelJSON.utf8)))
    }

    /// One job row as the test writes it.
    struct Job {
        var state: JobState
        var queue: String
        var priority: Int
        var runAt: Double
        var createdAt: Double
        var updatedAt: Double

        /// When it became claimable.
        var due: Double { max(createdAt, runAt, updatedAt) }
    }

    /// Writes `jobs` with ids in their order, through a connection of the test's own.
    func insert(_ jobs: [Job]) throws {
        try DatabaseQueue(path: directory.path("store.sqlite")).write { db in
            for job in jobs {
                try db.execute(
                    sql: """
                        INSERT INTO tributary_jobs (batch, kind, arguments, state, queue, priority, run_at, created_at,
                            updated_at) VALUES ('b', 'noop', '{}', ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        job.state.rawValue, job.queue, job.priority, job.runAt, job.createdAt, job.updatedAt,
                    ])
            }
        }
    }

    /// The overview computed from every row: counts by `GROUP BY state`; per queue, for each of its priorities, the
    /// first due job by id, and the longest wait among them.
    func expected(_ now: Double) throws -> (counts: [JobState: UInt64], queues: [JobStore.QueueDepth]) {
        try DatabaseQueue(path: directory.path("store.sqlite")).read { db in
            var counts = Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0, UInt64(0)) })
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) FROM tributary_jobs GROUP BY state") {
                counts[JobState(rawValue: row[0])!] = UInt64(row[1] as Int64)
            }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT queue, priority, run_at, MAX(created_at, run_at, updated_at) AS due FROM tributary_jobs
                    WHERE state = 'queued' ORDER BY id
                    """)
            var queues: [JobStore.QueueDepth] = []
            for (name, jobs) in Dictionary(grouping: rows, by: { $0["queue"] as String }).sorted(by: { $0.key < $1.key }
            ) {
                var heads: [Int: Double] = [:]
                for job in jobs where (job["run_at"] as Double) <= now && heads[job["priority"]] == nil {
                    heads[job["priority"]] = job["due"]
                }
                queues.append(
                    .init(
                        name: name, queued: UInt64(jobs.count),
                        latency: heads.values.min().map { max(0, now - $0) } ?? 0))
            }
            return (counts, queues)
        }
    }

    @Test("random jobs in every state, queue and priority: the overview equals the figures read from every row")
    func randomJobs() async throws {
        var generator = SystemRandomNumberGenerator()
        let now = Date().timeIntervalSince1970
        for round in 0..<5 {
            let jobs = (0..<300).map { _ in
                let created = now - Double.random(in: 0...600, using: &generator)
                return Job(
                    state: JobState.allCases.randomElement(using: &generator)!,
                    queue: ["default", "imports", "mail"].randomElement(using: &generator)!,
                    priority: Int.random(in: -2...2, using: &generator),
                    runAt: Bool.random(using: &generator) ? 0 : now + Double.random(in: -300...300, using: &generator),
                    createdAt: created,
                    updatedAt: min(now, created + Double.random(in: 0...200, using: &generator)))
            }
            try insert(jobs)
            let overview = try await store.jobs.overview(now: Date(timeIntervalSince1970: now))
            let (counts, queues) = try expected(now)
            #expect(overview.counts == counts, "round \(round)")
            #expect(overview.queues.map(\.name) == queues.map(\.name), "round \(round)")
            #expect(overview.queues.map(\.queued) == queues.map(\.queued), "round \(round)")
            for (got, want) in zip(overview.queues, queues) {
                #expect(abs(got.latency - want.latency) < 1e-6, "round \(round), queue \(got.name)")
            }
        }
    }

    @Test("a low-priority job kept waiting behind newer high-priority ones shows in its queue's latency")
    func starvedPriorityShows() async throws {
        let now = Date().timeIntervalSince1970
        try insert([
            Job(state: .queued, queue: "default", priority: 0, runAt: 0, createdAt: now - 500, updatedAt: now - 500),
            Job(state: .queued, queue: "default", priority: 9, runAt: 0, createdAt: now - 5, updatedAt: now - 5),
        ])
        let overview = try await store.jobs.overview(now: Date(timeIntervalSince1970: now))
        #expect(overview.queues.count == 1)
        #expect(abs((overview.queues.first?.latency ?? 0) - 500) < 1e-6)
    }

    @Test("a queue whose jobs are not yet due has no latency; a retry counts from when it became due")
    func dueTimes() async throws {
        let now = Date().timeIntervalSince1970
        try insert([
            Job(
                state: .queued, queue: "later", priority: 0, runAt: now + 60, createdAt: now - 100, updatedAt: now - 100
            ),
            Job(
                state: .queued, queue: "retry", priority: 0, runAt: now - 30, createdAt: now - 900, updatedAt: now - 31),
        ])
        let overview = try await store.jobs.overview(now: Date(timeIntervalSince1970: now))
        #expect(overview.queues.map(\.name) == ["later", "retry"])
        #expect(overview.queues.first?.latency == 0)
        #expect(abs((overview.queues.last?.latency ?? 0) - 30) < 1e-6)
        #expect(overview.counts[.queued] == 2 && overview.counts[.done] == 0)
    }
}
