import Foundation
import TributaryCore
import TributaryProtocol

/// The coordinator's store as a parent that can only be read: fetches go over the jobs/control socket and are
/// answered from a read connection. The parent of a ``ViewContext``'s context and of contexts in clients that
/// read but do not write (saves go through jobs, whose contexts a worker makes).
///
/// ```swift
/// let connection = try CoordinatorConnection(endpoint: "tcp://127.0.0.1:7400")
/// let context = ObjectContext(model: model, parent: CoordinatorStore(connection: connection))
/// let open = try await context.perform { try $0.count(for: FetchRequest(entity: "PullRequest")) }
/// ```
public struct CoordinatorStore: ChangeSetParent {
    /// The connection fetches go over.
    public let connection: CoordinatorConnection

    /// A parent whose fetches go over `connection`.
    public init(connection: CoordinatorConnection) {
        self.connection = connection
    }

    /// Refused: only a worker's job contexts save to the root (the coordinator takes change sets from workers).
    public func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
        throw ContextError(
            .unsupported, "a context reading from the coordinator cannot save; push a job and save from its context")
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
