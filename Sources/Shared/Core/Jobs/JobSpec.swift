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
    /// The job's parents (dependencies), nil for most jobs: kept apart so that a spec without them stays cheap to
    /// copy, where three arrays inline would add their retains and releases to every copy of every spec.
    private var parents: JobParents?

    /// Parent jobs, by id: the job waits (``JobState/waiting``) until each is done.
    public var afterJobs: [Int64] {
        get { parents?.jobs ?? [] }
        set { parents = JobParents.with(parents) { $0.jobs = newValue } }
    }
    /// Parent batches: each counts as done once every job it has is done.
    public var afterBatches: [String] {
        get { parents?.batches ?? [] }
        set { parents = JobParents.with(parents) { $0.batches = newValue } }
    }
    /// Parent jobs of the same push, by index (earlier ones).
    public var afterPushed: [Int] {
        get { parents?.pushed ?? [] }
        set { parents = JobParents.with(parents) { $0.pushed = newValue } }
    }
    /// What a parent that dies or is cancelled does to this job.
    public var onParentFailure: ParentFailure {
        get { parents?.onFailure ?? .fail }
        set { parents = JobParents.with(parents) { $0.onFailure = newValue } }
    }

    /// Whether the job names parents.
    public var hasParents: Bool { parents?.isEmpty == false }

    /// A job of `kind` with `payload` and `arguments`; zero and nil settings take the coordinator's defaults.
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

/// A job's parents and what their failure does to it (``JobSpec/afterJobs`` and the rest).
private final class JobParents: Sendable, Equatable {
    let jobs: [Int64]
    let batches: [String]
    let pushed: [Int]
    let onFailure: ParentFailure

    private init(jobs: [Int64], batches: [String], pushed: [Int], onFailure: ParentFailure) {
        self.jobs = jobs
        self.batches = batches
        self.pushed = pushed
        self.onFailure = onFailure
    }

    var isEmpty: Bool { jobs.isEmpty && batches.isEmpty && pushed.isEmpty }

    /// What to set to: `old` (or none) changed by `change`; nil when that leaves nothing set.
    static func with(_ old: JobParents?, _ change: (inout Values) -> Void) -> JobParents? {
        var values = Values(
            jobs: old?.jobs ?? [], batches: old?.batches ?? [], pushed: old?.pushed ?? [],
            onFailure: old?.onFailure ?? .fail)
        change(&values)
        if values.jobs.isEmpty && values.batches.isEmpty && values.pushed.isEmpty && values.onFailure == .fail {
            return nil
        }
        return JobParents(
            jobs: values.jobs, batches: values.batches, pushed: values.pushed, onFailure: values.onFailure)
    }

    struct Values {
        var jobs: [Int64]
        var batches: [String]
        var pushed: [Int]
        var onFailure: ParentFailure
    }

    static func == (lhs: JobParents, rhs: JobParents) -> Bool {
        lhs.jobs == rhs.jobs && lhs.batches == rhs.batches && lhs.pushed == rhs.pushed && lhs.onFailure == rhs.onFailure
    }
}
