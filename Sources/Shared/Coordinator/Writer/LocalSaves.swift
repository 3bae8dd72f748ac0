import Foundation
import Logging
import Synchronization
import TributaryCore

/// Saves made in this process (a ``LocalRootParent``'s contexts), written through a ``StoreWriter`` of their own as
/// a router hands over a peer's: gathered into group commits, and answered to each caller once its commit is
/// released. The store is written by no other path.
final class LocalSaves: Sendable {
    private struct State {
        var nextID: UInt64 = 1
        var waiting: [UInt64: PendingWrite<Result<AppliedSave, any Error>>] = [:]
    }

    private let state = Mutex(State())
    /// Set once, right after the writer is made (its callback needs this object).
    private let writerBox = Mutex<StoreWriter?>(nil)

    init(store: RootStore) {
        let writer = StoreWriter(store: store, logger: Logger(label: "tributary.local-saves")) { [weak self] in
            self?.answerReleased()
        }
        writerBox.withLock { $0 = writer }
    }

    private var writer: StoreWriter? { writerBox.withLock { $0 } }

    /// Applies `save` in the writer's next group commit and returns what it did.
    /// - Throws: what refused the save alone (its lease, the model, the store's constraints), or
    ///   ``WriterStoppedError`` when the writer stopped.
    func apply(_ save: SaveRequest) async throws -> AppliedSave {
        guard let writer else { throw WriterStoppedError(write: "local save") }
        let answer = PendingWrite<Result<AppliedSave, any Error>>()
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.waiting[state.nextID] = answer
            return state.nextID
        }
        let member = SaveGroup.Member(save: save, peer: Data(), worker: "local", requestID: id)
        guard await writer.enqueue([member], claims: []) else {
            _ = state.withLock { $0.waiting.removeValue(forKey: id) }
            throw WriterStoppedError(write: "local save")
        }
        return try await answer.value.get()
    }

    /// Answers the saves of the group commits the writer's pipeline released.
    private func answerReleased() {
        guard let writer else { return }
        for case .committed(let commit, let result, _) in writer.takeAnswers() {
            for (member, outcome) in zip(commit.members, result.saves) {
                let answer = state.withLock { $0.waiting.removeValue(forKey: member.requestID) }
                answer?.fulfil(outcome)
            }
        }
    }
}
