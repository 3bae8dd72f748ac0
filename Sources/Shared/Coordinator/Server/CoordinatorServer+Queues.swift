import Foundation
import TributaryCore
import TributaryProtocol

/// Requests that pause or resume a named queue.
extension CoordinatorServer {
    /// Pauses or resumes the queue `request.name` in the store, then answers with the queue as a status shows it
    /// (read after the change). A resumed queue's jobs may go out at once.
    func queueAction(_ request: Tributary_V1_QueueActionRequest, from peer: Data, requestID: UInt64) async throws {
        if let refusal = JobQueue.refusal(of: request.name) { throw ProtocolError(.invalidRequest, refusal) }
        guard let action = QueueAction(rawValue: request.action) else {
            throw ProtocolError(
                .invalidRequest,
                "unknown queue action '\(request.action)' (one of \(QueueAction.names.joined(separator: ", ")))")
        }
        let changed = try await writer.write(.setQueue(request.name, paused: action == .pause))
        if changed {
            logger.info(action == .pause ? "queue paused" : "queue resumed", metadata: ["queue": "\(request.name)"])
        }
        if action == .resume, workers.anyHasCredit { handOver.isDue = true }
        let store = store
        let name = request.name
        try readers.submit(peer: peer, requestID: requestID) {
            .queueInfo(try await store.jobs.queue(named: name).status.wire)
        }
    }
}
