import CZeroMQ
import Foundation
import Synchronization

/// A dedicated thread that owns a set of sockets, polls them, and bridges them to Swift concurrency.
///
/// Sockets are not thread-safe, and `zmq_poll` blocks, so neither may run on the cooperative thread pool. A
/// loop takes ownership of its sockets when it starts; from then on only its thread touches them. Messages
/// received on any socket arrive, in order, on ``inbound``, as batches: all that arrived since the consumer last
/// took (a consumer can then treat them together, as the coordinator's group commit does). ``send(_:on:)``
/// may be called from any thread or task and is carried out by the loop thread, woken through an `eventfd` when
/// its outbox was empty (one wake-up sends everything queued by then).
///
/// ```swift
/// let router = try context.makeSocket(.router)
/// try router.bind("tcp://127.0.0.1:7400")
/// let loop = SocketLoop(name: "jobs", sockets: [.init(router, receives: true)])
/// loop.start()
/// for await batch in loop.inbound {
///     for message in batch { loop.send(reply(to: message), on: message.socket) }
/// }
/// ```
public final class SocketLoop: @unchecked Sendable {
    // @unchecked: `sockets` is only touched by the loop thread once `start()` ran (thread start is the memory
    // barrier libzmq asks for when a socket changes threads); everything else shared is behind `state`.

    /// Which of the loop's sockets a message came from or goes to: its index in the `sockets` given to init.
    public typealias SocketIndex = Int

    /// Turns the messages queued for one socket since the loop last sent into the messages it sends: for a
    /// protocol that can carry several of its messages in one (fewer sends, wake-ups and reads on both sides).
    /// It must keep the order of the messages meant for each peer.
    public typealias Coalescer = @Sendable ([[Data]]) -> [[Data]]

    /// A socket handed to the loop, and whether the loop reads from it.
    public struct Member {
        let socket: ZMQSocket
        let receives: Bool
        let readsUserID: Bool
        let coalesce: Coalescer?
        let consume: (@Sendable ([Data]) -> Void)?
        let holdsUnsent: Bool

        /// - Parameters:
        ///   - readsUserID: read each message's `User-Id` (the key its peer was admitted with by ZAP).
        ///   - coalesce: applied to what was queued for this socket each time the loop sends; nil sends each
        ///     message as it was queued.
        ///   - consume: takes each message received on this socket, on the loop thread, instead of ``inbound``
        ///     (an XPUB's subscriptions, say: bookkeeping that must not wait behind the consumer).
        ///   - holdsUnsent: a message the socket cannot take yet (no peer connected, for a DEALER that queues only
        ///     to completed connections) waits, with those after it, and goes in order once the socket takes
        ///     messages again; at most ``unsentLimit`` wait (the oldest are dropped, as send failures).
        public init(
            _ socket: ZMQSocket, receives: Bool, readsUserID: Bool = false, coalesce: Coalescer? = nil,
            consume: (@Sendable ([Data]) -> Void)? = nil, holdsUnsent: Bool = false
        ) {
            self.socket = socket
            self.receives = receives
            self.readsUserID = readsUserID
            self.coalesce = coalesce
            self.consume = consume
            self.holdsUnsent = holdsUnsent
        }
    }

    /// The most messages that wait for a socket that holds what it cannot send yet (``Member``'s `holdsUnsent`).
    public static let unsentLimit = 65_536

    /// One message received by the loop.
    public struct Inbound: Sendable {
        /// The index of the socket it came from.
        public let socket: SocketIndex
        /// Its frames, copied out of libzmq.
        public let frames: [Data]
        /// The `User-Id` its peer was admitted with, when the socket reads it and ZAP set one.
        public var userID: String? = nil
    }

    struct Outgoing {
        let socket: SocketIndex
        let frames: [Data]
    }

    struct State {
        var outbox: [Outgoing] = []
        /// ``start()`` was called: the thread polls the sockets.
        var started = false
        /// The thread runs (from ``start()``, or from the first job ``enqueue(_:)`` hands it).
        var threadStarted = false
        var stopping = false
        var stopped = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
        /// Jobs of the actors run on this loop (``enqueue(_:)``), in the order enqueued.
        var jobs: [UnownedJob] = []
        /// The thread ended: jobs run on ``fallback`` from then on.
        var threadEnded = false
        /// Held messages to hand from one socket to another (``moveUnsent(from:to:)``), in the order asked.
        var moves: [(from: SocketIndex, to: SocketIndex)] = []
        /// How many messages each socket holds (``unsentCount(on:)``), as the loop thread last counted.
        var unsentCounts: [Int] = []
    }

    /// Every message received, in arrival order, in batches; finishes when the loop stops.
    public let inbound: InboundQueue

