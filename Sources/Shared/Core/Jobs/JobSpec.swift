import Foundation

/// What a job is: its kind, input and how the queue treats it. Pushed by clients (`PushJobs`), stored by the
/// coordinator and handed to the worker that claims it.
///
/// Zero values mean "the default": `maxAttempts` 0 is 20 attempts, `backoffBase`/`backoffCap` zero are 1 s and
/// 10 minutes (see `RetryPolicy`); no `runAt` is at once, no `timeout` is no limit.
public struct JobSpec: Sendable, Equatable {
    /// `"import"`, or a kind registered by a custom worker.
    public var kind: String
    /// The job's input; for `"import"`, NDJSON rows.
    public var payload: Data
    /// For `"import"`: `"entity"`, optional `"batch_size"`.
    public var arguments: [String: String]
    /// Units of progress when done (rows, for `"import"`).
    public var total: UInt64
    /// Attempts before the job is dead; 0 for the default.
    public var maxAttempts: UInt32
    /// The first retry delay (doubling per attempt); zero for the default.
    public var backoffBase: Duration
    /// The longest retry delay; zero for the default.
    public var backoffCap: Duration
    /// Higher runs first; equal priorities run oldest first.
    public var priority: Int32
    /// Not before this; nil for at once.
    public var runAt: Date?
    /// Not enqueued while a job with this key is queued or running.
    public var uniqueKey: String?
    /// An attempt running longer fails (and is retried); nil for no limit.
    public var timeout: Duration?
    /// The named queue it waits in (``JobQueue``).
    public var queue: String
    /// Parent jobs, by id: the job waits (``JobState/waiting``) until each is done.
    public var afterJobs: [Int64] = []
    /// Parent batches: each counts as done once every job it has is done.
    public var afterBatches: [String] = []
    /// Parent jobs of the same push, by index (earlier ones).
    public var afterPushed: [Int] = []
    /// What a parent that dies or is cancelled does to this job.
    public var onParentFailure: ParentFailure = .fail

    /// Whether the job names parents.
    public var hasParents: Bool { !afterJobs.isEmpty || !afterBatches.isEmpty || !afterPushed.isEmpty }

    public init(
        kind: String, payload: Data = Data(), arguments: [String: String] = [:], total: UInt64 = 0,
        maxAttempts: UInt32 = 0, backoffBase: Duration = .zero, backoffCap: Duration = .zero, priority: Int32 = 0,
        runAt: Date? = nil, uniqueKey: String? = nil, timeout: Duration? = nil, queue: String = JobQueue.defaultName
    ) {
        self.kind = kind
        self.payload = payload
        self.arguments = arguments
        self.total = total
        self.maxAttempts = maxAttempts
        self.backoffBase = backoffBase
        self.backoffCap = backoffCap
        self.priority = priority
        self.runAt = runAt
        self.uniqueKey = uniqueKey
        self.timeout = timeout
        self.queue = queue
    }
}
