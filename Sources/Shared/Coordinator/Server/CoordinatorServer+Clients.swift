import Foundation
import TributaryCore
import TributaryProtocol

/// Clients' requests: each decoded to the handler it names (``ClientCodec``), which fixes its place in the router's
/// turn; the reader pool computes the answer and sends it. A push is the router's own: it goes to the writer with the
/// saves gathered before it.
extension CoordinatorServer {
    /// Answers a client's request through its handler; false for a message that is not one. The reader pool's place
    /// is taken first, so a request refused for want of one neither queued a write nor opened a snapshot.
    func answerClient(_ body: Tributary_V1_Envelope.OneOf_Body, from peer: Data, requestID: UInt64) throws -> Bool {
        guard ClientCodec.isRequest(body) else { return false }
        let codec = self.codec
        try readers.submit(peer: peer, requestID: requestID) { try codec.promise(body).work }
        return true
    }

    func pushJobs(_ push: Tributary_V1_PushJobs, from peer: Data, requestID: UInt64) async throws {
        if sessions.stopping { throw ProtocolError(.shuttingDown, "the coordinator is shutting down") }
        let (specs, onComplete) = try codec.push(push)
        let batch = push.batch.isEmpty ? UUID().uuidString.lowercased() : push.batch
        // Behind the saves received before it (a push must not overtake them: one may finish a job whose unique
        // key it reuses); answered once written, and meanwhile saves go on gathering.
        await sessions.submit()
        guard
            await writer.push(
                .init(peer: peer, requestID: requestID, batch: batch, specs: specs, onComplete: onComplete))
        else {
            throw ProtocolError(.shuttingDown, "the coordinator is shutting down")
        }
    }

    /// Whether the router is serving and not draining: what `/readyz` reports.
    public nonisolated var isServing: Bool {
        lifecycle.withLock { state in
            if case .serving = state { return true }
            return false
        }
    }

    /// The clients' request handlers, for callers in this process (the HTTP routes).
    package nonisolated var handlers: CoordinatorHandlers { parts.handlers }
}
