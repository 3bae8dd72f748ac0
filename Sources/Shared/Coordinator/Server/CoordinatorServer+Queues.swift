import Foundation
import TributaryCore
import TributaryProtocol

/// Requests that pause or resume a named queue.
extension CoordinatorServer {
    /// Pauses or resumes the queue `request.name` in the store, then answers with the queue as a status shows it
    /// (read after the change). A resumed queue's jobs may go out at once.
    func queueAction(_ request: Tributary_V1_QueueActionRequest, from peer: Data, requestID: UInt64) throws {
        if let refusal = JobQueue.refusal(of: request.name) { throw ProtocolError(.invalidRequest, refusal) }
        guard let action = QueueAction(rawValue: request.action) else {
            throw ProtocolError(
                .invalidRequest,
                "unknown queue action '\(request.action)' (one of \(QueueAction.names.joined(separator: ", ")))")
        }
        let name = request.name
        write(.setQueue(name, paused: action == .pause)) { [self] result in
            do {
                if try result.get() {
                    logger.info(action == .pause ? "queue paused" : "queue resumed", metadata: ["queue": "\(name)"])
                }
                if action == .resume, workers.anyHasCredit { handOver.isDue = true }
                let store = store
                try readers.submit(peer: peer, requestID: requestID) {
                    .queueInfo(try await store.jobs.queue(named: name).status.wire)
                }
            } catch {
                refuse(requestID, from: peer, error)
            }
        }
    }
}
