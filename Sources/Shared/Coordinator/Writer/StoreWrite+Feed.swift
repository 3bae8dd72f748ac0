import Foundation
import TributaryCore

/// The change history's writes (``FeedStore``), as cases of the writer's queue.
extension StoreWrite {
    /// History pruned: commits before `cutoff`, beyond the newest `keep`, at most `limit` at a time.
    static func pruneHistory(before cutoff: Date?, keepingNewest keep: Int?, limit: Int = 2_000) -> StoreWrite<Int> {
        .init(name: "prune history") { store, db in
            try store.feed.pruneHistory(before: cutoff, keepingNewest: keep, limit: limit, in: db)
        }
    }

    /// A durable subscriber registered, or its position moved; synced, as the subscriber is told it is stored (a
    /// subscriber stores its position at most once a second).
    static func updateSubscriber(name: String, position: FeedPosition, registerOnly: Bool)
        -> StoreWrite<DurableSubscriber>
    {
        .init(name: "update subscriber", synced: true) { store, db in
            try store.feed.updateSubscriber(name: name, position: position, registerOnly: registerOnly, in: db)
        }
    }

    /// A durable subscriber forgotten.
    static func deleteSubscriber(name: String) -> StoreWrite<DurableSubscriber> {
        .init(name: "delete subscriber", synced: true) { store, db in
            try store.feed.deleteSubscriber(name: name, in: db)
        }
    }
}
