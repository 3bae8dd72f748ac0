import Foundation
import TributaryCore
import TributaryProtocol

/// The coordinator's store as a parent, over the jobs/control socket: the parent of a ``ViewContext``'s context
/// and of any context in a client. Fetches are answered from a read connection; a save goes to the root writer as
/// one change set, outside any job, and is merged with the context's merge policy in the writer's next group commit
/// (Core Data's UI context saving into its root).
///
/// Each save carries an id made here, the same on every retry: when no answer comes (the coordinator restarted,
/// say), the save is sent again until ``saveTimeout``, and a coordinator that committed it already answers with its
/// first answer instead of applying it twice.
///
/// ```swift
/// let connection = try CoordinatorConnection(endpoint: "tcp://127.0.0.1:7400")
/// let context = ObjectContext(model: model, parent: CoordinatorStore(connection: connection))
/// try await context.perform { context in
///     let number = try FetchPredicate(format: "number == %d", 42)
///     let pull = try context.fetch(FetchRequest(entity: "PullRequest", predicate: number))[0]
///     pull["title"] = .string("A better title")
/// }
/// try await context.save()
/// ```
public struct CoordinatorStore: ChangeSetParent {
    /// The connection fetches and saves go over.
    public let connection: CoordinatorConnection
    /// How long a save is sent again while no answer comes, before it fails.
    public var saveTimeout: Duration
    /// How long each send of a save waits for its answer.
    public var attemptTimeout: Duration

    /// A parent whose fetches and saves go over `connection`.
    public init(
        connection: CoordinatorConnection, saveTimeout: Duration = .seconds(60), attemptTimeout: Duration = .seconds(5)
    ) {
        self.connection = connection
        self.saveTimeout = saveTimeout
        self.attemptTimeout = attemptTimeout
    }

