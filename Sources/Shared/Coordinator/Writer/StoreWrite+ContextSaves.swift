import Foundation

/// The context saves' log's writes (``ContextSaveLog``), as cases of the writer's queue.
extension StoreWrite {
    /// Save ids recorded before `cutoff` forgotten, at most `limit` at a time.
    static func pruneContextSaves(before cutoff: Date, limit: Int) -> StoreWrite<Int> {
        .init(name: "prune context saves") { _, db in try ContextSaveLog.prune(before: cutoff, limit: limit, in: db) }
    }
}
