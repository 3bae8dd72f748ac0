import Synchronization

/// What this coordinator process has committed since it started, for its dashboard's totals and rates (the same
/// events as the `tributary_rows_committed_total`, `tributary_commits_total` and `tributary_jobs_done_total`
/// metrics, readable without a metrics backend). Counted by the router as it answers commits.
public final class CoordinatorTotals: Sendable {
    private let rows = Atomic<Int>(0)
    private let commitCount = Atomic<Int>(0)
    private let jobs = Atomic<Int>(0)

    /// When counting began, every total at 0: where the dashboard's rates start from.
    public let started = ContinuousClock.now

    /// Objects inserted, updated or deleted by committed saves.
    public var rowsCommitted: Int { rows.load(ordering: .relaxed) }
    /// Commits that took a sequence number.
    public var commits: Int { commitCount.load(ordering: .relaxed) }
    /// Jobs whose completing save committed, of the attempts this process sent out.
    public var jobsDone: Int { jobs.load(ordering: .relaxed) }

    init() {}

    func committed(rows count: Int) {
        rows.add(count, ordering: .relaxed)
        commitCount.add(1, ordering: .relaxed)
    }

    func jobDone() {
        jobs.add(1, ordering: .relaxed)
    }
}
