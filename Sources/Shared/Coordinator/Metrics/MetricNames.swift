/// The coordinator's metric names (Prometheus conventions: `_total` counters, `_seconds` and `_bytes` units), in
/// one place for the code that records them, the endpoint that exports them and the tests that read them.
/// docs/operations.md describes each.
public enum MetricNames {
    /// Jobs pushed, by `kind` (counter).
    public static let jobsPushed = "tributary_jobs_pushed_total"
    /// Attempts started (jobs sent to a worker), by `kind` (counter).
    public static let jobsStarted = "tributary_jobs_started_total"
    /// Jobs done, by `kind` (counter).
    public static let jobsDone = "tributary_jobs_done_total"
    /// Attempts failed (reported by the worker, lost with it, or timed out), by `kind` (counter).
    public static let jobsFailed = "tributary_jobs_failed_total"
    /// Jobs that died (a permanent failure, or a failure of their last attempt), by `kind` (counter).
    public static let jobsDead = "tributary_jobs_dead_total"
    /// Jobs cancelled, by `kind` (counter).
    public static let jobsCancelled = "tributary_jobs_cancelled_total"
    /// Jobs by `state` (gauge, read from the store at each scrape).
    public static let jobs = "tributary_jobs"
    /// An attempt's run time, from its assignment to its completion, by `kind` (histogram).
    public static let jobRunSeconds = "tributary_job_run_seconds"
    /// A job's wait in the queue, from when it was last due (pushed, queued again, or its retry's time) to its
    /// assignment, by `kind` (histogram).
    public static let jobQueueWaitSeconds = "tributary_job_queue_wait_seconds"
    /// Objects inserted, updated or deleted by committed saves (an object a save names but leaves as it was, such as
    /// a user found by its login, is not counted) (counter).
    public static let rowsCommitted = "tributary_rows_committed_total"
    /// Commits that took a sequence number (counter).
    public static let commits = "tributary_commits_total"
    /// Objects per group commit (histogram).
    public static let groupCommitRows = "tributary_group_commit_rows"
    /// A group commit's time on the writer (histogram).
    public static let groupCommitSeconds = "tributary_group_commit_seconds"
    /// From the router taking a save from its message to the end of the commit that wrote it (histogram).
    public static let saveCommitSeconds = "tributary_save_commit_seconds"
    /// From a commit's end to its didSave being handed to the feed (histogram).
    public static let commitPublishSeconds = "tributary_commit_publish_seconds"
    /// Jobs queued in a named queue, by `queue` (gauge, read from the store at each scrape).
    public static let queueJobs = "tributary_queue_jobs"
    /// How long a queue's oldest due job has waited, by `queue` (gauge).
    public static let queueLatencySeconds = "tributary_queue_latency_seconds"
    /// Workers registered now (gauge).
    public static let workersConnected = "tributary_workers_connected"
    /// A durable subscriber's distance behind the last commit, in commits, by `subscriber` (gauge).
    public static let subscriberLagCommits = "tributary_subscriber_lag_commits"
    /// The store's main file (gauge).
    public static let storeBytes = "tributary_store_bytes"
    /// The store's write-ahead log (gauge).
    public static let walBytes = "tributary_wal_bytes"
    /// The oldest sequence number the history keeps (gauge).
    public static let historyOldestSeq = "tributary_history_oldest_seq"
    /// The last sequence number committed (gauge).
    public static let historyNewestSeq = "tributary_history_newest_seq"
    /// Connections refused by CURVE authentication, by `reason` (counter).
    public static let peersRefused = "tributary_peers_refused_total"
    /// Requests and messages refused, by protocol error `code` (counter).
    public static let messagesRefused = "tributary_messages_refused_total"
}
