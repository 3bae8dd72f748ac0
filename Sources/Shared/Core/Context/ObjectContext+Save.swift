import Foundation
import TributaryProtocol

extension ObjectContext {
    /// Pushes the context's changes to its parent as one change set, and waits for the parent's answer.
    ///
    /// On success the inserted and changed objects count as saved, and inserts the root merged into existing
    /// objects (uniqueness) take those objects' ids, relationships included. On failure the changes stay
    /// pending, as in Core Data. A save whose outcome is unknown (``SaveInDoubtError``) is kept as it was sent and
    /// goes first at the next save, with the same id, so that it is applied once. Call it from outside the
    /// context's queue (it hops onto it, and off it while the parent answers: blocks run meanwhile, and edits they
    /// make count for the next save); inside a block, call `try save()`.
    /// - Returns: the parent's receipt; `seq` 0 when there was nothing to save.
    @discardableResult
    public func save() async throws -> SaveReceipt {
        try await save(evenIfEmpty: false)
    }

    /// Pushes the context's changes to its parent from inside one of its blocks, blocking the context's queue until
    /// the parent answers (Core Data's `save()` in `perform`): the edits and the save in one block, with no hop in
    /// between, and the context settled with the answer when it returns. Otherwise as `try await save()`: one save at
    /// a time (this one waits, on the queue, for a save in flight), a save in doubt sent again first.
    ///
    /// Call `performAndWait` around it from a thread of your own (a UI's main thread), or `perform`: never from a
    /// Swift concurrency task, whose thread of the cooperative pool it would hold for a network round trip (with a
    /// parent that answers through a task, that can deadlock the pool). A task on the main actor is refused too
    /// (`Task { @MainActor in … }`, a SwiftUI `.task`): save there with `try await context.save()`.
    ///
    /// ```swift
    /// try context.performAndWait {
    ///     try context.insert("User")["login"] = .string("octocat")
    ///     try context.save()
    /// }
    /// ```
    /// - Throws: what `try await save()` throws; ``ContextError`` `unsupported` when called outside the context's
    ///   queue or from a Swift concurrency task, or when the parent saves only asynchronously (a job's), before
    ///   anything is taken; `waitCycle` when the save in flight waits for a parent context whose block waits for
    ///   this one; `timedOut` when the save in flight has not ended within the parent's
    ///   ``ChangeSetParent/blockedSaveLimit`` (changes still pending).
    @discardableResult
    public func save() throws -> SaveReceipt {
        guard isOnQueue else {
            throw ContextError(
                .unsupported,
                "save() of context '\(name)' was called outside its queue: call it inside perform or performAndWait, "
                    + "or use `try await context.save()`")
        }
        guard !Self.runsInTask else {
            throw ContextError(
                .unsupported,
                "save() of context '\(name)' was called in performAndWait from a Swift concurrency task, whose thread it "
                    + "would hold for the round trip: use `try await context.save()` there")
        }
        guard let parent else {
            throw ContextError(.noParent, "context '\(name)' has no parent to save to")
        }
        guard parent.savesInBlocks else {
            throw ContextError(
                .unsupported,
                "save() of context '\(name)' was called inside a block, which its parent (\(type(of: parent))) "
                    + "does not allow: use `try await context.save()`")
        }
        try enterSavingGate(parent)
        defer { saving.leave() }
        settleFinishedSaves()
        var resent: SaveReceipt?
        if let unanswered = takeSaveInDoubt() {
            let outcome = Result { try resendAndWait(unanswered, to: parent) }
            settleFinishedSaves()
            resent = try outcome.get()
        }
        let pending = takePendingChanges()
        if pending.changeSet.batches.isEmpty { return resent ?? SaveReceipt(seq: 0) }
        let sent = SentSave(id: UUID(), sentAt: Date(), changes: pending)
        let outcome = Result { try parent.saveAndWait(sent.changes.changeSet, id: sent.id) }
        record(sent, outcome)
        settleFinishedSaves()
        return try outcome.get()
    }

    /// Whether the caller runs in a Swift concurrency task (a block run inline by `performAndWait` from one).
    private static var runsInTask: Bool { withUnsafeCurrentTask { $0 != nil } }

    /// Takes the save gate from the context's queue, waiting there while a save is in flight: that save took its
    /// changes before this block ran and needs the queue no more, unless it waits for a parent context whose block
    /// waits for this one (refused, as `performAndWait` refuses a cycle). The save in flight runs in a task: the
    /// wait ends at the parent's `blockedSaveLimit`, so that tasks blocked on this queue cannot keep it from ending.
    private func enterSavingGate(_ parent: any ChangeSetParent) throws {
        let deadline = DispatchTime.after(parent.blockedSaveLimit)
        while !saving.tryEnter() {
            let waiter = try (parent as? ObjectContext).map { try WaitGraph.enter(waitingFor: $0.identity) } ?? nil
            let free = saving.waitUntilFreeBlocking(until: deadline)
            WaitGraph.leave(waiter)
            guard free else {
                throw ContextError(
                    .timedOut,
                    "save() of context '\(name)' waited \(parent.blockedSaveLimit) for the context's save in flight "
                        + "(the cooperative pool busy, or tasks blocked in performAndWait on this context); its "
                        + "changes are still pending")
            }
        }
    }

