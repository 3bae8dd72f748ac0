import Foundation
import Synchronization

/// Which context is blocked waiting for which, across threads, so that `performAndWait` can refuse a wait that
/// would close a cycle (A's block waits for B while B's block waits for A) instead of deadlocking.
enum WaitGraph {
    /// The queue-specific key every context sets on its queue, to the context's identity: read on a thread, it
    /// names the context whose block the thread is running (the innermost one).
    static let runningContext = DispatchSpecificKey<ContextIdentity>()

    /// A context's identity (this object) and name, as stored on its queue.
    final class ContextIdentity: Sendable {
        let name: String
        var id: ObjectIdentifier { ObjectIdentifier(self) }

        init(name: String) {
            self.name = name
        }
    }

    /// Blocked waits: the context whose block waits → the context it waits for.
    private static let waits = Mutex<[ObjectIdentifier: ContextIdentity]>([:])

    /// Records that the block running on this thread (if it belongs to a context) is about to wait for `target`.
    /// - Returns: the waiting context, to pass to ``leave(_:)``; nil when the thread runs no context's block.
    /// - Throws: ``ContextError`` `waitCycle` when `target` is itself waiting, directly or through others, for the
    ///   waiting context.
    static func enter(waitingFor target: ContextIdentity) throws -> ContextIdentity? {
        guard let waiter = DispatchQueue.getSpecific(key: runningContext) else { return nil }
        try waits.withLock { waits in
            var path = [waiter.name, target.name]
            var next = waits[target.id]
            while let current = next {
                path.append(current.name)
                if current.id == waiter.id {
                    throw ContextError(
                        .waitCycle,
                        "performAndWait would deadlock: \(path.joined(separator: " waits for ")); use perform")
                }
                next = waits[current.id]
            }
            waits[waiter.id] = target
        }
        return waiter
    }

    static func leave(_ waiter: ContextIdentity?) {
        guard let waiter else { return }
        _ = waits.withLock { $0.removeValue(forKey: waiter.id) }
    }
}