    /// Sends `changes` to the root writer and returns its answer once the commit is made.
    /// - Throws: what ``save(_:id:)`` throws.
    public func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
        try await save(changes, id: UUID())
    }

    /// Sends `changes` as the save `id` and returns the root writer's answer once the commit is made; a save sent
    /// before with the same id gets its first answer, applied once.
    /// - Throws: ``/TributaryCore/MergeConflictError`` when the merge policy is `.error` and objects changed in
    ///   the store since they were read (nothing was applied); ``/TributaryProtocol/ProtocolError`` when the
    ///   coordinator refuses the save (a limit, a role that may not save, a change set that does not fit the
    ///   model); ``/TributaryCore/SaveInDoubtError`` when it was sent and no answer came within ``saveTimeout``,
    ///   or the connection closed first.
    public func save(_ changes: Tributary_V1_ChangeSet, id: UUID) async throws -> SaveReceipt {
        try await send(.with { $0.changes = changes }, id: id)
    }

    /// Runs a batch change in the root writer as the save `id`, sent again as ``save(_:id:)`` is.
    /// - Throws: what ``save(_:id:)`` throws.
    public func execute(_ change: Tributary_V1_BatchChange, id: UUID) async throws -> SaveReceipt {
        try await send(.with { $0.batchChange = change }, id: id)
    }

    /// A save in flight ends within ``saveTimeout`` and one attempt's wait (its last pause before sending again is
    /// a second at most): a context's save inside a block waits that long for it, and a margin.
    public var blockedSaveLimit: Duration { saveTimeout + attemptTimeout + .seconds(2) }

    /// Sends `changes` as the save `id`, blocking the calling thread (a context's queue) until the answer: the reply
    /// wakes it from the connection's socket thread, with no task in between.
    /// - Throws: what ``save(_:id:)`` throws.
    public func saveAndWait(_ changes: Tributary_V1_ChangeSet, id: UUID) throws -> SaveReceipt {
        var attempts = SaveAttempts(id: id, changes: .with { $0.changes = changes }, store: self)
        while true {
            let wait = attempts.nextWait()
            let started = ContinuousClock.now
            let outcome = Result { try connection.requestBlocking(.saveChanges(attempts.message), timeout: wait) }
            switch try attempts.settle(outcome, sent: started, wait: wait) {
            case .answered(let receipt): return receipt
            case .again(let pause): Thread.sleep(forTimeInterval: pause.seconds)
            }
        }
    }

    /// Sends a save as `id` until it is answered, refused, or ``saveTimeout`` passes.
    private func send(_ save: Tributary_V1_SaveChanges, id: UUID) async throws -> SaveReceipt {
        var attempts = SaveAttempts(id: id, changes: save, store: self)
        while true {
            let wait = attempts.nextWait()
            let started = ContinuousClock.now
            let outcome: Result<Tributary_V1_Envelope, any Error>
            do {
                outcome = .success(try await connection.request(.saveChanges(attempts.message), timeout: wait))
            } catch {
                outcome = .failure(error)
            }
            switch try attempts.settle(outcome, sent: started, wait: wait) {
            case .answered(let receipt): return receipt
            case .again(let pause):
                do {
                    try await Task.sleep(for: pause)
                } catch {
                    throw SaveInDoubtError(saveID: id, reason: "the save was cancelled while it waited for an answer")
                }
            }
        }
    }

    /// The sends of one save: how long each waits, and what each outcome means. A save is sent again, with the same
    /// id, while no answer came (or the coordinator was stopping) and ``saveTimeout`` has not passed.
    private struct SaveAttempts {
        let id: UUID
        let message: Tributary_V1_SaveChanges
        let store: CoordinatorStore
        let deadline: ContinuousClock.Instant
        var pause = Duration.milliseconds(50)
        /// Whether a send went unanswered: it may have been committed, so only an answer to this id settles it.
        var unanswered = false

        /// What one send came to.
        enum Next {
            case answered(SaveReceipt)
            /// Send again after this pause.
            case again(Duration)
        }

        init(id: UUID, changes: Tributary_V1_SaveChanges, store: CoordinatorStore) {
            self.id = id
            var message = changes
            message.saveID = id.bytes
            self.message = message
            self.store = store
            deadline = .now + store.saveTimeout
        }

        /// How long the next send waits for its answer.
        func nextWait() -> Duration {
            min(store.attemptTimeout, max(.milliseconds(1), deadline - .now))
        }

        /// The receipt, a pause before sending again, or the error the save fails with.
        mutating func settle(
            _ outcome: Result<Tributary_V1_Envelope, any Error>, sent: ContinuousClock.Instant, wait: Duration
        ) throws -> Next {
            switch outcome {
            case .success(let reply):
                guard case .saveAck(let ack) = reply.body else {
                    throw ProtocolError(
                        .unknownMessage, "the coordinator answered a save with something other than SaveAck")
                }
                return .answered(SaveReceipt(ack))
            case .failure(let error as ProtocolError) where error.code == .mergeConflict:
                // Checked before anything is applied: a save committed before would have had its first answer.
                throw MergeConflictError(conflicts: error.conflicts.map(MergeConflict.init(wire:)))
            case .failure(let error):
                let answered = isAnswer(error, waited: .now - sent, for: wait)
                unanswered = unanswered || !answered
                let again = !store.connection.isClosed && .now < deadline
                if again && (!answered || (error as? ProtocolError)?.code == .shuttingDown) {
                    // No answer, or a stopping coordinator: sent again with the same id after a pause.
                    defer { pause = min(pause * 2, .seconds(1)) }
                    return .again(pause)
                }
                if unanswered { throw SaveInDoubtError(saveID: id, reason: "\(error)") }
                throw error
            }
        }

        /// Whether `error` is the coordinator's answer, rather than a wait that ran out (the connection fails a
        /// request unanswered within its wait with `INTERNAL`), a closed connection or a cancelled caller.
        private func isAnswer(_ error: any Error, waited: Duration, for wait: Duration) -> Bool {
            guard let error = error as? ProtocolError, !store.connection.isClosed else { return false }
            return !(error.code == .internal && waited >= wait)
        }
    }

    public func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
        try Self.fetch(request, over: connection)
    }

    public func aggregate(_ request: Tributary_V1_AggregateRequest) throws -> Tributary_V1_AggregateReply {
        try Self.aggregate(request, over: connection)
    }

    /// Sends an aggregate request and blocks until the coordinator answers.
    static func aggregate(_ request: Tributary_V1_AggregateRequest, over connection: CoordinatorConnection) throws
        -> Tributary_V1_AggregateReply
    {
        let reply = try connection.requestBlocking(.aggregateRequest(request))
        guard case .aggregateReply(let answer) = reply.body else {
            throw ProtocolError(
                .unknownMessage,
                "the coordinator answered an aggregate request with something other than "
                    + "AggregateReply")
        }
        return answer
    }

    /// Sends a fetch and blocks until the coordinator answers.
    static func fetch(_ request: Tributary_V1_FetchRequest, over connection: CoordinatorConnection) throws
        -> Tributary_V1_FetchReply
    {
        let reply = try connection.requestBlocking(.fetchRequest(request))
        guard case .fetchReply(let answer) = reply.body else {
            throw ProtocolError(
                .unknownMessage, "the coordinator answered a fetch with something other than FetchReply")
        }
        return answer
    }
}
