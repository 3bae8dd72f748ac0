import Foundation

/// A job as `jobs list|show` report it: where it is in the queue, its progress and its error history.
public struct JobInfo: Sendable, Equatable {
    /// The job's id in the coordinator's queue.
    public var id: Int64
    /// The push it came with.
    public var batch: String
    /// Its kind (``JobSpec/kind``).
    public var kind: String
    /// Where it is in the queue.
    public var state: JobState
    /// The attempt running or last run (1-based; 0 before the first). A job's attempt numbers are never given twice,
    /// so a late save or failure of an earlier run cannot pass as a later one's.
    public var attempt: Int
    /// Attempts before it is dead (its spec's, or the coordinator's default), counted by ``attemptsCounted``.
    public var maxAttempts: Int
    /// The attempts that count against ``maxAttempts``: ``attempt`` less those handed back without counting (a
    /// graceful stop, a worker's goodbye) and those run before the dead job was retried.
    public var attemptsCounted: Int
    /// Progress units committed, of `total`.
    public var done: UInt64
    /// Progress units when done (``JobSpec/total``).
    public var total: UInt64
    /// The worker holding it, while running.
    public var worker: String?
    /// Not before this; nil for at once.
    public var runAt: Date?
    /// When it was pushed.
    public var createdAt: Date
    /// When its state, attempt or progress last changed.
    public var updatedAt: Date
    /// Its arguments (``JobSpec/arguments``).
    public var arguments: [String: String]
    /// Each failed attempt, oldest first.
    public var errors: [JobError]
    /// The named queue it waits in.
    public var queue: String
    /// Its parent jobs (dependencies), by id.
    public var afterJobs: [Int64] = []
    /// Its parent batches (dependencies), by name.
    public var afterBatches: [String] = []
    /// What a parent that dies or is cancelled does to it.
    public var onParentFailure: ParentFailure = .fail
    /// The schedule that enqueued it; nil for a pushed job.
    public var schedule: String?
    /// The tick of ``schedule`` it was enqueued for, in seconds since 1970.
    public var tick: Double?
    /// For one job asked for by id while it is queued or waiting: why it has not gone out yet (nil: nothing holds
    /// it, or not asked).
    public var waiting: String?

    /// A job as the coordinator reports it, without parents or schedule.
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
        self.attemptsCounted = attempt
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
    /// The attempt that failed (1-based).
    public let attempt: Int
    /// When it failed, in seconds since 1970.
    public let at: Double
    /// Why it failed.
    public let message: String

    /// Attempt `attempt` failing at `at` with `message`.
    public init(attempt: Int, at: Double, message: String) {
        self.attempt = attempt
        self.at = at
        self.message = message
    }
}

/// A job's progress and state, as the feed's `$jobs` topic carries it after each commit that changes them.
public struct JobProgress: Sendable, Equatable {
    /// The job's id.
    public var id: Int64
    /// The batch it was pushed with.
    public var batch: String
    /// Its state after the change.
    public var state: JobState
    /// Progress units committed, of ``total``.
    public var done: UInt64
    /// Progress units when done.
    public var total: UInt64
    /// The attempt that made the change (1-based; 0 before the first).
    public var attempt: Int

    /// Job `id`'s progress and state.
    public init(id: Int64, batch: String, state: JobState, done: UInt64, total: UInt64, attempt: Int) {
        self.id = id
        self.batch = batch
        self.state = state
        self.done = done
        self.total = total
        self.attempt = attempt
    }
}
