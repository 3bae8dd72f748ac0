import Synchronization

/// A write queued on the store's writer queue, whose result any number of tasks can await.
///
/// The coordinator queues a turn's group commit and goes on reading the next messages while the writer works,
/// instead of waiting for each commit before reading on (writes still run one at a time, in the order queued).
public final class PendingWrite<Value: Sendable>: Sendable {
    private enum State {
        case waiting([UnsafeContinuation<Value, Never>], [@Sendable (Value) -> Void])
        case written(Value)
    }

    private let state = Mutex(State.waiting([], []))

    init() {}

    /// The write's result, once the writer has run it.
    public nonisolated(nonsending) var value: Value {
        get async {
            if let value = result { return value }
            return await withUnsafeContinuation { continuation in
                let value = state.withLock { state -> Value? in
                    switch state {
                    case .written(let value): return value
                    case .waiting(var waiters, let callbacks):
                        waiters.append(continuation)
                        state = .waiting(waiters, callbacks)
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

    /// Calls `body` with the result once the writer has run the write: on the writer's thread, right after the
    /// commit (keep it short, and never wait in it), or at once on this thread when it has run already.
    func whenWritten(_ body: @escaping @Sendable (Value) -> Void) {
        let value = state.withLock { state -> Value? in
            switch state {
            case .written(let value): return value
            case .waiting(let waiters, var callbacks):
                callbacks.append(body)
                state = .waiting(waiters, callbacks)
                return nil
            }
        }
        if let value { body(value) }
    }

    /// Records the result, calls the ``whenWritten(_:)`` callbacks and wakes whoever awaits it. Called once, by
    /// the writer.
    func fulfil(_ value: Value) {
        let (waiters, callbacks) = state.withLock {
            state -> ([UnsafeContinuation<Value, Never>], [@Sendable (Value) -> Void]) in
            guard case .waiting(let waiters, let callbacks) = state else { return ([], []) }
            state = .written(value)
            return (waiters, callbacks)
        }
        for callback in callbacks { callback(value) }
        for waiter in waiters { waiter.resume(returning: value) }
    }
}
