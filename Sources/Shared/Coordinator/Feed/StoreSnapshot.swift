import Foundation
import GRDB
import Synchronization
import TributaryCore
import TributaryProtocol

/// The current objects of some entities read at one consistent point (a read transaction held open, so commits
/// made meanwhile do not show), handed out in pages of column-wise `INSERT` batches. A subscriber whose history
/// position was pruned loads it and follows the feed after the page's `seq`.
///
/// The read transaction opens with the first page (making one blocks, so it happens on a thread of its own, as
/// every page's read does on the snapshot's GRDB queue); every page shows the store as it was then.
public final class StoreSnapshot: Sendable {
    private let pool: DatabasePool
    private let entities: [Entity]
    private let cursor = Mutex(Cursor())

    private struct Cursor {
        var entity = 0
        var after: Data?
        var busy = false
        /// The open read transaction and the last commit it shows (with its epoch), from the first page on.
        var opened: (snapshot: DatabaseSnapshot, seq: UInt64, epoch: UInt64)?
    }

    /// A snapshot of `entities` (every entity when empty), opened by its first page.
    /// - Throws: ``StoreError`` `unknownEntity` naming an entity the model does not have.
    init(pool: DatabasePool, model: Model, entities: Set<String>) throws {
        for name in entities where model.entity(named: name) == nil {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw StoreError(.unknownEntity, "unknown entity '\(name)' (the model has \(known))")
        }
        self.pool = pool
        self.entities = model.entities.filter { entities.isEmpty || entities.contains($0.name) }
    }

    /// The next page: at most `maxRows` objects, of one entity per batch; `seq` is the last commit the snapshot
    /// shows (of `epoch`), `done` tells that it is the last page.
    /// - Throws: ``/TributaryCore/StoreError`` when a page of this snapshot is being read already.
    public func nextPage(maxRows: Int) async throws
        -> (objects: [Tributary_V1_EntityBatch], seq: UInt64, epoch: UInt64, done: Bool)
    {
        var position = try cursor.withLock { cursor in
            guard !cursor.busy else {
                throw StoreError(.constraint, "a page of this snapshot is being read; ask for one page at a time")
            }
            cursor.busy = true
            return cursor
        }
        defer {
            cursor.withLock { cursor in
                cursor = position
                cursor.busy = false
            }
        }
        if position.opened == nil {
            let pool = self.pool
            let snapshot = try await BlockingWork.run { try pool.makeSnapshot() }
            let last = try await snapshot.read { db in try FeedStore.lastPosition(db) }
            position.opened = (snapshot, last.seq, last.epoch)
        }
        guard let (snapshot, seq, epoch) = position.opened else { preconditionFailure("opened above") }
        let entities = self.entities
        let start = position
        let (objects, end) = try await snapshot.read { db in
            var position = start
            var objects: [Tributary_V1_EntityBatch] = []
            var rows = 0
            while rows < maxRows && position.entity < entities.count {
                let wanted = maxRows - rows
                let batch = try Self.page(of: entities[position.entity], after: position.after, limit: wanted, in: db)
                let count = batch.ids.count / 16
                if count > 0 {
                    objects.append(batch)
                    rows += count
                }
                if count < wanted {
                    position.entity += 1
                    position.after = nil
                } else {
                    position.after = batch.ids.suffix(16)
                }
            }
            return (objects, position)
        }
        position = end
        return (objects, seq, epoch, position.entity >= entities.count)
    }

    /// Up to `limit` objects of `entity` with ids above `after`, in id order.
    private static func page(of entity: Entity, after: Data?, limit: Int, in db: Database) throws
        -> Tributary_V1_EntityBatch
    {
        try ObjectRows.read(
            entity, where: "\"id\" > ?", arguments: [(after ?? Data()).databaseValue], limit: limit,
            contiguousIDs: true, in: db)
    }
}

/// A page of a snapshot (`SnapshotRequest`): at most the rows asked for, of one entity per batch, in the encoding the
/// wire carries objects; `seq` is the last commit the snapshot shows (of `epoch`), `done` that it is the last page.
package struct SnapshotPage: Sendable {
    package let snapshotID: UInt64
    package let seq: UInt64
    package let epoch: UInt64
    package let objects: [Tributary_V1_EntityBatch]
    package let done: Bool
}
