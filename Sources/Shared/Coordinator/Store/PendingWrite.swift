import Synchronization

/// A write queued on the store's writer queue, whose result any number of tasks can await.
///
/// The coordinator queues a turn's group commit and goes on reading the next messages while the writer works,
/// instead of waiting for each commit before reading on (writes still run one at a time, in the order queued).
public final class PendingWrite<Value: Sendable>: Sendable {
    private enum State {
        case waiting([UnsafeContinuation<Value, Never>])
        case written(Value)
    }

    private let state = Mutex(State.waiting([]))

    init() {}

    /// The write's result, once the writer has run it.
    public var value: Value {
        get async {
            if let value = result { return value }
            return await withUnsafeContinuation { continuation in
                let value = state.withLock { state -> Value? in
                    switch state {
                    case .written(let value): return value
                    case .waiting(var waiters):
                        waiters.append(continuation)
                        state = .waiting(waiters)
                        return nil
                    }
                }
                if let value { continuation.resume(returning: value) }
            }
        }
    }

    /// The write's result if the writer has run it, without waiting.
    public var result: Value? {
        state.withLock { state in
            if case .written(let value) = state { return value }
            return nil
        }
    }

    /// Records the result and wakes whoever awaits it. Called once, by the writer.
    func fulfil(_ value: Value) {
        let waiters = state.withLock { state -> [UnsafeContinuation<Value, Never>] in
            guard case .waiting(let waiters) = state else { return [] }
            state = .written(value)
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }
}
