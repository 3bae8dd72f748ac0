import GRDB

/// When the writer folds the inverse index's recent entries into its large half (``InverseIndex``): once the writer
/// connection made ``changes`` row changes since the last fold (counted by SQLite, triggers' included, so each
/// recent entry is one of them), in a transaction of its own right after a group commit was answered.
///
/// A fold writes each page of the large half it reaches once, so the fewer folds the cheaper an entry; the recent
/// half must stay small enough for the writer's cache, or its own inserts cost what the fold saves. The default sits
/// well inside the range where both hold (see docs/benchmarks.md, 'Scaling').
///
/// Used only on the writer's thread.
final class InverseFoldSchedule {
    /// The default of ``changes``: an import of pull requests makes ~5 row changes a row (the row, its join rows
    /// and their inverse entries), so a fold every ~400,000 rows.
    static let defaultChanges = 2_000_000

    /// Row changes between folds.
    var changes: Int
    /// The connection's change count at which the recent half was empty (the last fold, or what it held at open
    /// taken back).
    private var emptyAt: Int

    /// - Parameter emptyAt: the writer connection's change count less the entries the recent half held when the
    ///   store opened.
    init(changes: Int = defaultChanges, emptyAt: Int) {
        self.changes = changes
        self.emptyAt = emptyAt
    }

    /// Whether enough changed since the recent half was empty.
    func isDue(_ db: Database) -> Bool {
        db.totalChangesCount - emptyAt >= changes
    }

    /// Records a fold (its own changes included), or a failed one: the next is tried after as many changes.
    func folded(_ db: Database) {
        emptyAt = db.totalChangesCount
    }
}
