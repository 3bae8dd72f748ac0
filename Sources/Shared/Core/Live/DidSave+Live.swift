import Foundation

/// What a live result (``LiveResultsEngine``, ``LiveAggregateEngine``) reads of a merged commit beyond its ids.
extension DidSave {
    /// The objects of `entity` the commit inserted, whole, by id, not registered in `context` (an insert carries
    /// every property it set; the rest are nil).
    func insertedObjects(of entity: Entity, in context: ObjectContext) -> [UUID: ManagedObject] {
        let inserted = Set(self.inserted.lazy.filter { $0.entity == entity.name }.map(\.uuid))
        var rows: [UUID: ManagedObject] = [:]
        for batch in values where batch.entity == entity.name && batch.operation == .insert {
            guard let objects = try? context.transientObjects(from: batch) else { continue }
            for object in objects where inserted.contains(object.objectID.uuid) {
                object.isFault = false
                rows[object.objectID.uuid] = object
            }
        }
        return rows
    }

    /// The properties the commit changed, per object of `entity`.
    func changedProperties(of entity: String) -> [UUID: Set<String>] {
        var changed: [UUID: Set<String>] = [:]
        for batch in values where batch.entity == entity {
            let names = Set(batch.columns.map(\.name))
            for row in 0..<batch.ids.count / 16 {
                changed[UUID(bytes: batch.ids, at: batch.ids.startIndex + row * 16), default: []].formUnion(names)
            }
        }
        return changed
    }

    /// How many of the commit's batches wrote each object of `entity`.
    func batchCounts(of entity: String) -> [UUID: Int] {
        var counts: [UUID: Int] = [:]
        for batch in values where batch.entity == entity {
            for row in 0..<batch.ids.count / 16 {
                counts[UUID(bytes: batch.ids, at: batch.ids.startIndex + row * 16), default: 0] += 1
            }
        }
        return counts
    }
}
