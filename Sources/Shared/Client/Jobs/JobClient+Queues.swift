import Foundation
import TributaryCore
import TributaryProtocol

/// Named queues: pausing and resuming them (docs/jobs.md). Their depths and latencies are in ``status()``.
extension JobClient {
    /// Pauses or resumes the named queue `name`: while paused, none of its jobs is claimed (pushes, retries and
    /// running jobs go on). The pause is kept in the store until resumed; repeating an action changes nothing.
    /// - Returns: the queue after the action, once it is on disk.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `INVALID_REQUEST` naming what is wrong with the name.
    public func queue(_ name: String, action: QueueAction) async throws -> CoordinatorStatus.Queue {
        let reply = try await connection.request(
            .queueActionRequest(
                .with {
                    $0.name = name
                    $0.action = action.rawValue
                }))
        guard case .queueInfo(let queue) = reply.body else { throw Self.unexpected(reply) }
        return CoordinatorStatus.Queue(queue)
    }
}
