import Foundation

/// How many rows the next group commit takes: the row budget, or fewer when the writer's recent pace says that
/// many would take longer than the time budget.
///
/// Saves gather while the store writes, and the next commit takes them up to this budget: larger commits write
/// each index page once for more rows, but every save in a commit waits for all of it, so the time budget bounds
/// how long an acknowledgement can wait behind other workers' rows. The pace is measured on commits that filled
/// their budget, or that were long enough for their fixed costs not to count (a quarter of the time budget or more);
/// other short ones leave it as it was, so small commits cannot talk the budget down, and one slow commit (a cold
/// cache) cannot hold it down: the commits at its shrunken budget fill it and raise it again.
///
/// The other writes (pruning, failures, schedules) that saves gathered behind are charged to it: those saves waited
/// for them too, so the next commit gets the time they left (``charge(seconds:)``). A commit charged so does not
/// count as filling its budget: a budget cut short says nothing new about the store's pace.
struct CommitBudget {
    /// The most rows a commit takes.
    let rows: Int
    /// The longest a commit should take, in seconds; nil (or 0 given) sets no time budget.
    let seconds: Double?
    /// The fewest rows the time budget leaves a commit.
    let minimumRows: Int
    /// Rows per second of the recent long commits (a moving average); nil until one was measured.
    private(set) var pace: Double?
    /// Seconds the store spent on other writes since the last commit was queued.
    private(set) var charged: Double = 0

    init(rows: Int, seconds: Double?, minimumRows: Int = 1_000) {
        self.rows = max(1, rows)
        self.seconds = seconds.flatMap { $0 > 0 ? $0 : nil }
        self.minimumRows = max(1, min(minimumRows, self.rows))
    }

    /// The row budget of the next commit: what the pace fits in the time budget less the time charged.
    var next: Int {
        guard let seconds, let pace else { return rows }
        return min(rows, max(minimumRows, Int(pace * max(0, seconds - charged))))
    }

    /// The row budget of a commit being queued (``next``), and whether other writes were charged to it; the charge
    /// is spent on it.
    mutating func take() -> (rows: Int, charged: Bool) {
        defer { charged = 0 }
        return (next, charged > 0)
    }

    /// Charges to the next commit a write other than a commit that kept its saves waiting `seconds` (at most the
    /// whole time budget).
    mutating func charge(seconds spent: Double) {
        guard let seconds, spent > 0 else { return }
        charged = min(seconds, charged + spent)
    }

    /// Records a commit of `rows` rows that took `elapsed` seconds on the store, queued with a row budget of `budget`.
    mutating func record(rows committed: Int, budget: Int, elapsed: Double) {
        guard let seconds, committed > 0, elapsed > 0, elapsed >= seconds / 4 || committed >= budget else { return }
        // A commit queued behind another is timed from when that one was collected, which may be just before it
        // finished: a short filled commit can look far faster than the store is. It may raise the pace at most
        // twofold; a long one is trusted.
        var measured = Double(committed) / elapsed
        if elapsed < seconds / 4, let pace { measured = min(measured, 2 * pace) }
        pace = pace.map { 0.7 * $0 + 0.3 * measured } ?? measured
    }
}
