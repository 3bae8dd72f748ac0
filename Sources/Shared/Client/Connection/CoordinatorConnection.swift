import Foundation
import Synchronization
import TributaryMessaging
import TributaryProtocol
import ZeroMQ

/// A DEALER connection to the coordinator's jobs/control socket, used by workers and clients.
///
/// Requests carry a fresh request id and wait for the reply that echoes it; an `Error` reply is thrown as a
/// ``/TributaryProtocol/ProtocolError``. A request that uses a ``/TributaryProtocol/Capability`` names it in its
/// envelope's `requires`, and is never answered with what a coordinator without it made of the request
/// (``request(_:timeout:resendAs:)``). Messages that answer no request (job assignments, unsolicited errors) arrive on
/// ``messages``, in the batches they arrived in. ZeroMQ reconnects in the background, with a backoff of 1 s doubling to
/// 32 s. Given a cluster's members, it talks to one at a time and follows the primary: a standby's `NOT_PRIMARY`
/// names it, and a member left unconnected gives way to the next (docs/failover.md, "Clients").
///
/// ```swift
/// let connection = try CoordinatorConnection(endpoint: "tcp://127.0.0.1:7400")
/// let reply = try await connection.request(.statusRequest(.init()))
/// ```
public final class CoordinatorConnection: Sendable {
    /// The coordinator endpoint.
    public let endpoint: String
    /// Messages that are not replies to a request of this connection, in order, in the batches they arrived in
    /// (one wake-up of the reader for many job assignments).
    public let messages: AsyncStream<[Tributary_V1_Envelope]>

    private struct Waiter {
        let reply: ReplySlot
        let deadline: ContinuousClock.Instant
        let timeout: Duration
        /// What ``resendPendingRequests()`` sends again under the same request id; nil: never sent again.
        var resend: Resend? = nil
        /// The request as sent: what goes to the primary when a standby answers it `NOT_PRIMARY`.
        let frames: [Data]
        /// When a standby last answered it `NOT_PRIMARY`.
        var redirected: ContinuousClock.Instant? = nil
        /// When to send it again, after a `NOT_PRIMARY` that named no primary or came soon after another.
        var retryAt: ContinuousClock.Instant? = nil
    }

    /// A request to send again, under its id, when the coordinator may have lost it.
    struct Resend {
        let body: Tributary_V1_Envelope.OneOf_Body
        let requires: Set<Capability>
    }

    /// Where a request's reply goes: a task's continuation, a thread blocked until it comes, or a handler that
    /// takes it on whichever thread has it (``forward(_:timeout:reply:)``).
    private enum ReplySlot {
        case task(UnsafeContinuation<Tributary_V1_Envelope, any Error>)
        case thread(BlockedThread)
        case handler(@Sendable (Result<Tributary_V1_Envelope, any Error>) -> Void)

        /// Hands the outcome over; called once, by whoever took the waiter out of `pending`.
        func resume(with result: Result<Tributary_V1_Envelope, any Error>) {
            switch self {
            case .task(let continuation): continuation.resume(with: result)
            case .thread(let thread): thread.resume(with: result)
            case .handler(let handler): handler(result)
            }
        }
    }

    /// A thread waiting for a reply: woken by the loop thread that received it, with no task in between.
    private final class BlockedThread: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let outcome = Mutex<Result<Tributary_V1_Envelope, any Error>?>(nil)

        func resume(with result: Result<Tributary_V1_Envelope, any Error>) {
            outcome.withLock { $0 = result }
            done.signal()
        }

        /// Waits for the outcome until `deadline`; nil when it passed first.
        func wait(until deadline: DispatchTime) -> Result<Tributary_V1_Envelope, any Error>? {
            guard done.wait(timeout: deadline) == .success else { return nil }
            return outcome.withLock { $0 }
        }

