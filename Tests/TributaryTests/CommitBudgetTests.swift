import Testing

@testable import TributaryCoordinator

@Suite("Commit budget: rows, and the time the writer's pace says they take")
struct CommitBudgetTests {
    @Test("without a time budget, or before a long commit was measured, the row budget stands")
    func rowBudgetStands() {
        var untimed = CommitBudget(rows: 50_000, seconds: nil)
        untimed.record(rows: 10_000, elapsed: 10)
        #expect(untimed.next == 50_000)
        let fresh = CommitBudget(rows: 50_000, seconds: 1)
        #expect(fresh.next == 50_000)
    }

    @Test("a slow commit shrinks the next to what the pace fits in the time budget, within the row budget")
    func paceShrinksTheBudget() {
        var budget = CommitBudget(rows: 50_000, seconds: 1)
        budget.record(rows: 20_000, elapsed: 2)
        #expect(budget.next == 10_000)
        // A faster pace since: the moving average rises, and the row budget caps it.
        for _ in 0..<20 { budget.record(rows: 50_000, elapsed: 0.5) }
        #expect(budget.next == 50_000)
    }

    @Test("short commits leave the pace alone, and the budget never falls below its minimum")
    func shortCommitsAndTheFloor() {
        var budget = CommitBudget(rows: 50_000, seconds: 1, minimumRows: 1_000)
        budget.record(rows: 10, elapsed: 0.01)
        #expect(budget.pace == nil && budget.next == 50_000)
        budget.record(rows: 100, elapsed: 1)
        #expect(budget.next == 1_000)
    }
}
