import Synchronization
import TributaryCore

/// Who a view tells of each commit it merged (its live results), on the context's queue right after the merge, so
/// that what they read of the context is that commit's state.
final class CommitObservers: Sendable {
    /// What an observer is told: a merged commit, and the end of the feed (with what stopped it).
    struct Observer: Sendable {
        let merged: @Sendable (DidSave, ObjectContext) -> Void
        let ended: @Sendable ((any Error)?) -> Void
    }

    private let observers = Mutex<(next: Int, all: [Int: Observer], ended: Bool)>((0, [:], false))

    /// Adds an observer; returns its token for ``remove(_:)``.
    func add(
        merged: @escaping @Sendable (DidSave, ObjectContext) -> Void,
        ended: @escaping @Sendable ((any Error)?) -> Void
    ) -> Int {
        observers.withLock { observers in
            observers.next += 1
            observers.all[observers.next] = Observer(merged: merged, ended: ended)
            return observers.next
        }
    }

    func remove(_ token: Int) {
        _ = observers.withLock { $0.all.removeValue(forKey: token) }
    }

    /// Called on the context's queue once `save` is merged.
    func merged(_ save: DidSave, in context: ObjectContext) {
        let all = observers.withLock { Array($0.all.values) }
        for observer in all { observer.merged(save, context) }
    }

    /// The feed ended.
    func end(throwing error: (any Error)?) {
        let all = observers.withLock { observers in
            observers.ended = true
            defer { observers.all = [:] }
            return Array(observers.all.values)
        }
        for observer in all { observer.ended(error) }
    }
}
