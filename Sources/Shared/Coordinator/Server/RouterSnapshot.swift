import Foundation
import Synchronization

/// What the router publishes of its own state after each step, for reads answered off the router (a status): its
/// workers as they stand, and the local pool it was given. Publishing costs the router a reference copy; a read
/// takes the latest.
final class RouterSnapshot: Sendable {
    /// The router's state at one step.
    struct State: Sendable {
        var workers: [Data: WorkerRecord] = [:]
        var supervisor: WorkerSupervisor?
    }

    private let state = Mutex(State())

    /// Replaces the workers readers see (the router, after each step).
    func publish(workers: [Data: WorkerRecord]) {
        state.withLock { $0.workers = workers }
    }

    /// Sets the local pool a status reports.
    func attach(_ supervisor: WorkerSupervisor) {
        state.withLock { $0.supervisor = supervisor }
    }

    /// When the local pool's stop began, if there is a pool and it has.
    var poolStopBegan: ContinuousClock.Instant? { state.withLock { $0.supervisor }?.stopBegan }

    /// The state the router published last.
    var current: State { state.withLock { $0 } }
}
