import Synchronization

/// The messages a ``SocketLoop`` received and its consumer has not taken yet, handed over all at once.
///
/// Iterating gives, at each step, everything that arrived since the last step, in arrival order. A consumer
/// that falls behind therefore takes one large batch rather than many small ones, which is what lets the
/// coordinator commit many saves in one transaction and answer them with one wake-up of the loop.
/// One task iterates a queue; iteration ends when the loop stops (after the messages it received) or when the
/// iterating task is cancelled.
///
/// With a byte limit, the loop stops reading the sockets that feed the queue once the messages not yet taken hold
/// that many bytes (``hasRoom``), and is woken to read again when the consumer takes them: a consumer slower than
/// its peers leaves their messages in libzmq's queues (bounded by each socket's receive high-water mark, then by
/// TCP), rather than in an in-process backlog that grows without bound. Nothing is dropped.
public final class InboundQueue: AsyncSequence, Sendable {
    public typealias Element = [SocketLoop.Inbound]

    private struct State {
        var messages: [SocketLoop.Inbound] = []
        var waiter: CheckedContinuation<[SocketLoop.Inbound]?, Never>?
        var finished = false
        var dropped = 0
        /// ``wake()`` was called while the consumer was not waiting: its next wait returns at once.
        var woken = false
        /// The bytes of the frames of `messages`.
        var bytes = 0
        /// `bytes` reached the byte limit: the loop stopped reading, and waits for ``onRoom``.
        var full = false
    }

    private let state = Mutex(State())
    /// The most messages held for a slow consumer; later ones are dropped until it takes what is held.
    private let limit: Int?

    /// The most bytes held for a slow consumer before the loop stops reading (see above); nil for no limit.
    private let byteLimit: Int?
    /// Called (on the consumer's thread) when it takes what filled the queue: wakes the loop to read again.
    private let onRoom: @Sendable () -> Void

    init(limit: Int?, byteLimit: Int? = nil, onRoom: @escaping @Sendable () -> Void = {}) {
        self.limit = limit
        self.byteLimit = byteLimit
        self.onRoom = onRoom
    }

    /// Whether the sockets feeding the queue may be read: the messages not yet taken hold less than the byte limit.
    var hasRoom: Bool { room > 0 }

    /// How many more bytes may be queued before the loop stops reading (`Int.max` without a byte limit).
    var room: Int {
        guard let byteLimit else { return .max }
        return state.withLock { Swift.max(0, byteLimit - $0.bytes) }
    }

    /// The bytes of a message's frames, as counted against the byte limit.
    static func size(_ message: SocketLoop.Inbound) -> Int {
        message.frames.reduce(0) { $0 + $1.count }
    }

    /// How many messages were dropped because the consumer held `limit` untaken.
    public var droppedCount: Int { state.withLock { $0.dropped } }

    /// Queues messages (the loop thread), waking the consumer if it waits.
    func append(_ batch: [SocketLoop.Inbound]) {
        let handOver = state.withLock { state -> (CheckedContinuation<Element?, Never>, Element)? in
            if let limit, state.messages.count + batch.count > limit {
                let room = Swift.max(0, limit - state.messages.count)
                state.messages.append(contentsOf: batch.prefix(room))
                state.dropped += batch.count - room
            } else {
                state.messages.append(contentsOf: batch)
            }
            if let byteLimit {
                state.bytes += batch.reduce(0) { $0 + Self.size($1) }
                state.full = state.bytes >= byteLimit
            }
            guard let waiter = state.waiter, !state.messages.isEmpty else { return nil }
            state.waiter = nil
            // Handed over at once: the loop never stops reading for messages a waiting consumer takes.
            state.bytes = 0
            state.full = false
            defer { state.messages = [] }
            return (waiter, state.messages)
        }
        if let (waiter, messages) = handOver { waiter.resume(returning: messages) }
    }

    /// Wakes the consumer with an empty batch, or makes its next wait return at once when it is not waiting: for
    /// a consumer that serves other events beside the socket's (it looks at them on each step).
    public func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            guard let waiter = state.waiter else {
                state.woken = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: [])
    }

    /// Ends iteration once what is queued was taken (the loop stopped).
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Everything queued, waiting for a message if there is none (or for ``wake()``, which gives an empty batch);
    /// nil at the end or when the task is cancelled.
    nonisolated(nonsending) func next() async -> Element? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Element?, Never>) in
                var madeRoom = false
                let ready = state.withLock { state -> Element?? in
                    // Checked under the lock that the cancellation handler takes: either it sees this waiter, or
                    // this sees the cancellation. A cancelled consumer takes nothing more.
                    if state.finished && state.messages.isEmpty || Task.isCancelled { return .some(nil) }
                    if !state.messages.isEmpty || state.woken {
                        state.woken = false
                        madeRoom = state.full
                        state.bytes = 0
                        state.full = false
                        defer { state.messages = [] }
                        return .some(state.messages)
                    }
                    if state.finished { return .some(nil) }
                    precondition(state.waiter == nil, "an InboundQueue is iterated by one task")
                    state.waiter = waiter
                    return .none
                }
                if madeRoom { onRoom() }
                if let ready { waiter.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let queue: InboundQueue
        var ended = false

        public mutating func next() async -> Element? {
            await next(isolation: nil)
        }

        /// Waits on the caller's actor, so an actor iterating the queue does not hop off it at each step.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            guard !ended else { return nil }
            guard let batch = await queue.next() else {
                ended = true
                return nil
            }
            return batch
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(queue: self)
    }
}
