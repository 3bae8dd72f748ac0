import Foundation
import TributaryProtocol

/// Requests from inside the coordinator's process (its HTTP endpoint): handled by the router in turn with the
/// socket's messages, through the same checks and handlers as a client's over ZeroMQ, and answered with the body
/// a client would get (an `.error` for a refusal).
extension CoordinatorServer {
    /// Handles `body` as a client's request and returns the reply's body.
    /// - Throws: ``LocalRequestError`` when the coordinator stops first, or for a message that is not a client's
    ///   request (a worker's, or a reply).
    public nonisolated func request(_ body: Tributary_V1_Envelope.OneOf_Body) async throws
        -> Tributary_V1_Envelope.OneOf_Body
    {
        guard Self.answersLocally(body) else { throw LocalRequestError.notLocal(Self.name(of: body)) }
        var envelope = Tributary_V1_Envelope()
        envelope.requestID = 1
        envelope.body = body
        return try await withCheckedThrowingContinuation { continuation in
            guard let peer = io.localPeers.register(continuation) else { return }
            post(.local(envelope, peer: peer))
        }
    }

    /// Whether the router is serving and not draining: what `/readyz` reports.
    public nonisolated var isServing: Bool {
        lifecycle.withLock { state in
            if case .serving = state { return true }
            return false
        }
    }

    /// Whether a stop began: no new workers, pushes or claims.
    var stopping: Bool { lifecycle.withLock { $0.isStopping } }

    /// Client requests that get exactly one reply.
    private static func answersLocally(_ body: Tributary_V1_Envelope.OneOf_Body) -> Bool {
        switch body {
        case .pushJobs, .statusRequest, .batchStatusRequest, .jobsRequest, .jobRequest, .retryJobRequest,
            .cancelJobRequest, .deleteJobRequest, .subscribersRequest, .deleteSubscriberRequest, .queueActionRequest:
            true
        default: false
        }
    }

    /// Handles a local request in the router's turn, like a message from a peer.
    func handleLocal(_ envelope: Tributary_V1_Envelope, from peer: Data) async {
        if Self.writes(envelope.body) { await submit(moreToCome: true) }
        await respond(to: envelope, from: peer)
    }
}
