import Foundation
import TributaryProtocol

extension ObjectContext {
    /// Pushes the context's changes to its parent as one change set, and waits for the parent's answer.
    ///
    /// On success the inserted and changed objects count as saved, and inserts the root merged into existing
    /// objects (uniqueness) take those objects' ids, relationships included. On failure the changes stay
    /// pending, as in Core Data. A save whose outcome is unknown (``SaveInDoubtError``) is kept as it was sent and
    /// goes first at the next save, with the same id, so that it is applied once. Call it from outside the
    /// context's queue (it hops onto it).
    /// - Returns: the parent's receipt; `seq` 0 when there was nothing to save.
    @discardableResult
    public func save() async throws -> SaveReceipt {
        try await save(evenIfEmpty: false)
    }

    /// Saves, sending an empty change set when nothing changed (a job's completion must reach the root).
    package func save(evenIfEmpty: Bool) async throws -> SaveReceipt {
        guard let parent else {
            throw ContextError(.noParent, "context '\(name)' has no parent to save to")
        }
        // One save at a time: a save in doubt goes out again before anything newer does.
        await saving.enter()
        defer { saving.leave() }
        var resent: SaveReceipt?
        // One hop onto the queue in the usual case: the pending changes, unless a save in doubt goes first.
        let taken = try await perform { context -> (SentSave?, PendingChanges?) in
            if let unanswered = context.takeSaveInDoubt() { return (unanswered, nil) }
            return (nil, context.takePendingChanges())
        }
        if let unanswered = taken.0 {
            guard Date().timeIntervalSince(unanswered.sentAt) < SaveInDoubtError.resendWindow else {
                throw SaveInDoubtError(
                    saveID: unanswered.id,
                    reason:
                        "it was sent more than \(Int(SaveInDoubtError.resendWindow / 3600)) hours ago, longer than the "
                        + "coordinator keeps save ids; it is dropped, not sent again: refetch its objects and edit them again"
                )
            }
            resent = try await send(unanswered, to: parent)
        }
        let pending: PendingChanges
        if let taken = taken.1 {
            pending = taken
        } else {
            pending = try await perform { context in context.takePendingChanges() }
        }
        if pending.changeSet.batches.isEmpty && !evenIfEmpty { return resent ?? SaveReceipt(seq: 0) }
        return try await send(SentSave(id: UUID(), sentAt: Date(), changes: pending), to: parent)
    }

    /// Sends one save and settles the context with the answer. The settling blocks are enqueued without waiting,
    /// so that a cancelled caller cannot skip them; later blocks run after them all the same.
    private func send(_ sent: SentSave, to parent: any ChangeSetParent) async throws -> SaveReceipt {
        do {
            let receipt = try await parent.save(sent.changes.changeSet, id: sent.id)
            perform { self.didSave(receipt, sent.changes) }
            return receipt
        } catch let error as SaveInDoubtError {
            perform { self.saveInDoubt = sent }
            throw error
        } catch {
            perform { self.restore(sent.changes) }
            throw error
        }
    }

    /// Whether a save was sent whose outcome is not known yet: the next ``save()`` sends it again first.
    public var hasSaveInDoubt: Bool {
        assertOnQueue()
        return saveInDoubt != nil
    }

    private func takeSaveInDoubt() -> SentSave? {
        assertOnQueue()
        defer { saveInDoubt = nil }
        return saveInDoubt
    }

    /// A save as it was sent: its id, when it was first sent, and its changes, kept whole while its outcome is
    /// unknown.
    struct SentSave: Sendable {
        let id: UUID
        let sentAt: Date
        let changes: PendingChanges
    }

    /// The changes a save sends, taken off the context so that edits made while it is in flight count for the
    /// next save; put back by ``restore(_:)`` if the save fails.
    package struct PendingChanges: @unchecked Sendable {
        // @unchecked: carries only ids and change flags between blocks on the same context queue.
        package let changeSet: Tributary_V1_ChangeSet
        let inserted: [UUID]
        /// The properties set on each inserted object (an insert writes them, nil included), put back when the
        /// save fails.
        let insertedSet: [(UUID, [Bool])]
        let updated: [(UUID, [Bool])]
        let deleted: [(UUID, ManagedObject)]
    }

