import Foundation
import TributaryCore
import TributaryProtocol

/// A parent that is a ``RootStore`` in the same process: for tests and embedded use.
public struct LocalRootParent: ChangeSetParent {
    public let store: RootStore

    public init(store: RootStore) {
        self.store = store
    }

    public func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
        try store.fetch(request)
    }

    public func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
        let save = SaveRequest(changes: changes)
        let outcome: SaveOutcome
        do {
            outcome = try await store.saves.applySave(save, from: "local")
        } catch let error as StoreError where error.code == .mergeConflict {
            throw MergeConflictError(conflicts: error.conflicts)
        }
        switch outcome {
        case .committed(let seq, _, let remaps, let resolved):
            var ack = Tributary_V1_SaveAck()
            ack.seq = seq
            ack.remaps = remaps
            ack.resolved = resolved
            return SaveReceipt(ack)
        case .committedEmpty(let remaps, let resolved):
            var ack = Tributary_V1_SaveAck()
            ack.remaps = remaps
            ack.resolved = resolved
            return SaveReceipt(ack)
        case .duplicate(let seq): return SaveReceipt(seq: seq, isDuplicate: true)
        case .answeredBefore(let seq, let remaps, let resolved):
            var ack = Tributary_V1_SaveAck()
            ack.seq = seq
            ack.remaps = remaps
            ack.resolved = resolved
            ack.duplicate = true
            return SaveReceipt(ack)
        }
    }
}
