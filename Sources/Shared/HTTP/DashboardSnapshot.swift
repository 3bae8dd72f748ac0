import Foundation

/// What the dashboard shows at one moment: `GET /api/dashboard`, and each event of `GET /api/events`.
/// docs/operations.md lists its fields.
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

    struct Jobs: Encodable, Sendable {
        var waiting: UInt64
        var queued: UInt64
        var running: UInt64
        var done: UInt64
        var dead: UInt64
        var cancelled: UInt64
    }

    struct Totals: Encodable, Sendable {
        var rowsCommitted: Int
        var jobsDone: Int
        var commits: Int
    }

    struct Batch: Encodable, Sendable {
        var batch: String
        var totalJobs: UInt64
        var doneJobs: UInt64
        var deadJobs: UInt64
        var cancelledJobs: UInt64
        var totalRows: UInt64
        var doneRows: UInt64
    }

    struct Worker: Encodable, Sendable {
        var id: String
        var name: String
        var pid: Int32
        var state: String
        var heartbeatAgeSeconds: Double
        var runningJobs: [UInt64]
    }

    struct RunningJob: Encodable, Sendable {
        var id: UInt64
        var kind: String
        var queue: String
        var batch: String
        var worker: String
        /// The running attempt's number (never given twice for one job).
        var attempt: UInt32
        /// The attempts counted against its retry policy, this one included, and the most it allows.
        var attemptsCounted: UInt32
        var maxAttempts: UInt32
        var done: UInt64
        var total: UInt64
    }

    struct JobError: Encodable, Sendable {
        var attempt: UInt32
        var message: String
        var at: Double
    }

    struct DeadJob: Encodable, Sendable {
        var id: UInt64
        var kind: String
        var queue: String
        var batch: String
        var attempt: UInt32
        var maxAttempts: UInt32
        var attemptsCounted: UInt32
        var updatedAt: Double
        var errors: [JobError]
    }

    struct QueuedJob: Encodable, Sendable {
        var id: UInt64
        var kind: String
        var queue: String
        var batch: String
        var createdAt: Double
        var runAt: Double?
    }

    struct Queue: Encodable, Sendable {
        var name: String
        var queued: UInt64
        var latencySeconds: Double
        var paused: Bool
    }

    struct Subscriber: Encodable, Sendable {
        var name: String
        var position: UInt64
        var lag: UInt64
    }

    var time: Double
    var ready: Bool
    var store: Store
    var feed: Feed
    var jobs: Jobs
    var totals: Totals
    var rates: [RateHistory.Sample]
    var recent: RateHistory.Recent
    var batches: [Batch]
    var workers: [Worker]
    var running: [RunningJob]
    var dead: [DeadJob]
    var queued: [QueuedJob]
    var subscribers: [Subscriber]
    var queues: [Queue]
}