    private let name: String
    private let members: [Member]
    private let state = Mutex(State())
    private let wakeup: WakeupSignal
    private let unsent: Unsent
    private let onSendFailure: @Sendable (ZMQError, SocketIndex) -> Void
    private let onReceive: @Sendable (SocketIndex, [Data]) -> Void
    /// The loop thread's id, set when it starts: sends and jobs from that thread need no wake-up.
    private let loopThread = Atomic<UInt>(0)
    /// When the loop last came back from polling its sockets (nanoseconds of the monotonic clock).
    private let polledAt = Atomic<Int64>(0)
    private let created: ContinuousClock.Instant
    /// Where jobs run once the thread ended (an actor on this loop may still be resumed after its sockets closed).
    private let fallback: DispatchQueue

    /// Creates a loop for the given sockets; nothing runs until ``start()``.
    /// - Parameters:
    ///   - name: the thread's name, for debuggers and logs.
    ///   - sockets: the sockets the loop will own. Do not touch them after `start()`.
    ///   - onSendFailure: told of a message that could not be sent (peer gone, high-water mark reached).
    ///   - onReceive: called on the loop thread as each message arrives, before it is queued on ``inbound``
    ///     (for bookkeeping that must not wait behind the consumer, such as when a peer was last heard from).
    ///   - inboundLimit: the most messages ``inbound`` holds for a slow consumer; later ones are dropped until it
    ///     takes them. Nil holds them all.
    ///   - inboundByteLimit: the most bytes ``inbound`` holds for a slow consumer before the loop stops reading the
    ///     sockets that feed it (the message that crosses the limit is kept), until the consumer takes them; their
    ///     messages wait in libzmq meanwhile. Nil reads whatever arrives.
    public init(
        name: String, sockets: [Member], inboundLimit: Int? = nil, inboundByteLimit: Int? = nil,
        onSendFailure: @escaping @Sendable (ZMQError, SocketIndex) -> Void = { _, _ in },
        onReceive: @escaping @Sendable (SocketIndex, [Data]) -> Void = { _, _ in }
    ) throws {
        self.name = name
        self.members = sockets
        unsent = Unsent(sockets: sockets.count)
        state.withLock { $0.unsentCounts = Array(repeating: 0, count: sockets.count) }
        self.wakeup = try WakeupSignal()
        self.onSendFailure = onSendFailure
        self.onReceive = onReceive
        let wakeup = self.wakeup
        inbound = InboundQueue(limit: inboundLimit, byteLimit: inboundByteLimit) { wakeup.raise() }
        fallback = DispatchQueue(label: name + ".jobs")
        created = .now
    }

    /// Starts polling the sockets, on the loop thread (started now if no job started it), which takes ownership of
    /// them.
    public func start() {
        let needsThread = state.withLock { state -> Bool? in
            guard !state.started && !state.stopping else { return nil }
            state.started = true
            defer { state.threadStarted = true }
            return !state.threadStarted
        }
        switch needsThread {
        case true: startThread()
        case false: wakeup.raise()
        default: break
        }
    }

    /// Runs `body` on the loop's state (for ``enqueue(_:)``).
    func withJobs<T>(_ body: (inout State) -> T) -> T { state.withLock { body(&$0) } }

    /// Wakes the loop thread out of its poll.
    func raiseWakeup() { wakeup.raise() }

    /// The serial queue jobs run on once the thread ended.
    var fallbackQueue: DispatchQueue { fallback }

