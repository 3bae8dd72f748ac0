import Foundation
import TributaryCore
import TributaryProtocol

/// A parent that is a ``RootStore`` in the same process: for tests and embedded use. Its saves go through a store
/// writer of their own, as a peer's go through the coordinator's: group commits, the only way the store is written.
public struct LocalRootParent: ChangeSetParent {
    /// The store the saves go to.
    public let store: RootStore
    private let saves: LocalSaves
    /// How long a save inside a context's block waits for the store (through a task) before it is left in doubt.
    public let blockedSaveLimit: Duration

    /// A parent saving into `store`, leaving a blocked save in doubt after `blockedSaveLimit`.
    public init(store: RootStore, blockedSaveLimit: Duration = .seconds(60)) {
        self.store = store
        self.blockedSaveLimit = blockedSaveLimit
        saves = LocalSaves(store: store)
    }

    public func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
        try store.fetch(request)
    }

    public func aggregate(_ request: Tributary_V1_AggregateRequest) throws -> Tributary_V1_AggregateReply {
        let query = try store.aggregateQuery(for: request)
        return try store.aggregateNow(query).wire
    }

    public func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
        try await apply(SaveRequest(changes: changes))
    }

    /// Saves as `id`, recorded with the commit as the coordinator records a client's: a save sent again after it
    /// was left in doubt (a save inside a block that gave up waiting) is answered, not applied twice. The ids are
    /// pruned by the coordinator's store maintenance; a store used alone keeps them.
    public func save(_ changes: Tributary_V1_ChangeSet, id: UUID) async throws -> SaveReceipt {
        try await apply(SaveRequest(changes: changes, saveID: id.bytes))
    }

    /// A save inside a context's block: applied through a task, waited for at most ``blockedSaveLimit``, then left
    /// in doubt (the context sends it again with the same id, applied once).
    public func saveAndWait(_ changes: Tributary_V1_ChangeSet, id: UUID) throws -> SaveReceipt {
        try waitForSave(id: id, limit: blockedSaveLimit) { try await save(changes, id: id) }
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
            applied = try await saves.apply(save)
        } catch let error as StoreError where error.code == .mergeConflict {
            throw MergeConflictError(conflicts: error.conflicts)
        }
        return SaveReceipt(applied.ack)
    }
}
