import Foundation
import GRDB
import Synchronization
import TributaryCore
import TributaryProtocol

/// The current objects of some entities read at one consistent point (a read transaction held open, so commits
/// made meanwhile do not show), handed out in pages of column-wise `INSERT` batches. A subscriber whose history
/// position was pruned loads it and follows the feed after ``seq``.
public final class StoreSnapshot: Sendable {
    /// The last commit the snapshot shows.
    public let seq: UInt64
    private let entities: [Entity]
    private let snapshot: DatabaseSnapshot
    private let cursor = Mutex(Cursor())

    private struct Cursor {
        var entity = 0
        var after: Data?
        var busy = false
    }

    /// Opens a snapshot of `entities` (every entity when empty).
    /// - Throws: ``StoreError`` `unknownEntity` naming an entity the model does not have.
    init(pool: DatabasePool, model: Model, entities: Set<String>) throws {
        for name in entities where model.entity(named: name) == nil {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw StoreError(.unknownEntity, "unknown entity '\(name)' (the model has \(known))")
        }
        self.entities = model.entities.filter { entities.isEmpty || entities.contains($0.name) }
        snapshot = try pool.makeSnapshot()
        seq = try snapshot.read { db in try RootStore.lastSequenceNumber(db) }
    }

    /// The next page: at most `maxRows` objects, of one entity per batch. `done` tells that it is the last.
    /// - Throws: ``StoreError`` when a page of this snapshot is being read already.
    public func nextPage(maxRows: Int) throws -> (objects: [Tributary_V1_EntityBatch], done: Bool) {
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
        var objects: [Tributary_V1_EntityBatch] = []
        var rows = 0
        try snapshot.read { db in
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
        }
        return (objects, position.entity >= entities.count)
    }

    /// Up to `limit` objects of `entity` with ids above `after`, in id order.
    private static func page(of entity: Entity, after: Data?, limit: Int, in db: Database) throws
        -> Tributary_V1_EntityBatch
    {
        try ObjectRows.read(
            entity, where: "\"id\" > ?", arguments: [(after ?? Data()).databaseValue], limit: limit, in: db)
    }
}
