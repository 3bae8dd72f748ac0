import Foundation
import TributaryCore

/// What the dashboard shows at one moment: `GET /api/dashboard`, and each event of `GET /api/events`.
/// docs/operations.md lists its fields. The domain's values in it (jobs, workers, batches, subscribers, queues) are
/// written as the JSON API writes them (``JobJSON``'s forms); the store's, the feed's and the totals' are the page's own.
struct DashboardSnapshot: Encodable, Sendable {
    struct Store: Encodable, Sendable {
        var path: String
        var bytes: Int64
        var walBytes: Int64
    }

    struct Feed: Encodable, Sendable {
        var lastSeq: UInt64
        var oldestSeq: UInt64
    }

    struct Totals: Encodable, Sendable {
        var rowsCommitted: Int
        var jobsDone: Int
        var commits: Int
    }

    var time: Double
    var ready: Bool
    var store: Store
    var feed: Feed
    var jobs: JobCounts
    var totals: Totals
    var rates: [RateHistory.Sample]
    var recent: RateHistory.Recent
    var batches: [BatchStatus]
    var workers: [CoordinatorStatus.Worker]
    var running: [JobInfo]
    var dead: [JobInfo]
    var queued: [JobInfo]
    var subscribers: [DurableSubscriber]
    var queues: [CoordinatorStatus.Queue]
    /// The cluster this coordinator is the primary of; absent alone.
    var cluster: ClusterStatus?
}