    func startThread() {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// When the loop last read its sockets (came back from polling them), or when it was made: what was sent to
    /// it before then has been received. A caller judging a peer's silence judges it as of this instant, since a
    /// loop kept busy by a job on its thread (a commit run there) reads nothing meanwhile.
    public var lastPolled: ContinuousClock.Instant {
        let nanoseconds = polledAt.load(ordering: .relaxed)
        return created.advanced(by: .nanoseconds(nanoseconds))
    }

    /// Whether the caller runs on the loop thread.
    var onLoopThread: Bool { loopThread.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// Queues a message for sending on one of the loop's sockets; never blocks. On the loop thread (a job of an
    /// actor run on the loop, a `consume`), it is sent at once, after what other threads queued before it.
    public func send(_ frames: [Data], on socket: SocketIndex) {
        let onLoopThread = onLoopThread
        let (wasEmpty, outgoing) = state.withLock { state -> (Bool, [Outgoing]) in
            guard !state.stopping else { return (false, []) }
            state.outbox.append(Outgoing(socket: socket, frames: frames))
            // Before ``start()`` the sockets are not the thread's yet: what is queued waits for it.
            guard onLoopThread && state.started else { return (state.outbox.count == 1, []) }
            defer { state.outbox = [] }
            return (false, state.outbox)
        }
        // The loop takes the whole outbox under the lock before it polls: a non-empty outbox already has a
        // wake-up on its way or will be taken before the next poll.
        if wasEmpty && !onLoopThread { wakeup.raise() }
        send(outgoing)
    }

    /// How many messages `socket` holds because it could not take them (``Member``'s `holdsUnsent`), as the loop
    /// thread last counted: for a caller that picks which socket to send on (a client of a cluster's members).
    public func unsentCount(on socket: SocketIndex) -> Int {
        state.withLock { $0.unsentCounts[socket] }
    }

    /// Hands what `from` holds, in order, to `to`, behind what `to` holds: messages no peer received yet, to send
    /// through another socket. Done by the loop thread, before what is queued after this call is sent.
    public func moveUnsent(from: SocketIndex, to: SocketIndex) {
        let wasIdle = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.moves.append((from, to))
            return state.moves.count == 1 && state.outbox.isEmpty
        }
        if wasIdle { wakeup.raise() }
    }

    /// Asks the loop to send what is queued, close its sockets and stop; returns once it has. A loop that was
    /// never started closes its sockets at once (queued messages are dropped: nothing was connected to send
    /// them from).
    public func stop() async {
        let neverStarted = state.withLock { state -> Bool in
            defer { state.stopping = true }
            guard !state.threadStarted && !state.stopping else { return false }
            // No thread will run: jobs enqueued from now on run on the fallback queue.
            state.threadStarted = true
            state.threadEnded = true
            return true
        }
        if neverStarted { return finish() }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let alreadyStopped = state.withLock { state -> Bool in
                state.stopping = true
                if state.stopped { return true }
                state.stopWaiters.append(waiter)
                return false
            }
            if alreadyStopped { waiter.resume() } else { wakeup.raise() }
        }
    }

    // MARK: - Loop thread

    private func run() {
        loopThread.store(UInt(pthread_self()), ordering: .relaxed)
        var items = members.map { member in
            zmq_pollitem_t(
                socket: member.socket.unsafeHandle, fd: -1,
                events: member.receives ? Int16(ZMQ_POLLIN) : 0, revents: 0)
        }
        items.append(zmq_pollitem_t(socket: nil, fd: wakeup.fileDescriptor, events: Int16(ZMQ_POLLIN), revents: 0))
        let wakeIndex = items.count - 1

        while true {
            runJobs()
            let (outgoing, moves, stopping, started) = state.withLock {
                state -> ([Outgoing], [(from: SocketIndex, to: SocketIndex)]?, Bool, Bool) in
                // Before ``start()``, what is queued waits: the sockets are not the thread's yet.
                guard state.started else { return ([Outgoing](), nil, state.stopping, false) }
                defer { state.outbox = [] }
                return (state.outbox, takeMoves(&state), state.stopping, true)
            }
            if let moves { applyMoves(moves) }
            for index in members.indices where !unsent.waiting[index].isEmpty { sendUnsent(on: index) }
            send(outgoing)
            if unsent.changed { countUnsent() }
            if stopping { break }

            // A socket whose messages go to ``inbound`` is not read while the consumer has not taken what fills it.
            let hasRoom = inbound.hasRoom
            for (index, member) in members.enumerated() {
                var events: Int16 = 0
                if member.receives { events = member.consume != nil || hasRoom ? Int16(ZMQ_POLLIN) : 0 }
                // Woken once it takes messages again.
                if !unsent.waiting[index].isEmpty { events |= Int16(ZMQ_POLLOUT) }
                items[index].events = events
            }
            do {
                try items.withUnsafeMutableBufferPointer { items in
                    // Until started, only the wake-up (jobs, the start itself) is polled.
                    let polled = started ? items : UnsafeMutableBufferPointer(rebasing: items[wakeIndex...])
                    try ZMQError.check("zmq_poll") { zmq_poll(polled.baseAddress, Int32(polled.count), -1) }
                }
            } catch {
                break  // ETERM: the context is going away under us.
            }
            if items[wakeIndex].revents != 0 { wakeup.clear() }
            guard started else { continue }
            let polled = created.duration(to: .now).components
            polledAt.store(polled.seconds * 1_000_000_000 + polled.attoseconds / 1_000_000_000, ordering: .relaxed)
            var batch: [Inbound] = []
            for index in members.indices where items[index].revents & Int16(ZMQ_POLLIN) != 0 {
                drain(socket: index, into: &batch)
            }
            if !batch.isEmpty { inbound.append(batch) }
        }
        finish()
        // Jobs resumed by the stop (its waiters, the consumer of ``inbound``) and any later ones run on the
        // fallback queue, in order.
        state.withLock { state in
            state.threadEnded = true
            for job in state.jobs { fallback.async { [self] in run(job) } }
            state.jobs = []
        }
    }

