import Foundation

/// A job as `jobs list|show` report it: where it is in the queue, its progress and its error history.
public struct JobInfo: Sendable, Equatable {
    public var id: Int64
    /// The push it came with.
    public var batch: String
    public var kind: String
    public var state: JobState
    /// The attempt running or last run (1-based; 0 before the first).
    public var attempt: Int
    public var maxAttempts: Int
    /// Progress units committed, of `total`.
    public var done: UInt64
    public var total: UInt64
    /// The worker holding it, while running.
    public var worker: String?
    /// Not before this; nil for at once.
    public var runAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    public var arguments: [String: String]
    /// Each failed attempt, oldest first.
    public var errors: [JobError]
    /// The named queue it waits in.
    public var queue: String
    /// Its parent jobs and batches (dependencies), and what a failed parent does to it.
    public var afterJobs: [Int64] = []
    public var afterBatches: [String] = []
    public var onParentFailure: ParentFailure = .fail
    /// The schedule that enqueued it, and that schedule's tick (seconds since 1970).
    public var schedule: String?
    public var tick: Double?
    /// For one job asked for by id while it is queued or waiting: why it has not gone out yet (nil: nothing holds
    /// it, or not asked).
    public var waiting: String?

    public init(
        id: Int64, batch: String, kind: String, state: JobState, attempt: Int, maxAttempts: Int, done: UInt64,
        total: UInt64, worker: String?, runAt: Date?, createdAt: Date, updatedAt: Date, arguments: [String: String],
        errors: [JobError], queue: String = JobQueue.defaultName
    ) {
        self.id = id
        self.batch = batch
        self.kind = kind
        self.state = state
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.done = done
        self.total = total
        self.worker = worker
        self.runAt = runAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.arguments = arguments
        self.errors = errors
        self.queue = queue
    }
}

/// One failed attempt in a job's error history.
public struct JobError: Codable, Sendable, Equatable {
    public let attempt: Int
    /// Seconds since 1970.
    public let at: Double
    public let message: String

    public init(attempt: Int, at: Double, message: String) {
        self.attempt = attempt
        self.at = at
        self.message = message
    }
}

/// A job's progress and state, as the feed's `$jobs` topic carries it after each commit that changes them.
public struct JobProgress: Sendable, Equatable {
    public var id: Int64
    public var batch: String
    public var state: JobState
    public var done: UInt64
    public var total: UInt64
    public var attempt: Int

    public init(id: Int64, batch: String, state: JobState, done: UInt64, total: UInt64, attempt: Int) {
        self.id = id
        self.batch = batch
        self.state = state
        self.done = done
        self.total = total
        self.attempt = attempt
    }
}
