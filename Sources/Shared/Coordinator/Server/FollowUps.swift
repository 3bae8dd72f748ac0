import Foundation
import TributaryCore
import TributaryProtocol

/// The router's own writes (a worker's failure, its jobs handed back), queued on the store's writer in the router's
/// turn with what to do once each is answered: the commit pipeline hands the write back, and the router runs its
/// follow-up in the order written (``CommitAnswers/answerReleased()``). The router never waits for one.
///
/// Owned by the router and used only in its turn.
final class FollowUps {
    private let writer: StoreWriter
    /// The follow-ups by the write's position.
    private var waiting: [UInt64: () -> Void] = [:]

    init(writer: StoreWriter) {
        self.writer = writer
    }

    /// Queues `write` now, behind the saves handed over before it, and runs `then` with its result once the
    /// pipeline released it and the router answers its place (after the answers of the writes before it).
    func write<Output: Sendable>(
        _ write: StoreWrite<Output>, then: @escaping (Result<Output, any Error>) -> Void
    ) {
        let queued: QueuedOperation<Output>
        do {
            queued = try writer.queue(write)
        } catch is WriterStoppedError {
            return then(.failure(ProtocolError(.shuttingDown, "the coordinator is shutting down")))
        } catch {
            return then(.failure(ProtocolError(.tooManyRequests, "\(error)")))
        }
        waiting[queued.position] = { then(Result { try queued.released() }) }
    }

    /// The follow-up of the write at `position`, taken; nil for a write the router did not queue.
    func take(_ position: UInt64) -> (() -> Void)? {
        waiting.removeValue(forKey: position)
    }
}
