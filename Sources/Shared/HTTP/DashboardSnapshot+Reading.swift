import Foundation
import TributaryCoordinator
import TributaryCore

extension DashboardSnapshot {
    /// Everything the dashboard shows now, read through the coordinator's handlers as the JSON API reads it (a
    /// status, the dead and queued jobs, the subscribers, the recent batches), with the store's file sizes and the
    /// process's totals.
    static func read(from server: CoordinatorServer, rates: RateHistory) async throws -> DashboardSnapshot {
        let handlers = server.handlers
        async let statusRead = handlers.status.status().value
        async let deadJobs = handlers.jobs.list(state: .dead, batch: nil, limit: nil, before: nil).value
        async let queuedJobs = handlers.jobs.list(state: .queued, batch: nil, limit: nil, before: nil).value
        async let subscriberList = handlers.subscribers.list().value
        async let batchList = handlers.batches.recent().value
        let status = try await statusRead
        let sizes = StoreFiles.sizes(of: server.store.path)
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

/// The sizes of a store's file and its write-ahead log (0 for one that does not exist).
enum StoreFiles {
    static func sizes(of path: String) -> (store: Int64, wal: Int64) {
        func size(_ path: String) -> Int64 {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
        }
        return (size(path), size(path + "-wal"))
    }
}
