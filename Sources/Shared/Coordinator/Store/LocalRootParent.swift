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
        try await apply(SaveRequest(changes: changes))
    }

    /// Saves as `id`, recorded with the commit as the coordinator records a client's: a save sent again after it
    /// was left in doubt (a save inside a block that gave up waiting) is answered, not applied twice.
    public func save(_ changes: Tributary_V1_ChangeSet, id: UUID) async throws -> SaveReceipt {
        try await apply(SaveRequest(changes: changes, saveID: id.bytes))
    }

    /// Runs a batch change in the store's writer, within the default change-set limits a commit.
    public func execute(_ change: Tributary_V1_BatchChange, id: UUID) async throws -> SaveReceipt {
        var change = change
        let limits = CoordinatorLimits()
        change.limit = UInt32(
            BatchChangeExpansion.objectsPerCommit(
                change, maximumRows: limits.maximumChangeSetRows, maximumBytes: limits.maximumChangeSetBytes))
        return try await apply(SaveRequest(changes: .init(), saveID: id.bytes, batchChange: change))
    }

    private func apply(_ save: SaveRequest) async throws -> SaveReceipt {
        let applied: AppliedSave
        do {
            applied = try await store.saves.applySaves([(save, "local")])[0].get()
        } catch let error as StoreError where error.code == .mergeConflict {
            throw MergeConflictError(conflicts: error.conflicts)
        }
        return SaveReceipt(applied.ack)
    }
}
