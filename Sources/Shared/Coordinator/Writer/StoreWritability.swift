import Synchronization

/// Whether the store can be written, as its writer found: a fault stands from a write refused for one (a full disk,
/// a read-only filesystem) until writes commit again and none has been refused for ``settleTime``. On a nearly full
/// disk a small write may fit where the next one does not: the fault does not come and go with each.
///
/// The writer records each refusal and commit (on its thread, without waiting); the router asks
/// ``check(now:)`` at each tick and after answering writes, logs the change, and holds claims while a fault stands;
/// the status and the metrics read ``fault(at:)``.
package final class StoreWritability: Sendable {
    /// A fault the writer found, and since when it stands.
    package struct Fault: Sendable, Equatable {
        /// Why the store cannot be written ("its disk is full"), as the last refused write said.
        package var reason: String
        /// When a write was first refused for it.
        package let since: ContinuousClock.Instant
        /// Writes refused since.
        package var refused: Int
    }

    /// A change the router logs.
    package enum Change: Sendable, Equatable {
        /// The store could be written and no longer can.
        case unwritable(Fault)
        /// The store can be written again after `fault`.
        case writable(after: Fault)
    }

    /// How long after the last refused write a fault stands although writes commit: longer than a waiting job's
    /// longest pause between tries (5 s), so that one job's tries keep it standing.
    package static let settleTime: Duration = .seconds(10)

    private struct State {
        var fault: Fault?
        /// Whether ``check(now:)`` reported the fault that stands.
        var reported = false
        var lastRefused: ContinuousClock.Instant?
        var lastWritten: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    package init() {}

    /// A write was refused because the store cannot be written, for `reason`.
    package func refused(_ reason: String, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            if state.fault == nil {
                state.fault = Fault(reason: reason, since: now, refused: 1)
                state.reported = false
            } else {
                state.fault?.reason = reason
                state.fault?.refused += 1
            }
            state.lastRefused = now
        }
    }

    /// A write that changed something committed (an empty one, which writes nothing to the disk, says nothing).
    package func written(now: ContinuousClock.Instant = .now) {
        state.withLock { $0.lastWritten = now }
    }

    /// The fault that stands at `now`; nil while the store can be written.
    package func fault(at now: ContinuousClock.Instant = .now) -> Fault? {
        state.withLock { Self.standing($0, now: now) }
    }

    /// The change since the last call, if any: a fault found, or one that no longer stands (then forgotten).
    package func check(now: ContinuousClock.Instant = .now) -> Change? {
        state.withLock { state in
            guard let fault = state.fault else { return nil }
            if Self.standing(state, now: now) == nil {
                state.fault = nil
                return state.reported ? .writable(after: fault) : nil
            }
            guard !state.reported else { return nil }
            state.reported = true
            return .unwritable(fault)
        }
    }

    private static func standing(_ state: State, now: ContinuousClock.Instant) -> Fault? {
        guard let fault = state.fault, let refused = state.lastRefused else { return nil }
        if let written = state.lastWritten, written > refused, now - refused >= settleTime { return nil }
        return fault
    }
}
