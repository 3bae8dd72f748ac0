import Foundation

/// State that only the store's writer touches.
package final class WriterState: @unchecked Sendable {
    // @unchecked: used only inside `DatabasePool.write` closures, which GRDB runs one at a time on its writer
    // queue, so the merger and its prepared statements are never used concurrently.
    let merger: ChangeSetMerger
    let statements: WriterStatements
    /// Recent starts of rate-limited kinds and queues, for claims.
    let recentStarts = RecentStarts()
    /// When the inverse index's recent entries are folded.
    let inverseFold: InverseFoldSchedule
    /// Whether the store can be written, as the writer last found.
    package let writability: StoreWritability
    /// This run's store epoch (see ``FeedStore/epoch(at:in:)``): random, positive as an SQLite integer, recorded
    /// with the first commit it stamps.
    let epoch = UInt64.random(in: 1...UInt64(Int64.max))

    /// Starts the WAL over under small writes: its checkpoint runs after a commit is answered.
    let walRestart: WALRestart

    init(merger: ChangeSetMerger, inverseFold: InverseFoldSchedule, durability: Durability, walRestart: WALRestart) {
        self.merger = merger
        self.walRestart = walRestart
        let writability = StoreWritability()
        self.writability = writability
        self.statements = WriterStatements(durability: durability, writability: writability)
        merger.transactionFault = statements.fault
        self.inverseFold = inverseFold
    }

    /// A change set applied outside a group commit was rolled back by its caller: forget what the merger learned
    /// of it (see ``KnownKeys``) and the join rows it gathered.
    package func changesRolledBack() {
        merger.transactionRolledBack()
    }
}
