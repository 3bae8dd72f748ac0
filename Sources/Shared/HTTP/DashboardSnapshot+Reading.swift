import Foundation
import TributaryCoordinator
import TributaryCore

extension DashboardSnapshot {
    /// Everything the dashboard shows now, read through the coordinator's handlers as the JSON API reads it (a
    /// status, the dead and queued jobs, the subscribers, the recent batches), with the store's file sizes and the
    /// process's totals.
    static func read(from server: CoordinatorServer, rates: RateHistory) async throws -> DashboardSnapshot {
        let handlers = server.handlers
        async let statusRead = handlers.answer { handlers.status.status() }
        async let deadJobs = handlers.answer { handlers.jobs.list(state: .dead, batch: nil, limit: nil, before: nil) }
        async let queuedJobs = handlers.answer {
            handlers.jobs.list(state: .queued, batch: nil, limit: nil, before: nil)
        }
        async let subscriberList = handlers.answer { handlers.subscribers.list() }
        async let batchList = handlers.answer { handlers.batches.recent() }
        let status = try await statusRead
        let sizes = StoreFiles.sizes(of: server.store.path)
        let totals = server.totals
        // The totals shown and the last minute's rates beside them from one reading, so they agree.
        let reading = RateHistory.reading(totals)
        return DashboardSnapshot(
            time: Date().timeIntervalSince1970,
            ready: server.isServing,
            store: .init(path: status.storePath, bytes: sizes.store, walBytes: sizes.wal),
            feed: .init(lastSeq: status.lastSeq, oldestSeq: status.oldestHistorySeq),
            jobs: status.jobs,
            totals: .init(rowsCommitted: reading.rows, jobsDone: reading.jobs, commits: totals.commits),
            rates: rates.samples,
            recent: rates.recent(reading),
            batches: try await batchList, workers: status.workers, running: status.running, dead: try await deadJobs,
            queued: try await queuedJobs, subscribers: try await subscriberList, queues: status.queues,
            cluster: status.cluster)
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
