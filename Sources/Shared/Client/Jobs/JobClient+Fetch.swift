import Foundation
import TributaryProtocol

extension JobClient {
    /// How many objects of `entity` the store holds (a count fetch, answered from a reader of the store).
    /// - Throws: ``ProtocolError`` naming an unknown entity.
    public func count(of entity: String) async throws -> Int {
        let request = Tributary_V1_FetchRequest.with {
            $0.entity = entity
            $0.resultType = .count
        }
        let reply = try await connection.request(.fetchRequest(request))
        guard case .fetchReply(let fetched) = reply.body else { throw Self.unexpected(reply) }
        return Int(fetched.count)
    }
}
