import Foundation
import TributaryCore
import TributaryProtocol

extension JobClient {
    /// The groups and aggregates `request` asks for, computed by the coordinator's readers in one query after the
    /// saves before it, at one commit. The request is checked against the coordinator's model (``model()``) before
    /// it is sent, so a key it cannot aggregate is refused here.
    ///
    /// ```swift
    /// let perAuthor = try await client.aggregate(AggregateRequest(
    ///     entity: "PullRequest", groupBy: ["author.login"], aggregates: [.count(), .sum("additions")]))
    /// ```
    /// - Throws: ``/TributaryCore/FetchPredicateError`` naming what the request gets wrong (an unknown key, `@sum`
    ///   of a string, a having predicate naming no aggregate…); ``/TributaryProtocol/ProtocolError`` from the
    ///   coordinator: `UNKNOWN_ENTITY`, `INVALID_REQUEST` (a sum over 64 bits, over 100,000 groups without a limit).
    public func aggregate(_ request: AggregateRequest, timeout: Duration = .seconds(60)) async throws
        -> AggregateResult
    {
        let model = try await model()
        guard model.entity(named: request.entity) != nil else {
            throw ProtocolError(
                .unknownEntity,
                "unknown entity '\(request.entity)' (the coordinator's model has "
                    + "\(model.entities.map(\.name).joined(separator: ", ")))")
        }
        _ = try request.compile(in: model)
        let reply = try await connection.request(.aggregateRequest(request.wire), timeout: timeout)
        guard case .aggregateReply(let answer) = reply.body else { throw Self.unexpected(reply) }
        return try AggregateResult(wire: answer, groupKeyCount: request.groupBy.count)
    }
}
