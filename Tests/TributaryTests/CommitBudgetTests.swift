import Testing

@testable import TributaryCoordinator

@Suite("Commit budget: rows, and the time the writer's pace says they take")
struct CommitBudgetTests {
    @Test("without a time budget, or before a long commit was measured, the row budget stands")
    func rowBudgetStands() {
        var untimed = CommitBudget(rows: 50_000, seconds: nil)
        untimed.record(rows: 10_000, budget: 50_000, elapsed: 10)
        #expect(untimed.next == 50_000)
        let fresh = CommitBudget(rows: 50_000, seconds: 1)
        #expect(fresh.next == 50_000)
    }

    @Test("a slow commit shrinks the next to what the pace fits in the time budget, within the row budget")
    func paceShrinksTheBudget() {
        var budget = CommitBudget(rows: 50_000, seconds: 1)
        budget.record(rows: 20_000, budget: 50_000, elapsed: 2)
        #expect(budget.next == 10_000)
        // A faster pace since: the moving average rises, and the row budget caps it.
        for _ in 0..<20 { budget.record(rows: 50_000, budget: 50_000, elapsed: 0.5) }
        #expect(budget.next == 50_000)
    }

    @Test(
        "time the store spent on other writes is charged to the next commit, at most the time budget, and spent by it")
    func otherWritesAreCharged() {
        var budget = CommitBudget(rows: 50_000, seconds: 1, minimumRows: 1_000)
        budget.charge(seconds: 0.5)
        #expect(budget.next == 50_000)  // no pace measured yet: the row budget stands
        budget.record(rows: 20_000, budget: 50_000, elapsed: 1)
        #expect(budget.next == 10_000)  // 20,000 rows/s over the half second the other write left
        budget.charge(seconds: 0.25)
        #expect(budget.take() == (rows: 5_000, charged: true))
        #expect(budget.next == 20_000 && budget.charged == 0)
        #expect(budget.take() == (rows: 20_000, charged: false))
        for _ in 0..<10 { budget.charge(seconds: 3) }
        #expect(budget.charged == 1, "at most the time budget")
        #expect(budget.take() == (rows: 1_000, charged: true))  // never below the minimum
        var untimed = CommitBudget(rows: 50_000, seconds: nil)
        untimed.charge(seconds: 2)
        #expect(untimed.charged == 0)
        #expect(untimed.take() == (rows: 50_000, charged: false))
    }

    @Test("a commit whose budget a charge cut does not count as filling it: the pace stays")
    func chargedCommitsLeaveThePace() {
        var budget = CommitBudget(rows: 50_000, seconds: 1, minimumRows: 1_000)
        budget.record(rows: 20_000, budget: 50_000, elapsed: 1)
        // Filled quickly but cut by a charge: the writer records it against no budget (.max), a short one is ignored.
        budget.record(rows: 1_000, budget: .max, elapsed: 0.1)
        #expect(budget.pace == 20_000)
    }

    @Test("short commits leave the pace alone, and the budget never falls below its minimum")
    func shortCommitsAndTheFloor() {
        var budget = CommitBudget(rows: 50_000, seconds: 1, minimumRows: 1_000)
        budget.record(rows: 10, budget: 50_000, elapsed: 0.01)
        #expect(budget.pace == nil && budget.next == 50_000)
        budget.record(rows: 100, budget: 50_000, elapsed: 1)
        #expect(budget.next == 1_000)
    }

    @Test("after one slow commit, commits that fill their shrunken budget quickly raise it again")
    func recoversFromASlowCommit() {
        var budget = CommitBudget(rows: 50_000, seconds: 1)
        // A cold first commit: 2,000 rows/s.
        budget.record(rows: 2_000, budget: 50_000, elapsed: 1)
        #expect(budget.next == 2_000)
        // The store's real pace: 100,000 rows/s, so each commit at the shrunken budget takes far under a quarter
        // of the time budget, but it filled its budget: it is measured.
        for _ in 0..<30 {
            let rows = budget.next
            budget.record(rows: rows, budget: rows, elapsed: Double(rows) / 100_000)
        }
        #expect(budget.next == 50_000)
    }

    @Test("a time budget of 0 seconds sets none, as on the command line")
    func zeroSecondsIsNone() {
        var budget = CommitBudget(rows: 50_000, seconds: 0)
        budget.record(rows: 20_000, budget: 50_000, elapsed: 2)
        #expect(budget.seconds == nil)
        #expect(budget.next == 50_000)
    }

    @Test("a filled commit collected just after the one before it does not blow up the pace")
    func filledCommitWithTinyElapsed() {
        var budget = CommitBudget(rows: 50_000, seconds: 1)
        budget.record(rows: 5_000, budget: 50_000, elapsed: 1)
        #expect(budget.next == 5_000)
        // Queued behind it by queueAllPending, finished before the first was collected: measured from that
        // collection, it seems to take microseconds.
        budget.record(rows: 5_000, budget: 5_000, elapsed: 0.000_01)
        #expect(budget.next < 10_000)
    }
}
