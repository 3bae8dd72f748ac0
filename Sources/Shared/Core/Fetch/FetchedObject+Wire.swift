import Foundation
import TributaryProtocol

extension FetchedObject {
    /// Reads the objects of a fetch reply's `EntityBatch`, typing each column by `model`: the column's arrays alone
    /// do not tell an int from a bool, a double from a date, or a uuid attribute from a to-one relationship.
    /// - Throws: ``ModelError`` for an entity `model` lacks; ``StoreError`` for a column that does not fit it (an
    ///   unknown name, too few values) or ids that are not 16 bytes each.
    package static func objects(in batch: Tributary_V1_EntityBatch, model: Model) throws -> [FetchedObject] {
        guard !batch.ids.isEmpty else { return [] }
        let entity = try model.requireEntity(named: batch.entity)
        let rows = batch.ids.count / 16
        guard batch.ids.count == rows * 16 else {
            throw StoreError(.wrongType, "the ids of a '\(entity.name)' batch are not 16 bytes each")
        }
        let columns = try batch.columns.map { try ColumnReader($0, entity: entity, rows: rows) }
        let versions = batch.versions.count == rows ? batch.versions : Array(repeating: 0, count: rows)
        return (0..<rows).map { row in
            var attributes: [String: AttributeValue] = [:]
            var toOne: [String: ObjectID] = [:]
            var toMany: [String: [ObjectID]] = [:]
            for relationship in entity.relationships where relationship.isToMany { toMany[relationship.name] = [] }
            for column in columns {
                switch column.target {
                case .attribute(let attribute):
                    attributes[attribute.name] = column.value(row)
                case .toOne(let relationship):
                    if case .uuid(let uuid) = column.value(row) {
                        toOne[relationship.name] = ObjectID(entity: relationship.destination, uuid: uuid)
                    }
                case .toMany(let relationship):
                    toMany[relationship.name] = column.destinations(row).map {
                        ObjectID(entity: relationship.destination, uuid: $0)
                    }
                }
            }
            let id = UUID(bytes: batch.ids, at: batch.ids.startIndex + row * 16)
            return FetchedObject(
                id: ObjectID(entity: entity.name, uuid: id), version: versions[row], entity: entity,
                attributes: attributes, toOne: toOne, toMany: toMany)
        }
    }
}
