/// The coordinator's metric names (Prometheus conventions: `_total` counters, `_seconds` and `_bytes` units), in
/// one place for the code that records them, the endpoint that exports them and the tests that read them. What each
/// counts is its ``help`` text (in MetricNames+Help.swift); docs/operations.md describes each in full.
public enum MetricNames {
    /// Counter, by `kind`.
    public static let jobsPushed = "tributary_jobs_pushed_total"
    /// Counter, by `kind`.
    public static let jobsStarted = "tributary_jobs_started_total"
    /// Counter, by `kind`.
    public static let jobsDone = "tributary_jobs_done_total"
    /// Counter, by `kind`.
    public static let jobsFailed = "tributary_jobs_failed_total"
    /// Counter, by `kind`.
    public static let jobsDead = "tributary_jobs_dead_total"
    /// Counter, by `kind`.
    public static let jobsCancelled = "tributary_jobs_cancelled_total"
    /// Gauge, by `state`, read from the store at each scrape.
    public static let jobs = "tributary_jobs"
    /// Histogram, by `kind`.
    public static let jobRunSeconds = "tributary_job_run_seconds"
    /// Histogram, by `kind`.
    public static let jobQueueWaitSeconds = "tributary_job_queue_wait_seconds"
    /// Counter.
    public static let rowsCommitted = "tributary_rows_committed_total"
    /// Counter.
    public static let commits = "tributary_commits_total"
    /// Histogram.
    public static let groupCommitRows = "tributary_group_commit_rows"
    /// Histogram.
    public static let groupCommitSeconds = "tributary_group_commit_seconds"
    /// Histogram, by `write`: a write other than a group commit or a push (pruning, a failure, a schedule).
    public static let writeSeconds = "tributary_writer_write_seconds"
    /// Histogram.
    public static let saveCommitSeconds = "tributary_save_commit_seconds"
    /// Histogram.
    public static let commitPublishSeconds = "tributary_commit_publish_seconds"
    /// Gauge, by `queue`, read from the store at each scrape.
    public static let queueJobs = "tributary_queue_jobs"
    /// Gauge, by `queue`, read from the store at each scrape.
    public static let queueLatencySeconds = "tributary_queue_latency_seconds"
    /// Gauge, by `queue`: 1 while the queue is paused, read from the store at each scrape.
    public static let queuePaused = "tributary_queue_paused"
    /// Gauge, read at each scrape.
    public static let workersConnected = "tributary_workers_connected"
    /// Gauge, by `subscriber`, read from the store at each scrape.
    public static let subscriberLagCommits = "tributary_subscriber_lag_commits"
    /// Gauge, read at each scrape.
    public static let storeBytes = "tributary_store_bytes"
    /// Gauge, read at each scrape.
    public static let walBytes = "tributary_wal_bytes"
    /// Gauge, read at each scrape: 1 while the store can be written, 0 while a write was refused for a full disk or
    /// a read-only filesystem (until one commits).
    public static let storeWritable = "tributary_store_writable"
    /// Gauge, read at each scrape: the leader epoch of a cluster's primary (absent for a coordinator alone).
    public static let clusterEpoch = "tributary_cluster_epoch"
    /// Gauge, read at each scrape: 1 while a cluster's primary holds its writes for want of a standby in sync.
    public static let clusterWritesBlocked = "tributary_cluster_writes_blocked"
    /// Gauge, read at each scrape: writes a cluster's primary committed and has not acknowledged yet.
    public static let clusterHeldWrites = "tributary_cluster_held_writes"
    /// Gauge, read at each scrape: a cluster's standbys in sync.
    public static let clusterStandbysInSync = "tributary_cluster_standbys_in_sync"
    /// Gauge, by `standby`, read at each scrape: records the primary holds beyond what the standby acknowledged.
    public static let clusterStandbyLagRecords = "tributary_cluster_standby_lag_records"
    /// Gauge, read at each scrape: 1 on a cluster's primary, 0 on a standby (absent for a coordinator alone).
    public static let clusterPrimary = "tributary_cluster_primary"
    /// Gauge, read at each scrape of a standby: the position of the last record its store holds.
    public static let clusterStandbyLastRecord = "tributary_cluster_standby_last_record"
    /// Gauge, read at each scrape of a standby: seconds since it last applied records.
    public static let clusterStandbySecondsSinceRecord = "tributary_cluster_standby_seconds_since_record"
    /// Gauge, read at each scrape.
    public static let historyOldestSeq = "tributary_history_oldest_seq"
    /// Gauge, read at each scrape.
    public static let historyNewestSeq = "tributary_history_newest_seq"
    /// Counter, by `reason`.
    public static let peersRefused = "tributary_peers_refused_total"
    /// Counter, by protocol error `code`.
    public static let messagesRefused = "tributary_messages_refused_total"
    /// Gauge, read at each scrape: the process's resident memory (`/proc/self/statm`), under the name Prometheus'
    /// own process collectors give it.
    public static let processResidentMemory = "process_resident_memory_bytes"
}
