import Synchronization

/// Lets one save of a context run at a time, in the order they were asked for (Core Data's saves are serial on the
/// context's queue): a save in doubt must be sent again before any later change set goes out.
final class SaveGate: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Returns once no other save runs; call ``leave()`` when done.
    func enter() async {
        let entered = state.withLock { state -> Bool in
            guard state.busy else {
                state.busy = true
                return true
            }
            return false
        }
        if entered { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets the next save in.
    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
