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
    /// - Throws: ``/TributaryCore/MergeConflictError`` when the merge policy is `.error` and objects changed in
    ///   the store since they were read (nothing was applied); ``/TributaryProtocol/ProtocolError`` when the
    ///   coordinator refuses the save (a limit, a role that may not save, a change set that does not fit the
    ///   model), or when no answer came within ``saveTimeout``.
    public func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
        let message = Tributary_V1_SaveChanges.with {
            $0.saveID = UUID().bytes
            $0.changes = changes
        }
        let clock = ContinuousClock()
        let deadline = clock.now + saveTimeout
        var pause = Duration.milliseconds(50)
        while true {
            let reply: Tributary_V1_Envelope
            let sent = clock.now
            let wait = min(attemptTimeout, max(.milliseconds(1), deadline - sent))
            do {
                reply = try await connection.request(.saveChanges(message), timeout: wait)
            } catch let error as ProtocolError where error.code == .mergeConflict {
                throw MergeConflictError(conflicts: error.conflicts.map(MergeConflict.init(wire:)))
            } catch let error as ProtocolError
                where clock.now < deadline && mayRetry(error, waited: clock.now - sent, for: wait)
            {
                // Sent again with the same id: a coordinator that committed it answers with its first answer.
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(1))
                continue
            }
            guard case .saveAck(let ack) = reply.body else {
                throw ProtocolError(
                    .unknownMessage, "the coordinator answered a save with something other than SaveAck")
            }
            return SaveReceipt(ack)
        }
    }

    /// Whether a save that failed with `error` may be sent again: no answer came within its wait (the connection
    /// fails such a request with `INTERNAL`), or the coordinator was stopping. Not once this connection is closed,
    /// and not for an `INTERNAL` the coordinator answered: sending it again would be refused the same way.
    private func mayRetry(_ error: ProtocolError, waited: Duration, for wait: Duration) -> Bool {
        guard !connection.isClosed else { return false }
        switch error.code {
        case .internal: return waited >= wait
        case .shuttingDown: return true
        default: return false
        }
    }

    public func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
        try Self.fetch(request, over: connection)
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