    package func takePendingChanges() -> PendingChanges {
        assertOnQueue()
        var builder = ChangeSetBuilder(policy: mergePolicy)
        let inserted = insertedOrder.compactMap { registered[$0] }
        let updated = updatedOrder.compactMap { registered[$0] }
        for object in inserted { builder.addInsert(object) }
        for object in updated { builder.addUpdate(object) }
        var deleted: [(UUID, ManagedObject)] = []
        for id in deletedOrder {
            // Deleted objects are no longer registered; they are kept until the save.
            guard let object = deletedObjects[id] else { continue }
            builder.addDelete(id, entity: object.entity.name, version: object.version)
            deleted.append((id, object))
        }
        let pending = PendingChanges(
            changeSet: builder.build(), inserted: insertedOrder,
            insertedSet: inserted.map { ($0.objectID.uuid, $0.changed) },
            updated: updated.map { ($0.objectID.uuid, $0.changed) },
            deleted: deleted)
        for object in inserted {
            object.isInserted = false
            object.changed = Array(repeating: false, count: object.changed.count)
        }
        for object in updated { object.changed = Array(repeating: false, count: object.changed.count) }
        insertedOrder.removeAll()
        updatedOrder.removeAll()
        updatedSet.removeAll()
        deletedOrder.removeAll()
        deletedObjects.removeAll()
        return pending
    }

    func restore(_ pending: PendingChanges) {
        assertOnQueue()
        // The feed may have merged over what was sent meanwhile: the edits come back as they were made.
        reapply(pending.changeSet, olderThan: nil)
        for id in pending.inserted.reversed() {
            guard let object = registered[id] else { continue }
            object.isInserted = true
            insertedOrder.insert(id, at: 0)
        }
        for (id, set) in pending.insertedSet {
            guard let object = registered[id] else { continue }
            object.changed = zip(object.changed, set).map { $0 || $1 }
        }
        for (id, changed) in pending.updated {
            guard let object = registered[id] else { continue }
            object.changed = zip(object.changed, changed).map { $0 || $1 }
            registerUpdate(object)
        }
        for (id, object) in pending.deleted {
            deletedOrder.append(id)
            deletedObjects[id] = object
        }
    }

    func didSave(_ receipt: SaveReceipt, _ pending: PendingChanges) {
        assertOnQueue()
        // What was saved is the new baseline for rollback (edits made while the save was in flight included).
        for (id, _) in pending.updated { registered[id]?.committed = nil }
        if receipt.seq != 0 {
            // What was sent is what the commit holds (the conflicts it settled otherwise come back in `resolved`),
            // also where the feed merged an earlier commit over it while the save was out.
            reapply(pending.changeSet, olderThan: receipt.seq)
            // The commit wrote these objects: its sequence number is their version now. Inserts merged into an
            // existing object may have changed nothing of it, so their version is not known.
            // A later commit of them, merged from the feed before this answer came, keeps its version.
            for id in pending.inserted where receipt.remaps[id] == nil {
                if let object = registered[id] { object.version = max(object.version, receipt.seq) }
            }
            for (id, _) in pending.updated {
                if let object = registered[id] { object.version = max(object.version, receipt.seq) }
            }
        }
        for batch in receipt.resolved {
            // Conflicts the merge policy settled: the stored objects are the saved state now, unless this context
            // holds a later commit of them already.
            try? merge(batch, registeringNew: false, overridingChanges: true, keepingNewer: true)
        }
        guard !receipt.remaps.isEmpty else { return }
        for (from, to) in receipt.remaps {
            guard let object = registered.removeValue(forKey: from) else { continue }
            object.objectID = ObjectID(entity: object.entity.name, uuid: to)
            registered[to] = object
        }
        for entity in uniqueIndex.keys {
            uniqueIndex[entity] = uniqueIndex[entity]?.mapValues { receipt.remaps[$0] ?? $0 }
        }
        for object in registered.values {
            for index in object.toOne.indices {
                if let id = object.toOne[index], let to = receipt.remaps[id] { object.toOne[index] = to }
            }
            for index in object.toMany.indices where !object.toMany[index].isEmpty {
                object.toMany[index] = object.toMany[index].map { receipt.remaps[$0] ?? $0 }
            }
        }
    }

    /// Sets the values a save sent on the objects it sent them for, except properties changed here since (and, with
    /// `olderThan`, objects held at that commit or a later one). Versions stay as they are.
    private func reapply(_ changeSet: Tributary_V1_ChangeSet, olderThan seq: UInt64?) {
        for var batch in changeSet.batches where batch.operation == .insert || batch.operation == .update {
            batch.versions = []
            batch.originals = []
            try? merge(batch, registeringNew: false, olderThan: seq)
        }
    }
}
