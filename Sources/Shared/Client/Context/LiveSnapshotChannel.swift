import CoreMetrics
import Foundation
import Synchronization

/// The hand-over between a live result's engine, which runs on its view context's queue, and the task that takes
/// its snapshots: the engine publishes each new state; a consumer slower than the feed is not given a backlog, but
/// the latest state, with the state it took before and everything marked changed in between.
///
/// `Shown` is what a snapshot shows (ids and sections, or aggregate rows); `Changed` names what changed in place
/// (the ids of updated rows).
final class LiveSnapshotChannel<Shown: Equatable & Sendable, Changed: Hashable & Sendable>: Sendable {
    /// A state taken by the consumer.
    struct Taken {
        /// The state now.
        let shown: Shown
        /// The state taken before (the empty state for the first).
        let previous: Shown
        /// What was marked changed since the previous state.
        let changed: Set<Changed>
        /// The last commit the state reflects.
        let seq: UInt64
        /// Whether the store was asked again since the previous state.
        let refetched: Bool
    }

    private struct State {
        var shown: Shown
        var delivered: Shown
        var seq: UInt64 = 0
        var version = 0
        var deliveredVersion = 0
        var changed: Set<Changed> = []
        var refetched = false
        var ended = false
        var error: (any Error)?
        var waiter: CheckedContinuation<Void, Never>?
        var refetches = 0
    }

    /// What the consumer does next.
    private enum Step {
        case taken(Taken)
        case finished((any Error)?)
        case wait
    }

    private let state: Mutex<State>
    private let onEnd = Mutex<(@Sendable () -> Void)?>(nil)
    private let refetchCounter: Counter

    /// A channel whose states start from `empty`, counting refetches in the counter `metric` (dimension `entity`).
    init(empty: Shown, metric: String, entity: String, metrics: any MetricsFactory) {
        state = Mutex(State(shown: empty, delivered: empty))
        refetchCounter = Counter(label: metric, dimensions: [("entity", entity)], factory: metrics)
    }

    /// How many times the engine asked the store again since its first fetch.
    var refetches: Int { state.withLock { $0.refetches } }

    /// Records a new state, with what changed in place, the commit, and the engine's refetches so far. A state equal
    /// to the last one with nothing changed (a commit that changed nothing shown) wakes nobody: the next snapshot
    /// carries its seq.
    func publish(_ shown: Shown, changed: some Sequence<Changed>, seq: UInt64, refetches: Int) {
        let (waiter, refetched) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Int) in
            guard !state.ended else { return (nil, 0) }
            let refetched = max(0, refetches - state.refetches)
            state.refetches = refetches
            let changed = Set(changed)
            if state.version > 0, changed.isEmpty, shown == state.shown {
                state.seq = seq
                return (nil, refetched)
            }
            state.refetched = state.refetched || refetched > 0
            state.shown = shown
            state.seq = seq
            state.changed.formUnion(changed)
            state.version += 1
            defer { state.waiter = nil }
            return (state.waiter, refetched)
        }
        if refetched > 0 { refetchCounter.increment(by: refetched) }
        waiter?.resume()
    }

    /// Ends the channel, with `error` when something stopped it.
    func end(throwing error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.ended else { return nil }
            state.ended = true
            state.error = error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
        onEnd.withLock { end in
            defer { end = nil }
            return end
        }?()
    }

    /// Calls `body` once, when the channel ends (to stop following the view).
    func whenEnded(_ body: @escaping @Sendable () -> Void) {
        // Checked and set under the hand-over's lock: an end between the two would otherwise never call `body`.
        let endedAlready = onEnd.withLock { end -> Bool in
            guard !state.withLock({ $0.ended }) else { return true }
            end = body
            return false
        }
        if endedAlready { body() }
    }

    /// The next state not yet taken, waiting for one; nil once the channel ended or the task is cancelled.
    /// - Throws: the error the channel ended with.
    func take() async throws -> Taken? {
        while true {
            let step = state.withLock { state -> Step in
                if state.version > state.deliveredVersion {
                    let taken = Taken(
                        shown: state.shown, previous: state.delivered, changed: state.changed, seq: state.seq,
                        refetched: state.refetched)
                    state.delivered = state.shown
                    state.deliveredVersion = state.version
                    state.changed = []
                    state.refetched = false
                    return .taken(taken)
                }
                if state.ended { return .finished(state.error) }
                return .wait
            }
            switch step {
            case .taken(let taken): return taken
            case .finished(let error):
                if let error { throw error }
                return nil
            case .wait:
                if Task.isCancelled { return nil }
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let ready = state.withLock { state -> Bool in
                            if state.version > state.deliveredVersion || state.ended || state.waiter != nil {
                                return true
                            }
                            state.waiter = continuation
                            return false
                        }
                        if ready { continuation.resume() }
                    }
                } onCancel: {
                    let waiter = state.withLock { state in
                        defer { state.waiter = nil }
                        return state.waiter
                    }
                    waiter?.resume()
                }
                if Task.isCancelled { return nil }
            }
        }
    }
}
