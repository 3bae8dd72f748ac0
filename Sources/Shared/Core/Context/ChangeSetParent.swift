import Dispatch
import Foundation
import Synchronization
import TributaryProtocol

/// Where an ``ObjectContext`` pushes its changes on save: the root over ZeroMQ (in a worker), an in-process
/// root store, or a parent context in memory.
public protocol ChangeSetParent: Sendable {
    /// Applies a change set and reports what the parent made of it.
    func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt

    /// Applies a change set sent as `id`, the same id on every send of the same save: a parent that can lose an
    /// answer (one over the network, or one that gives up waiting for a save in a block) applies an id once and
    /// answers a repeat with its first answer. A parent that never leaves a save in doubt may ignore the id (the
    /// default).
    /// - Throws: ``SaveInDoubtError`` when the change set was sent and no answer says whether it was applied.
    func save(_ changes: Tributary_V1_ChangeSet, id: UUID) async throws -> SaveReceipt

    /// ``save(_:id:)`` for a context saving inside one of its blocks (`ObjectContext.save()` in a block): blocks the
    /// calling thread, a context's queue, until the parent answers.
    func saveAndWait(_ changes: Tributary_V1_ChangeSet, id: UUID) throws -> SaveReceipt

    /// Whether a context may save inside one of its blocks (``saveAndWait(_:id:)``): checked before the save waits
    /// or takes anything. A job's context may not.
    var savesInBlocks: Bool { get }

    /// How long a save inside a block waits for the context's save in flight (an `await save()`, run by a task)
    /// before it gives up, its changes still pending: a context's queue blocked on a task while tasks block on that
    /// queue (`performAndWait`) could otherwise freeze the cooperative pool. Longer than a save of this parent takes
    /// when nothing is stuck.
    var blockedSaveLimit: Duration { get }

    /// Runs a batch change in the root writer, as the save `id` (see ``save(_:id:)``); the receipt's
    /// ``SaveReceipt/batchIDs`` are the objects it changed. Parents that cannot reach the root refuse it.
    func execute(_ change: Tributary_V1_BatchChange, id: UUID) async throws -> SaveReceipt

    /// Answers a child's fetch as the parent sees the store (a parent context: with its own unsaved changes),
    /// leaving out the objects in `exclude_ids`. Called on the child's queue, and blocks it until answered.
    func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply

    /// Answers a child's aggregate request from the store, without anyone's unsaved changes (as Core Data's
    /// dictionary results leave out pending changes). Called on the child's queue, and blocks it until answered.
    func aggregate(_ request: Tributary_V1_AggregateRequest) throws -> Tributary_V1_AggregateReply
}

extension ChangeSetParent {
    /// A parent in the same process: the save cannot be lost on the way, so the id is not needed.
    public func save(_ changes: Tributary_V1_ChangeSet, id: UUID) async throws -> SaveReceipt {
        try await save(changes)
    }

    /// Saves inside blocks are allowed.
    public var savesInBlocks: Bool { true }

    /// A minute.
    public var blockedSaveLimit: Duration { .seconds(60) }

    /// Runs ``save(_:id:)`` in a task and blocks the calling thread until it ends. The caller is a context's queue,
    /// a Dispatch thread, never one of the cooperative pool's that the task needs. It waits however long the task
    /// takes: a save given up on would be in doubt, and sent again, which a parent ignoring ids would apply twice. A
    /// parent that applies each id once gives its waits a limit (``waitForSave(id:limit:_:)``), as `LocalRootParent`
    /// does.
    public func saveAndWait(_ changes: Tributary_V1_ChangeSet, id: UUID) throws -> SaveReceipt {
        try waitForSave(id: id, limit: nil) { try await save(changes, id: id) }
    }

    /// Runs `send` in a task and blocks the calling thread (a context's queue, never a thread of the cooperative
    /// pool) until it ends, or for `limit` at most.
    /// - Throws: what `send` throws; ``SaveInDoubtError`` when the task has not ended within `limit`: it may still
    ///   apply the save, so only a parent that applies each id once may give one.
    package func waitForSave(
        id: UUID, limit: Duration?, _ send: @escaping @Sendable () async throws -> SaveReceipt
    ) throws -> SaveReceipt {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<SaveReceipt, any Error>?>(nil)
        // Unstructured: the caller is a Dispatch thread blocked on the semaphore, outside Swift concurrency.
        Task {
            let result: Result<SaveReceipt, any Error>
            do {
                result = .success(try await send())
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: limit.map { .after($0) } ?? .distantFuture) == .success else {
            throw SaveInDoubtError(
                saveID: id,
                reason: "the task sending it had not ended after \(limit ?? .zero) (the cooperative pool busy or "
                    + "blocked)")
        }
        return try outcome.withLock { $0 ?? .failure(CancellationError()) }.get()
    }

    /// A parent that cannot reach the root writer: batch changes are refused.
    public func execute(_ change: Tributary_V1_BatchChange, id: UUID) async throws -> SaveReceipt {
        throw ContextError(.unsupported, "this context's parent (\(type(of: self))) cannot run batch changes")
    }

    /// A parent that cannot read the store: every fetch is refused.
    public func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
        throw ContextError(.unsupported, "this context's parent (\(type(of: self))) cannot answer fetches")
    }