    /// Sends a save in doubt again and waits for its answer, recording how it settles the context.
    private func resendAndWait(_ unanswered: SentSave, to parent: any ChangeSetParent) throws -> SaveReceipt {
        try checkResendWindow(unanswered)
        let outcome = Result { try parent.saveAndWait(unanswered.changes.changeSet, id: unanswered.id) }
        record(unanswered, outcome)
        return try outcome.get()
    }

    /// Saves, sending an empty change set when nothing changed (a job's completion must reach the root).
    package func save(evenIfEmpty: Bool) async throws -> SaveReceipt {
        guard let parent else {
            throw ContextError(.noParent, "context '\(name)' has no parent to save to")
        }
        var resent: SaveReceipt?
        while true {
            // The gate, the settling of the saves before and the changes in one block: a save holding the gate
            // never waits for the queue, and takes its changes at the versions the saves before it committed.
            let taken = try await perform { context -> Taken in
                guard context.saving.tryEnter() else { return .busy }
                context.settleFinishedSaves()
                if let unanswered = context.takeSaveInDoubt() { return .inDoubt(unanswered) }
                return .pending(context.takePendingChanges())
            }
            switch taken {
            case .busy:
                await saving.waitUntilFree()
            case .inDoubt(let unanswered):
                // Sent again alone: the changes made since are taken once its answer has settled the context.
                defer { saving.leave() }
                try checkResendWindow(unanswered)
                resent = try await send(unanswered, to: parent)
            case .pending(let pending):
                defer { saving.leave() }
                if pending.changeSet.batches.isEmpty && !evenIfEmpty { return resent ?? SaveReceipt(seq: 0) }
                return try await send(SentSave(id: UUID(), sentAt: Date(), changes: pending), to: parent)
            }
        }
    }

    /// What a save took off the context in the block that took the gate.
    private enum Taken: Sendable {
        /// Another save holds the gate.
        case busy
        /// A save in doubt, to send again before anything newer.
        case inDoubt(SentSave)
        case pending(PendingChanges)
    }

    /// Sends one save and records how its answer settles the context, settled on the queue at the start of the next
    /// block (``settlements``): a cancelled caller cannot skip it, and blocks that run after this returns see it.
    private func send(_ sent: SentSave, to parent: any ChangeSetParent) async throws -> SaveReceipt {
        let outcome: Result<SaveReceipt, any Error>
        do {
            outcome = .success(try await parent.save(sent.changes.changeSet, id: sent.id))
        } catch {
            outcome = .failure(error)
        }
        record(sent, outcome)
        return try outcome.get()
    }

    /// Throws when a save in doubt is too old to send again: it is dropped (nothing records it back).
    private func checkResendWindow(_ unanswered: SentSave) throws {
        guard Date().timeIntervalSince(unanswered.sentAt) < SaveInDoubtError.resendWindow else {
            throw SaveInDoubtError(
                saveID: unanswered.id,
                reason:
                    "it was sent more than \(Int(SaveInDoubtError.resendWindow / 3600)) hours ago, longer than the "
                    + "coordinator keeps save ids; it is dropped, not sent again: refetch its objects and edit them again"
            )
        }
    }

    /// Records how a save's outcome settles the context, for ``settleFinishedSaves()``: recorded before the save
    /// leaves the gate, so the next save settles it before it takes its changes.
    private func record(_ sent: SentSave, _ outcome: Result<SaveReceipt, any Error>) {
        let settle: @Sendable (ObjectContext) -> Void
        switch outcome {
        case .success(let receipt): settle = { $0.didSave(receipt, sent.changes) }
        case .failure(let error) where error is SaveInDoubtError: settle = { $0.saveInDoubt = sent }
        case .failure: settle = { $0.restore(sent.changes) }
        }
        settlements.withLock { $0.append(settle) }
    }

    /// Settles the context with the answers of the saves that finished, in the order they finished; on the queue.
    func settleFinishedSaves() {
        assertOnQueue()
        let finished = settlements.withLock { settlements in
            defer { settlements = [] }
            return settlements
        }
        for settle in finished { settle(self) }
    }

    /// Whether a save was sent whose outcome is not known yet: the next `save()` sends it again first.
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
