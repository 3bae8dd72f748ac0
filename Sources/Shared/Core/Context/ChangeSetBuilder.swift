import Foundation
import TributaryProtocol

/// Turns a context's pending changes into a column-wise ``/TributaryProtocol/Tributary_V1_ChangeSet``: one batch per
/// entity, operation and set of properties, attribute names once per batch. Updates and deletes carry the versions
/// their objects were read at, and what the merge policy needs (store trump: the values read; overwrite: every
/// property).
struct ChangeSetBuilder {
    let policy: MergePolicy

    private struct GroupKey: Hashable {
        let entity: String
        let operation: Tributary_V1_Operation
        let properties: [Bool]
    }

    private var groups: [GroupKey: [ManagedObject]] = [:]
    private var order: [GroupKey] = []
    private var deletes: [String: Data] = [:]
    private var deleteVersions: [String: [UInt64]] = [:]
    private var deleteOrder: [String] = []

    init(policy: MergePolicy = .error) {
        self.policy = policy
    }

    mutating func addInsert(_ object: ManagedObject) {
        // Set properties, nil and empty included: the store may merge the insert into an object it has (by a
        // uniqueness constraint), whose values they then replace. Properties never set are left out.
        let attributes = object.values.count
        let present =
            object.values.indices.map { object.values[$0] != nil || object.changed[$0] }
            + object.entity.relationships.indices.map { index in
                object.changed[attributes + index]
                    || (object.entity.relationships[index].isToMany
                        ? !object.toMany[index].isEmpty : object.toOne[index] != nil)
            }
        add(object, key: GroupKey(entity: object.entity.name, operation: .insert, properties: present))
    }

    mutating func addUpdate(_ object: ManagedObject) {
        guard object.changed.contains(true) else { return }
        // Overwrite writes the whole object, when the context knows it whole (it was read from the store).
        let properties =
            policy == .overwrite && object.version != 0
            ? Array(repeating: true, count: object.changed.count) : object.changed
        add(object, key: GroupKey(entity: object.entity.name, operation: .update, properties: properties))
    }

    mutating func addDelete(_ id: UUID, entity: String, version: UInt64 = 0) {
        if deletes[entity] == nil { deleteOrder.append(entity) }
        id.append(to: &deletes[entity, default: Data()])
        deleteVersions[entity, default: []].append(version)
    }

    private mutating func add(_ object: ManagedObject, key: GroupKey) {
        if groups[key] == nil { order.append(key) }
        groups[key, default: []].append(object)
    }

    func build() -> Tributary_V1_ChangeSet {
        var changeSet = Tributary_V1_ChangeSet()
        changeSet.mergePolicy = policy.wire
        for key in order {
            guard let objects = groups[key], let entity = objects.first?.entity else { continue }
            var batch = Self.batch(key, entity: entity, objects: objects)
            if key.operation == .update && objects.contains(where: { $0.version != 0 }) {
                batch.versions = objects.map(\.version)
                if policy == .storeTrump { batch.originals = Self.originals(key, entity: entity, objects: objects) }
            }
            changeSet.batches.append(batch)
        }
        for entity in deleteOrder {
            let versions = deleteVersions[entity] ?? []
            changeSet.batches.append(
                Tributary_V1_EntityBatch.with {
                    $0.entity = entity
                    $0.operation = .delete
                    $0.ids = deletes[entity] ?? Data()
                    if versions.contains(where: { $0 != 0 }) { $0.versions = versions }
                })
        }
        return changeSet
    }

    private static func batch(_ key: GroupKey, entity: Entity, objects: [ManagedObject]) -> Tributary_V1_EntityBatch {
        var batch = Tributary_V1_EntityBatch()
        batch.entity = entity.name
        batch.operation = key.operation
        var ids = Data(capacity: objects.count * 16)
        for object in objects { object.objectID.uuid.append(to: &ids) }
        batch.ids = ids
        for (index, attribute) in entity.attributes.enumerated() where key.properties[index] {
            batch.columns.append(attributeColumn(attribute, index: index, objects: objects))
        }
        for (index, relationship) in entity.relationships.enumerated()
        where key.properties[entity.attributes.count + index] {
            batch.columns.append(relationshipColumn(relationship, index: index, objects: objects))
        }
        return batch
    }

    /// Whole objects as stored rows: every attribute and relationship, with versions (a parent context's answer
    /// to a child's fetch).
    static func storedRows(of entity: Entity, _ objects: [ManagedObject]) -> Tributary_V1_EntityBatch {
        let all = Array(repeating: true, count: entity.attributes.count + entity.relationships.count)
        var batch = Self.batch(
            GroupKey(entity: entity.name, operation: .insert, properties: all), entity: entity, objects: objects)
        batch.versions = objects.map(\.version)
        return batch
    }

    /// The values the objects had when read (their committed snapshot), for the batch's attribute and to-one
    /// columns: the store-trump policy compares them with the stored ones.
    private static func originals(_ key: GroupKey, entity: Entity, objects: [ManagedObject]) -> [Tributary_V1_Column] {
        var columns: [Tributary_V1_Column] = []
        for (index, attribute) in entity.attributes.enumerated() where key.properties[index] {
            columns.append(attributeColumn(attribute, index: index, objects: objects, original: true))
        }
        for (index, relationship) in entity.relationships.enumerated()
        where key.properties[entity.attributes.count + index] && !relationship.isToMany {
            columns.append(relationshipColumn(relationship, index: index, objects: objects, original: true))
        }
        return columns
    }

    private static func attributeColumn(
        _ attribute: Attribute, index: Int, objects: [ManagedObject], original: Bool = false
    ) -> Tributary_V1_Column {
        ChangeSetColumns.attribute(attribute, rows: objects.count) { row in
            let object = objects[row]
            return original ? (object.committed?.values ?? object.values)[index] : object.values[index]
        }
    }

    private static func relationshipColumn(
        _ relationship: Relationship, index: Int, objects: [ManagedObject], original: Bool = false
    ) -> Tributary_V1_Column {
        if relationship.isToMany {
            return ChangeSetColumns.toMany(relationship.name, rows: objects.count) { objects[$0].toMany[index] }
        }
        return ChangeSetColumns.toOne(relationship.name, rows: objects.count) { row in
            let object = objects[row]
            return original ? (object.committed?.toOne ?? object.toOne)[index] : object.toOne[index]
        }
    }
}

/// The null bitmap of a column: bit i (byte i/8, bit i%8) set when row i is null; empty when none is.
package struct NullBitmap {
    package static let zeroID = [UInt8](repeating: 0, count: 16)

    private var bytes: [UInt8]
    private var any = false

    package init(rows: Int) {
        bytes = Array(repeating: 0, count: (rows + 7) / 8)
    }

    package mutating func set(_ row: Int) {
        bytes[row >> 3] |= 1 << UInt8(row & 7)
        any = true
    }

    package var data: Data { any ? Data(bytes) : Data() }

    /// Whether a wire null bitmap marks row `row` null (a bitmap shorter than the rows leaves the rest not null).
    @inline(__always)
    package static func isNull(_ nulls: Data, row: Int) -> Bool {
        let byte = row >> 3
        return byte < nulls.count && nulls[nulls.startIndex + byte] & (1 << UInt8(row & 7)) != 0
    }
}