    /// A parent that cannot read the store: every aggregate request is refused.
    public func aggregate(_ request: Tributary_V1_AggregateRequest) throws -> Tributary_V1_AggregateReply {
        throw ContextError(.unsupported, "this context's parent (\(type(of: self))) cannot answer aggregate requests")
    }
}

/// The parent's answer to a save.
public struct SaveReceipt: Sendable {
    /// The store sequence number of the commit (0 when nothing was committed).
    public let seq: UInt64
    /// Inserted ids the parent replaced with existing objects' ids (uniqueness merges).
    public let remaps: [UUID: UUID]
    /// The save had been applied before, so nothing was applied again.
    public let isDuplicate: Bool
    /// Objects in conflict that the merge policy resolved: their stored values and versions after the commit.
    public let resolved: [Tributary_V1_EntityBatch]
    /// A batch change's: the objects it updated or deleted, in id order.
    public let batchIDs: [UUID]
    /// A batch change's: more objects match than its commit took.
    public let batchMore: Bool

    /// A receipt for the commit `seq`, with the ids it remapped and the conflicts it resolved.
    public init(
        seq: UInt64, remaps: [UUID: UUID] = [:], isDuplicate: Bool = false, resolved: [Tributary_V1_EntityBatch] = [],
        batchIDs: [UUID] = [], batchMore: Bool = false
    ) {
        self.seq = seq
        self.remaps = remaps
        self.isDuplicate = isDuplicate
        self.resolved = resolved
        self.batchIDs = batchIDs
        self.batchMore = batchMore
    }

    package init(_ ack: Tributary_V1_SaveAck) {
        var remaps: [UUID: UUID] = [:]
        for remap in ack.remaps {
            let count = min(remap.fromIds.count, remap.toIds.count) / 16
            for index in 0..<count {
                remaps[UUID(bytes: remap.fromIds, at: remap.fromIds.startIndex + index * 16)] =
                    UUID(bytes: remap.toIds, at: remap.toIds.startIndex + index * 16)
            }
        }
        let ids = (0..<ack.batchIds.count / 16).map { UUID(bytes: ack.batchIds, at: ack.batchIds.startIndex + $0 * 16) }
        self.init(
            seq: ack.seq, remaps: remaps, isDuplicate: ack.duplicate, resolved: ack.resolved, batchIDs: ids,
            batchMore: ack.batchMore)
    }
}

/// A context is the parent of its child contexts: a child's save becomes the parent's unsaved changes, in memory,
/// and reaches the store only when the parent saves (Core Data's nested contexts).
extension ObjectContext: ChangeSetParent {
    public func save(_ changes: Tributary_V1_ChangeSet) async throws -> SaveReceipt {
        try await perform { context in
            try context.absorb(changes)
            return SaveReceipt(seq: 0)
        }
    }

    /// A child saving inside one of its blocks: absorbed on this context's queue while the child waits.
    public func saveAndWait(_ changes: Tributary_V1_ChangeSet, id: UUID) throws -> SaveReceipt {
        try performAndWait {
            try absorb(changes)
            return SaveReceipt(seq: 0)
        }
    }

    /// A child's batch change goes to the root at once (Core Data's batch requests run against the store, not the
    /// context): passed on to this context's parent.
    public func execute(_ change: Tributary_V1_BatchChange, id: UUID) async throws -> SaveReceipt {
        guard let parent else {
            throw ContextError(.noParent, "context '\(name)' has no parent to run a batch change in")
        }
        return try await parent.execute(change, id: id)
    }

    /// A child's aggregate request: passed on to this context's parent, the store answering it (unsaved changes
    /// are left out of aggregates at every level, as Core Data leaves them out of dictionary results).
    public func aggregate(_ request: Tributary_V1_AggregateRequest) throws -> Tributary_V1_AggregateReply {
        guard let parent else {
            throw ContextError(.noParent, "context '\(name)' has no parent to answer an aggregate request")
        }
        return try parent.aggregate(request)
    }

    /// A child's fetch: answered on this context's queue with its own unsaved changes in, so the child sees what
    /// it would see after this context's save.
    public func fetch(_ request: Tributary_V1_FetchRequest) throws -> Tributary_V1_FetchReply {
        try performAndWait {
            let (objects, count, prefetched) = try resolveFetch(request)
            var reply = Tributary_V1_FetchReply()
            reply.count = UInt64(count)
            switch request.resultType {
            case .count: break
            case .ids:
                reply.objects.entity = request.entity
                for object in objects { object.objectID.uuid.append(to: &reply.objects.ids) }
            case .objects, .UNRECOGNIZED:
                // One request for every fault among them, not one per object.
                let faults = objects.filter(\.isFault)
                if !faults.isEmpty { try loadStoredValues(of: faults) }
                let entity = try requireEntity(request.entity)
                reply.objects = ChangeSetBuilder.storedRows(of: entity, objects)
                if !request.prefetch.isEmpty {
                    let paths = try request.prefetch.map { try model.prefetchPath($0, from: entity) }
                    for step in try prefetch(paths, from: objects, prefetched: prefetched) {
                        reply.prefetched.append(
                            ChangeSetBuilder.storedRows(of: try requireEntity(step.entity), step.objects))
                    }
                }
            }
            return reply
        }
    }
}