    /// Runs the jobs enqueued so far, and those they enqueue, until none is left.
    private func runJobs() {
        while true {
            let jobs = state.withLock { state in
                defer { state.jobs = [] }
                return state.jobs
            }
            guard !jobs.isEmpty else { return }
            for job in jobs { run(job) }
        }
    }

    private func drain(socket index: SocketIndex, into batch: inout [Inbound]) {
        let socket = members[index].socket
        let readsUserID = members[index].readsUserID
        let consume = members[index].consume
        // Bounded so one busy socket cannot starve the others or the outbox, nor fill ``inbound`` past its room.
        var room = consume == nil ? inbound.room - batch.reduce(0) { $0 + InboundQueue.size($1) } : .max
        for _ in 0..<256 where room > 0 {
            guard let (frames, userID) = try? socket.receiveMessage(dontWait: true, readingUserID: readsUserID) else {
                return
            }
            if let consume {
                consume(frames)
                continue
            }
            onReceive(index, frames)
            let message = Inbound(socket: index, frames: frames, userID: userID)
            room -= InboundQueue.size(message)
            batch.append(message)
        }
    }

    /// Sends what was queued, through each socket's coalescer when it has one.
    private func send(_ outgoing: [Outgoing]) {
        var coalescing: [SocketIndex: [[Data]]] = [:]
        for message in outgoing {
            if members[message.socket].coalesce == nil {
                deliver(message.frames, on: message.socket)
            } else {
                coalescing[message.socket, default: []].append(message.frames)
            }
        }
        for (socket, messages) in coalescing {
            let coalesce = members[socket].coalesce!
            for frames in messages.count == 1 ? messages : coalesce(messages) { deliver(frames, on: socket) }
        }
    }

    private func deliver(_ frames: [Data], on socket: SocketIndex) {
        // Behind those already waiting, in order.
        guard unsent.waiting[socket].isEmpty else { return hold(frames, on: socket) }
        do {
            try members[socket].socket.send(frames, dontWait: true)
        } catch let error as ZMQError {
            if error.code == EAGAIN && members[socket].holdsUnsent { return hold(frames, on: socket) }
            onSendFailure(error, socket)
        } catch {
            preconditionFailure("ZMQSocket.send throws only ZMQError")
        }
    }

    private func hold(_ frames: [Data], on socket: SocketIndex) {
        unsent.changed = true
        unsent.waiting[socket].append(frames)
        if unsent.waiting[socket].count > Self.unsentLimit {
            unsent.waiting[socket].removeFirst()
            onSendFailure(ZMQError(operation: "zmq_send", code: EAGAIN, detail: "dropped: too many waiting"), socket)
        }
    }

    /// Sends what waits for `socket`, in order, as far as it takes them.
    private func sendUnsent(on socket: SocketIndex) {
        var sent = 0
        for frames in unsent.waiting[socket] {
            do {
                try members[socket].socket.send(frames, dontWait: true)
            } catch let error as ZMQError {
                if error.code == EAGAIN { break }
                onSendFailure(error, socket)
            } catch {
                preconditionFailure("ZMQSocket.send throws only ZMQError")
            }
            sent += 1
        }
        if sent > 0 {
            unsent.waiting[socket].removeFirst(sent)
            unsent.changed = true
        }
    }

    /// The moves asked for since the loop last took them, if any (most loops never move anything: no work then).
    private func takeMoves(_ state: inout State) -> [(from: SocketIndex, to: SocketIndex)]? {
        guard !state.moves.isEmpty else { return nil }
        defer { state.moves = [] }
        return state.moves
    }

    /// Hands what each move's socket holds to the other, in order.
    private func applyMoves(_ moves: [(from: SocketIndex, to: SocketIndex)]) {
        for move in moves where move.from != move.to && !unsent.waiting[move.from].isEmpty {
            unsent.waiting[move.to] += unsent.waiting[move.from]
            unsent.waiting[move.from] = []
            unsent.changed = true
        }
    }

    /// Publishes how many messages each socket holds, once they changed.
    private func countUnsent() {
        unsent.changed = false
        let counts = unsent.waiting.map(\.count)
        state.withLock { $0.unsentCounts = counts }
    }

    /// Per socket, the messages that wait for it to take messages again (``Member``'s `holdsUnsent`).
    /// `@unchecked Sendable`: only the loop thread touches it.
    private final class Unsent: @unchecked Sendable {
        var waiting: [[[Data]]]
        /// Whether ``waiting`` changed since its counts were published.
        var changed = false
        init(sockets: Int) { waiting = Array(repeating: [], count: sockets) }
    }

    private func finish() {
        for member in members { member.socket.close() }
        inbound.finish()
        let waiters = state.withLock { state in
            state.stopped = true
            state.stopping = true
            defer { state.stopWaiters.removeAll() }
            return state.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
