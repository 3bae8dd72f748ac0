import Foundation
import TributaryCoordinator
import TributaryCore
import TributaryProtocol

/// What the HTTP endpoint reads of the coordinator, put together for the dashboard and the metrics: each read is the
/// request a ZeroMQ client or the JSON API makes (status, job lists, subscribers), which the router hands to the
/// reader pool, so one read has one path; the recent batches (asked by nobody else) and the file sizes are read
/// here.
struct CoordinatorView: Sendable {
    let server: CoordinatorServer

    /// A request answered by the router like a client's; a refusal is thrown as the ``ProtocolError`` it names.
    func request(_ body: Tributary_V1_Envelope.OneOf_Body) async throws -> Tributary_V1_Envelope.OneOf_Body {
        let reply = try await server.request(body)
        if case .error(let error) = reply { throw ProtocolError(error) }
        return reply
    }

    /// The coordinator's status as a status request answers it now: asked afresh by each caller, so a scrape that
    /// follows a command's end sees what it did (the dashboard's snapshot, made at most once a second whoever asks,
    /// is where sharing happens).
    func status() async throws -> CoordinatorStatus {
        guard case .statusReply(let status) = try await request(.statusRequest(.init())) else {
            throw ProtocolError(.internal, "the coordinator answered a status request with something else")
        }
        return try CoordinatorStatus(status)
    }

    /// The newest 50 jobs in `state`, as `GET /api/jobs?state=` lists them.
    func jobs(_ state: JobState) async throws -> [JobInfo] {
        let request = Tributary_V1_JobsRequest.with {
            $0.state = state.rawValue
            $0.limit = 50
        }
        guard case .jobsReply(let reply) = try await self.request(.jobsRequest(request)) else {
            throw ProtocolError(.internal, "the coordinator answered a job list with something else")
        }
        return try reply.jobs.map(JobInfo.init)
    }

    /// The durable subscribers, as `GET /api/subscribers` lists them.
    func subscribers() async throws -> [DurableSubscriber] {
        guard case .subscribersReply(let reply) = try await request(.subscribersRequest(.init())) else {
            throw ProtocolError(.internal, "the coordinator answered a subscriber list with something else")
        }
        return reply.subscribers.map(DurableSubscriber.init)
    }

    /// The sizes of the store's file and its write-ahead log (0 for one that does not exist).
    func fileSizes() -> (store: Int64, wal: Int64) {
        func size(_ path: String) -> Int64 {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
        }
        return (size(server.store.path), size(server.store.path + "-wal"))
    }

    /// Everything the dashboard shows now.
    func snapshot(rates: RateHistory) async throws -> DashboardSnapshot {
        async let statusReply = status()
        async let deadJobs = jobs(.dead)
        async let queuedJobs = jobs(.queued)
        async let subscriberList = subscribers()
        async let batchList = server.store.jobs.recentBatches()
        let status = try await statusReply
        let sizes = fileSizes()
        let totals = server.totals
        // The totals shown and the last minute's rates beside them from one reading, so they agree.
        let reading = RateHistory.reading(totals)
        let byWorker = Dictionary(grouping: status.running) { $0.worker ?? "" }
        return DashboardSnapshot(
            time: Date().timeIntervalSince1970,
            ready: server.isServing,
            store: .init(path: status.storePath, bytes: sizes.store, walBytes: sizes.wal),
            feed: .init(lastSeq: status.lastSeq, oldestSeq: status.oldestHistorySeq),
            jobs: .init(
                waiting: status.jobs[.waiting], queued: status.jobs[.queued], running: status.jobs[.running],
                done: status.jobs[.done], dead: status.jobs[.dead], cancelled: status.jobs[.cancelled]),
            totals: .init(rowsCommitted: reading.rows, jobsDone: reading.jobs, commits: totals.commits),
            rates: rates.samples,
            recent: rates.recent(reading),
            batches: try await batchList.map {
                .init(
                    batch: $0.batch, totalJobs: $0.totalJobs, doneJobs: $0.doneJobs, deadJobs: $0.deadJobs,
                    cancelledJobs: $0.cancelledJobs, totalRows: $0.totalRows, doneRows: $0.doneRows)
            },
            workers: status.workers.map { worker in
                .init(
                    id: worker.id, name: worker.name, pid: worker.pid, state: worker.state.rawValue,
                    heartbeatAgeSeconds: worker.secondsSinceHeartbeat,
                    runningJobs: (byWorker[worker.id] ?? []).map { UInt64($0.id) })
            },
            running: status.running.map {
                .init(
                    id: UInt64($0.id), kind: $0.kind, queue: $0.queue, batch: $0.batch, worker: $0.worker ?? "",
                    attempt: UInt32(clamping: $0.attempt), attemptsCounted: UInt32(clamping: $0.attemptsCounted),
                    maxAttempts: UInt32(clamping: $0.maxAttempts), done: $0.done, total: $0.total)
            },
            dead: try await deadJobs.map { job in
                .init(
                    id: UInt64(job.id), kind: job.kind, queue: job.queue, batch: job.batch,
                    attempt: UInt32(clamping: job.attempt), maxAttempts: UInt32(clamping: job.maxAttempts),
                    attemptsCounted: UInt32(clamping: job.attemptsCounted),
                    updatedAt: job.updatedAt.timeIntervalSince1970,
                    errors: job.errors.map {
                        .init(attempt: UInt32(clamping: $0.attempt), message: $0.message, at: $0.at)
                    })
            },
            queued: try await queuedJobs.map {
                .init(
                    id: UInt64($0.id), kind: $0.kind, queue: $0.queue, batch: $0.batch,
                    createdAt: $0.createdAt.timeIntervalSince1970, runAt: $0.runAt?.timeIntervalSince1970)
            },
            subscribers: try await subscriberList.map {
                .init(
                    name: $0.name, position: $0.position,
                    lag: status.lastSeq > $0.position ? status.lastSeq - $0.position : 0)
            },
            queues: status.queues.map {
                .init(name: $0.name, queued: $0.queued, latencySeconds: $0.latencySeconds, paused: $0.paused)
            })
    }
}