        /// Waits for the outcome, however long: for a waiter already taken out of `pending` by whoever resumes it.
        func wait() -> Result<Tributary_V1_Envelope, any Error> {
            done.wait()
            return outcome.withLock { $0 ?? .failure(CancellationError()) }
        }
    }

    private struct Pending {
        var waiters: [UInt64: Waiter] = [:]
        /// Set once the connection takes no more requests: what each later one fails with.
        var closedError: ProtocolError?
        /// Set once ``messages`` is finished: nobody registers anew, so no request waits for a copy sent after.
        var messagesFinished = false
        /// Since when the member sent to holds what it cannot send (it is not connected): the next is tried after
        /// ``ClusterMembers/unreachableAfter``.
        var heldSince: (member: Int, since: ContinuousClock.Instant)?
        var closed: Bool { closedError != nil }
    }

    private let context: ZMQContext
    private let loop: SocketLoop
    /// The endpoints a request may go to (a cluster's members), and which one it goes to now.
    private let members: ClusterMembers
    private let pending = Mutex(Pending())
    private let nextRequestID = Atomic<UInt64>(1)
    /// The protocol version of the coordinator's last message (0 until one arrives).
    private let heardVersion = Atomic<UInt32>(0)
    private let messagesContinuation: AsyncStream<[Tributary_V1_Envelope]>.Continuation

    /// Connects to `endpoint`; the connection is made in the background.
    /// - Parameters:
    ///   - endpoint: the coordinator's jobs/control endpoint (`tcp://127.0.0.1:7400`), or a cluster's members'
    ///     endpoints, comma-separated: requests go to one member at a time, its primary once found (a standby
    ///     answers `NOT_PRIMARY` naming it; a member not connected for a second gives way to the next). Given one
    ///     endpoint, a `NOT_PRIMARY` answer is thrown.
    ///   - curve: the peer's CURVE keys, for a coordinator that runs with CURVE; nil takes them from the
    ///     environment (`TRIBUTARY_CURVE_SECRET`, `TRIBUTARY_SERVER_KEY`), else connects without.
    ///   - context: the ZeroMQ context; nil uses the process's (`ZMQContext.shared()`).
    public init(endpoint: String, curve: CurveClientKeys? = nil, context: ZMQContext? = nil) throws {
        self.endpoint = endpoint
        let context = try context ?? ZMQContext.shared()
        self.context = context
        let members = ClusterMembers(endpoint)
        self.members = members
        let keys = try curve ?? CurveClientKeys.resolve(secretFile: nil, serverKeyFile: nil)
        // Replies are handed to their waiters on the loop thread as they arrive: no task is woken in between.
        let receiver = Receiver()
        // A socket per member, so that each request goes to the one chosen.
        let sockets = try members.endpoints.indices.map { index in
            let socket = try context.makeSocket(.dealer)
            if let keys { try keys.apply(to: socket) }
            try socket.setMaximumMessageSize(Limits.maximumMessageBytes)
            try socket.setSendHighWaterMark(0)
            try socket.setLinger(milliseconds: 2000)
            if members.isCluster {
                // Queued only to a completed connection: what a member not connected cannot take is held by the
                // loop (and handed to the next member), rather than lost with a connection that never comes.
                try socket.setImmediate(true)
                try socket.setReconnectInterval(initial: 500, maximum: 0)
            } else {
                try socket.setReconnectInterval(initial: 1000, maximum: 32_000)
            }
            try socket.connect(members.endpoints[index])
            return SocketLoop.Member(
                socket, receives: true, coalesce: { EnvelopePacking.coalesce($0) },
                consume: { receiver.connection?.deliver($0, from: index) }, holdsUnsent: true)
        }
        loop = try SocketLoop(name: "tributary-dealer", sockets: sockets)
        (messages, messagesContinuation) = AsyncStream.makeStream(of: [Tributary_V1_Envelope].self)
        receiver.connection = self
        loop.start()
        let inbound = loop.inbound
        // Detached: these two live as long as the connection (until its loop stops), not as long as whichever
        // task made it; the first ends when the loop stops (its inbound queue finishes: every message was
        // consumed as it came), the second once it is closed.
        Task.detached { [self] in
            for await _ in inbound {}
            failAll(ProtocolError(.shuttingDown, "the connection to \(endpoint) was closed"))
            messagesContinuation.finish()
        }
        // One timer for every request's deadline (and a cluster's member to send to), rather than a task per request.
        Task.detached { [weak self] in
            while let connection = self, connection.expireOverdueRequests() {
                connection.followPrimary()
                try? await Task.sleep(for: Self.deadlineResolution)
            }
        }
    }

    /// How late past its deadline a request may be failed.
    static let deadlineResolution: Duration = .milliseconds(100)

    /// Sends a message that expects no reply.
    public func send(_ body: Tributary_V1_Envelope.OneOf_Body) {
        loop.send(Wire.frames(Wire.envelope(0, body)), on: members.target)
    }

    /// The protocol version the coordinator announced in its last message, or nil before any arrived (1: it
    /// announces none).
    public var coordinatorProtocolVersion: UInt32? {
        let version = heardVersion.load(ordering: .relaxed)
        return version == 0 ? nil : version
    }

    /// Sends a request and waits for its reply.
    ///
    /// A request that uses a capability (``/TributaryProtocol/Capability/needed(by:)``) lists it in `requires`, which a
    /// coordinator of version 2 or later checks, refusing it with `UNSUPPORTED` when it lacks one. A version 1
    /// coordinator checks nothing and would serve such a request without the feature, so it is refused here: a request
    /// that changes the store (a push, a schedule) is not sent once the coordinator is known to be version 1 (this
    /// connection asks its version first when it has not heard it yet); any other (a fetch, a worker's hello) has its
    /// reply from a version 1 coordinator thrown away and refused instead.
    /// - Parameters:
    ///   - body: the request.
    ///   - timeout: how long to wait before giving up with a message naming the endpoint.
    ///   - resendAs: what `resendPendingRequests()` sends in its place, under the same request id, while no reply
    ///     came: for a request that is safe to receive twice (a job's save, whose batch index makes a second copy
    ///     answered rather than applied). Nil: sent once. Such a request answered `UNKNOWN_WORKER` goes on waiting
    ///     for the answer to the copy sent once the worker registered anew (the error comes on ``messages``), unless
    ///     ``finishMessages()`` was called.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` when the coordinator answers with an error, when no answer
    ///   comes in time, or `UNSUPPORTED` naming the capability and both versions when the coordinator lacks a
    ///   capability the request needs.
    public func request(
        _ body: Tributary_V1_Envelope.OneOf_Body, timeout: Duration = .seconds(10),
        resendAs: Tributary_V1_Envelope.OneOf_Body? = nil
    ) async throws -> Tributary_V1_Envelope {
        let needed = Capability.needed(by: body)
        if !needed.isEmpty && Self.changesStore(body) {
            try Self.require(needed, coordinatorVersion: try await coordinatorVersion(timeout: timeout))
        }
        let reply = try await exchange(
            body, requires: needed, timeout: timeout, resend: resendAs.map { Resend(body: $0, requires: needed) })
        if !needed.isEmpty { try Self.require(needed, coordinatorVersion: ProtocolVersion.of(reply)) }
        if case .error(let error) = reply.body { throw ProtocolError(error) }
        return reply
    }

    /// Sends a request and waits for its reply, an `Error` included, checking nothing.
    func exchange(
        _ body: Tributary_V1_Envelope.OneOf_Body, requires: Set<Capability>, timeout: Duration, resend: Resend? = nil
    ) async throws -> Tributary_V1_Envelope {
        let requestID = nextRequestID.add(1, ordering: .relaxed).oldValue
        let frames = Wire.frames(Wire.envelope(requestID, body, requires: requires))
        return try await withTaskCancellationHandler {
            // Unsafe rather than checked: each waiter is resumed once, by whoever takes it out of `pending`.
            try await withUnsafeThrowingContinuation { continuation in
                let refusal = pending.withLock { pending -> (any Error)? in
                    if let closedError = pending.closedError { return closedError }
                    // A task cancelled before this ran its cancellation handler already, finding no waiter:
                    // checked under the lock the handler takes, so one of the two sees the other.
                    if Task.isCancelled { return CancellationError() }
                    pending.waiters[requestID] = Waiter(
                        reply: .task(continuation), deadline: .now + timeout, timeout: timeout, resend: resend,
                        frames: frames)
                    return nil
                }
                if let refusal {
                    continuation.resume(throwing: refusal)
                    return
                }
                loop.send(frames, on: members.target)
            }
        } onCancel: {
            fail(requestID, CancellationError())
        }
    }

    /// Sends a request and blocks the calling thread until its reply: for a context's queue (a Dispatch thread),
    /// where a fetch or a save waits for its answer as Core Data's wait for their store. The reply wakes the
    /// thread from the connection's socket thread. Do not call it from a Swift concurrency task: it would hold a
    /// thread of the cooperative pool for a network round trip.
    /// - Throws: what ``request(_:timeout:resendAs:)`` throws.
    public func requestBlocking(_ body: Tributary_V1_Envelope.OneOf_Body, timeout: Duration = .seconds(60)) throws
        -> Tributary_V1_Envelope
    {
        let needed = Capability.needed(by: body)
        if !needed.isEmpty && Self.changesStore(body) {
            let version =
                try coordinatorProtocolVersion
                ?? ProtocolVersion.of(exchangeBlocking(.versionRequest(.init()), requires: [], timeout: timeout))
            try Self.require(needed, coordinatorVersion: version)
        }
        let reply = try exchangeBlocking(body, requires: needed, timeout: timeout)
        if !needed.isEmpty { try Self.require(needed, coordinatorVersion: ProtocolVersion.of(reply)) }
        if case .error(let error) = reply.body { throw ProtocolError(error) }
        return reply
    }

    /// ``exchange(_:requires:timeout:resend:)`` for a blocked thread.
    private func exchangeBlocking(
        _ body: Tributary_V1_Envelope.OneOf_Body, requires: Set<Capability>, timeout: Duration
    ) throws -> Tributary_V1_Envelope {
        let requestID = nextRequestID.add(1, ordering: .relaxed).oldValue
        let frames = Wire.frames(Wire.envelope(requestID, body, requires: requires))
        let thread = BlockedThread()
        let refusal = pending.withLock { pending -> (any Error)? in
            if let closedError = pending.closedError { return closedError }
            pending.waiters[requestID] = Waiter(
                reply: .thread(thread), deadline: .now + timeout, timeout: timeout, frames: frames)
            return nil
        }
        if let refusal { throw refusal }
        loop.send(frames, on: members.target)
        // The deadline is kept here too, not only by the timer task: a thread blocked outside Swift concurrency does
        // not depend on the cooperative pool to be failed in time.
        if let outcome = thread.wait(until: .after(timeout + Self.deadlineResolution)) {
            return try outcome.get()
        }
        guard pending.withLock({ $0.waiters.removeValue(forKey: requestID) }) != nil else {
            // Taken out by the reply, the timer or a close just now: its outcome is on the way.
            return try thread.wait().get()
        }
        throw overdue(timeout)
    }

    /// Sends `envelope` as it is but for its request id, which becomes one of this connection's, and hands its
    /// reply (an `Error` included, unchecked) or its failure (no answer within `timeout`, the connection closed) to
    /// `reply`, once, on whichever thread has it (the loop thread, the deadline timer's): for a caller with a loop
    /// of its own that must not wait, as a relay forwarding its subscribers' requests. It follows a cluster's
    /// primary as every request does.
    package func forward(
        _ envelope: Tributary_V1_Envelope, timeout: Duration,
        reply: @escaping @Sendable (Result<Tributary_V1_Envelope, any Error>) -> Void
    ) {
        var envelope = envelope
        let requestID = nextRequestID.add(1, ordering: .relaxed).oldValue
        envelope.requestID = requestID
        let frames = Wire.frames(envelope)
        let refusal = pending.withLock { pending -> (any Error)? in
            if let closedError = pending.closedError { return closedError }
            pending.waiters[requestID] = Waiter(
                reply: .handler(reply), deadline: .now + timeout, timeout: timeout, frames: frames)
            return nil
        }
        if let refusal { return reply(.failure(refusal)) }
        loop.send(frames, on: members.target)
    }

    /// Sends again, each under its own request id, the requests still waiting for a reply that were made with
    /// `resendAs` (``request(_:timeout:resendAs:)``): for when the coordinator may have lost them, as when it no longer
    /// knows this worker (it restarted, or dropped the connection): a request it held died with it, and would
    /// otherwise wait out its whole timeout. Whichever copy is answered first resumes the request; the other's
    /// answer comes on ``messages``. Each keeps its deadline.
    package func resendPendingRequests() {
        let again = pending.withLock { pending in
            pending.waiters.compactMap { id, waiter in waiter.resend.map { (id, $0) } }
        }
        let target = members.target
        for (requestID, resend) in again.sorted(by: { $0.0 < $1.0 }) {
            loop.send(Wire.frames(Wire.envelope(requestID, resend.body, requires: resend.requires)), on: target)
        }
    }

    /// How many requests wait for a reply now (for tests that stage a request in flight).
    package var pendingRequests: Int { pending.withLock { $0.waiters.count } }

    /// Whether the connection takes no more requests (closed, or its requests abandoned).
    package var isClosed: Bool { pending.withLock { $0.closed } }

    /// Fails every request waiting for a reply, and every later one, with `SHUTTING_DOWN`; one-way messages
    /// still go out. For a process that stops at once (a pool worker whose coordinator is gone): requests made
    /// outside the cancelled task, such as a context's blocking fetch, would otherwise wait out their timeout.
    package func abandonRequests(_ reason: String) {
        failAll(ProtocolError(.shuttingDown, reason))
    }

    /// Ends ``messages`` for a consumer that takes no more (later ones are dropped); requests still get their
    /// replies.
    public func finishMessages() {
        pending.withLock { $0.messagesFinished = true }
        messagesContinuation.finish()
    }

    /// Sends what is queued (within the linger time) and closes the socket.
    public func close() async {
        await loop.stop()
    }

    /// The error of a request left unanswered for `timeout`.
    private func overdue(_ timeout: Duration) -> ProtocolError {
        ProtocolError(
            .internal,
            "no answer from the coordinator at \(endpoint) within \(timeout) (is tributary-coordinator running there?)")
    }

    /// Fails the requests whose deadline passed.
    /// - Returns: false once the connection is closed.
    private func expireOverdueRequests() -> Bool {
        let now = ContinuousClock.now
        let (overdue, open) = pending.withLock { pending -> ([Waiter], Bool) in
            let overdue = pending.waiters.filter { $0.value.deadline <= now }
            for id in overdue.keys { pending.waiters.removeValue(forKey: id) }
            return (Array(overdue.values), !pending.closed)
        }
        for waiter in overdue { waiter.reply.resume(with: .failure(self.overdue(waiter.timeout))) }
        return open
    }

    /// Resumes the requests a message answers and passes on the rest, together.
    /// The connection the loop thread hands what it receives to; weak, as the connection owns the loop.
    private final class Receiver: @unchecked Sendable {
        // @unchecked: set once, in the connection's init, before the loop starts (its thread's start is the
        // barrier); only read after.
        weak var connection: CoordinatorConnection?
    }

    /// Hands replies to their waiters and yields the rest to ``messages``; on the loop thread, never waits.
    /// - Parameter member: the index of the member (its socket) the message came from.
    private func deliver(_ frames: [Data], from member: Int) {
        guard let decoded = try? Wire.decodeEach(frames[...]) else { return }
        var unsolicited: [Tributary_V1_Envelope] = []
        for case .success(let sized) in decoded {
            let envelope = sized.envelope
            if members.isCluster, case .error(let error) = envelope.body, error.code == .notPrimary {
                redirect(envelope.requestID, answeredBy: member, naming: error.hasPrimary ? error.primary : nil)
                continue
            }
            heardVersion.store(ProtocolVersion.of(envelope), ordering: .relaxed)
            let waiter =
                envelope.requestID == 0
                ? nil
                : pending.withLock { pending -> Waiter? in
                    // A request sent again once the worker registers anew (a save reaching a cluster's new primary
                    // before the worker's new hello) waits for that copy's answer; the error goes on to `messages`,
                    // where it has the worker register.
                    if let waiter = pending.waiters[envelope.requestID], waiter.resend != nil,
                        !pending.messagesFinished, case .error(let error) = envelope.body,
                        error.code == .unknownWorker
                    {
                        return nil
                    }
                    return pending.waiters.removeValue(forKey: envelope.requestID)
                }
            if let waiter {
                waiter.reply.resume(with: .success(envelope))
            } else {
                unsolicited.append(envelope)
            }
        }
        if !unsolicited.isEmpty { messagesContinuation.yield(unsolicited) }
    }

    /// A standby answered `NOT_PRIMARY` (on the loop thread): requests go to the primary it names from now on (the
    /// next member when it names none, or one not among these), and the request it answered is sent there under
    /// its id: the standby did nothing of it. A request redirected again within a second, or with no primary named,
    /// is sent after ``ClusterMembers/redirectPause``.
    private func redirect(_ requestID: UInt64, answeredBy member: Int, naming primary: Tributary_V1_ClusterPrimary?) {
        let named = primary.flatMap { members.index(of: $0.endpoint) }.flatMap { $0 == member ? nil : $0 }
        let next = named ?? members.next(after: member)
        if members.move(from: member, to: next) { loop.moveUnsent(from: member, to: next) }
        guard requestID != 0 else { return }
        let now = ContinuousClock.now
        let frames = pending.withLock { pending -> [Data]? in
            guard let waiter = pending.waiters[requestID] else { return nil }
            let again = waiter.redirected.map { now - $0 < .seconds(1) } ?? false
            pending.waiters[requestID]?.redirected = now
            guard named == nil || again else { return waiter.frames }
            pending.waiters[requestID]?.retryAt = now + ClusterMembers.redirectPause
            return nil
        }
        if let frames { loop.send(frames, on: members.target) }
    }

    /// For a cluster's members, each tick of the deadline timer: sends what a `NOT_PRIMARY` put off and is now due,
    /// hands what other members' sockets hold to the member sent to, and gives way to the next member when that
    /// one has held what it was sent for ``ClusterMembers/unreachableAfter`` (it is not connected: stopped, or no
    /// longer bound). Held messages never reached a member, so any may take them.
    private func followPrimary() {
        guard members.isCluster else { return }
        let now = ContinuousClock.now
        let target = members.target
        for index in members.endpoints.indices where index != target && loop.unsentCount(on: index) > 0 {
            loop.moveUnsent(from: index, to: target)
        }
        let held = loop.unsentCount(on: target) > 0
        let (due, giveWay) = pending.withLock { pending -> ([(UInt64, [Data])], Bool) in
            var due: [(UInt64, [Data])] = []
            for (id, waiter) in pending.waiters where waiter.retryAt.map({ $0 <= now }) == true {
                pending.waiters[id]?.retryAt = nil
                due.append((id, waiter.frames))
            }
            guard held else {
                pending.heldSince = nil
                return (due, false)
            }
            guard let heldSince = pending.heldSince, heldSince.member == target else {
                pending.heldSince = (target, now)
                return (due, false)
            }
            guard now - heldSince.since >= ClusterMembers.unreachableAfter else { return (due, false) }
            pending.heldSince = nil
            return (due, true)
        }
        if giveWay {
            let next = members.next(after: target)
            if members.move(from: target, to: next) { loop.moveUnsent(from: target, to: next) }
        }
        let sendTo = members.target
        for (_, frames) in due.sorted(by: { $0.0 < $1.0 }) { loop.send(frames, on: sendTo) }
    }

    private func fail(_ requestID: UInt64, _ error: any Error) {
        guard let waiter = pending.withLock({ $0.waiters.removeValue(forKey: requestID) }) else { return }
        waiter.reply.resume(with: .failure(error))
    }

    private func failAll(_ error: ProtocolError) {
        let waiters = pending.withLock { pending in
            if pending.closedError == nil { pending.closedError = error }
            defer { pending.waiters.removeAll() }
            return pending.waiters
        }
        for waiter in waiters.values {
            waiter.reply.resume(with: .failure(error))
        }
    }
}
