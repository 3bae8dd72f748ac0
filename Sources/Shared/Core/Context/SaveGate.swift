import Dispatch
import Synchronization

/// Lets one save of a context run at a time (Core Data's saves are serial on the context's queue): a save in
/// doubt must be sent again before any later change set goes out, and a save takes its changes only once the saves
/// before it have settled the context.
///
/// A save takes the gate in the same block of the context's queue that settles the saves before it and takes its
/// changes (``tryEnter()``), and needs the queue no more until it leaves: a save made inside a block (the blocking
/// `save()`) can then wait for the gate on the queue without a deadlock. The gate is not handed over, and not
/// first come, first served: whoever waits tries again once it is free.
final class SaveGate: Sendable {
    private enum Waiter {
        case task(CheckedContinuation<Void, Never>)
        case thread(DispatchSemaphore)
    }

    private struct State {
        var busy = false
        var waiting: [Waiter] = []
    }

    private let state = Mutex(State())

    /// Takes the gate when no save holds it.
    /// - Returns: whether the caller holds it now (and must call ``leave()``).
    func tryEnter() -> Bool {
        state.withLock { state in
            guard !state.busy else { return false }
            state.busy = true
            return true
        }
    }

    /// Returns once the gate is free (or was freed meanwhile); the caller tries to take it again.
    func waitUntilFree() async {
        await withCheckedContinuation { continuation in
            let free = state.withLock { state -> Bool in
                guard state.busy else { return true }
                state.waiting.append(.task(continuation))
                return false
            }
            if free { continuation.resume() }
        }
    }

    /// ``waitUntilFree()`` for a thread that blocks (the context's queue, saving inside a block), until `deadline`.
    /// - Returns: false when the deadline passed first.
    func waitUntilFreeBlocking(until deadline: DispatchTime) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        let free = state.withLock { state -> Bool in
            guard state.busy else { return true }
            state.waiting.append(.thread(semaphore))
            return false
        }
        if free || semaphore.wait(timeout: deadline) == .success { return true }
        return state.withLock { state in
            let before = state.waiting.count
            state.waiting.removeAll {
                if case .thread(let waiting) = $0 { return waiting === semaphore }
                return false
            }
            // Not found: `leave()` took it out just now, and signals it.
            return state.waiting.count == before
        }
    }

    /// Whether a save holds the gate now (for tests).
    var isHeld: Bool { state.withLock { $0.busy } }

    /// How many wait for the gate now (for tests that stage a save waiting behind another).
    var waiterCount: Int { state.withLock { $0.waiting.count } }

    /// Frees the gate and wakes everyone waiting for it.
    func leave() {
        let waiting = state.withLock { state -> [Waiter] in
            state.busy = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in waiting {
            switch waiter {
            case .task(let continuation): continuation.resume()
            case .thread(let semaphore): semaphore.signal()
            }
        }
    }
}
