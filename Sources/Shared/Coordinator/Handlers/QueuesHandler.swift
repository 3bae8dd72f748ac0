import Foundation
import TributaryCore
import TributaryProtocol

/// Named queues: paused and resumed as writes behind the saves before them.
package struct QueuesHandler: Sendable {
    let parts: HandlerParts

    /// Pauses or resumes queue `name`, then reads it as a status shows it (after the change). A resumed queue's jobs
    /// may go out at once.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` for a name that cannot name a queue.
    package func act(_ action: QueueAction, on name: String) throws -> Promised<CoordinatorStatus.Queue> {
        if let refusal = JobQueue.refusal(of: name) { throw ProtocolError(.invalidRequest, refusal) }
        let (store, logger, tell) = (parts.store, parts.logger, parts.tell)
        let written = try RequestPlace.written(.setQueue(name, paused: action == .pause), parts) { changed in
            if changed {
                logger.info(action == .pause ? "queue paused" : "queue resumed", metadata: ["queue": "\(name)"])
            }
            if action == .resume { tell(.due) }
        }
        return Promised(readers: parts.readers) {
            _ = try await written.work()
            return try await store.jobs.queue(named: name).status
        }
    }
}
