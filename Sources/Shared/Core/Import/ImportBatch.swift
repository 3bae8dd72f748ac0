import Foundation
import TributaryProtocol

/// The objects one batch of import rows makes, kept ready to become a change set without a context: each
/// object's values, to-one and to-many destinations, and per entity with a uniqueness constraint the object each
/// key found or created (find-or-create within the batch; the root finds objects the store has).
///
/// The change set it builds is the one a context holding the same inserts would send (``ChangeSetBuilder``): one
/// insert batch per entity and set of properties its rows set, in the order objects were made. Each batch stands on its
/// own: the root upserts its objects by their keys, as it does for rows of different jobs.
package struct ImportBatch {
    /// An object of the batch, by its entity's index in the model.
    struct Object {
        let entity: Int
        let id: UUID
        var values: [AttributeValue?]
        var toOne: [UUID?]
        var toMany: [[UUID]]
        /// Per attribute, then relationship: whether a row set it (null and [] included).
        var set: [Bool]
    }

    /// A uniqueness key as the store compares it: one value (the common case, hashed without an array) or several.
    enum Key: Hashable {
        case one(UniqueKeyValue)
        case many([UniqueKeyValue])
    }

    let entities: [Entity]
    private(set) var objects: [Object] = []
    /// Per entity index, the object each uniqueness key found or created.
    private var byKey: [[Key: Int]]

    package init(model: Model) {
        entities = model.entities
        byKey = Array(repeating: [:], count: model.entities.count)
    }

    /// Whether the batch has no objects.
    package var isEmpty: Bool { objects.isEmpty }

    /// The object of entity `entity` with uniqueness key `key`, made when the batch has none yet.
    mutating func findOrCreate(_ entity: Int, key: Key) -> Int {
        if let found = byKey[entity][key] { return found }
        let made = insert(entity)
        byKey[entity][key] = made
        return made
    }

    /// A new object of entity `entity`.
    mutating func insert(_ entity: Int) -> Int {
        let description = entities[entity]
        objects.append(
            Object(
                entity: entity, id: TimeOrderedUUID.next(),
                values: Array(repeating: nil, count: description.attributes.count),
                toOne: Array(repeating: nil, count: description.relationships.count),
                toMany: Array(repeating: [], count: description.relationships.count),
                set: Array(repeating: false, count: description.attributes.count + description.relationships.count)))
        return objects.count - 1
    }

    mutating func setValue(_ value: AttributeValue?, of object: Int, attribute: Int) {
        objects[object].values[attribute] = value
        objects[object].set[attribute] = true
    }

    mutating func setDestination(_ destination: Int?, of object: Int, relationship: Int) {
        objects[object].toOne[relationship] = destination.map { objects[$0].id }
        objects[object].set[entities[objects[object].entity].attributes.count + relationship] = true
    }

    /// Replaces a to-many relationship's destinations (each once, in the order given).
    mutating func setDestinations(_ destinations: [Int], of object: Int, relationship: Int) {
        var seen = Set<Int>()
        objects[object].toMany[relationship] = destinations.filter { seen.insert($0).inserted }.map { objects[$0].id }
        objects[object].set[entities[objects[object].entity].attributes.count + relationship] = true
    }

    /// Whether rows set nothing of `object` but the attributes `attributes` (its uniqueness key).
    func setsOnly(_ attributes: [Int], of object: Int) -> Bool {
        objects[object].set.indices.allSatisfy { !objects[object].set[$0] || attributes.contains($0) }
    }

    func value(of object: Int, attribute: Int) -> AttributeValue? {
        objects[object].values[attribute]
    }

    /// The batch as a change set of inserts: one batch per entity and set of present properties (those a row set,
    /// null and [] included: they replace what the store holds when it merges the object into one it has), in the
    /// order their first object was made.
    package func changeSet() -> Tributary_V1_ChangeSet {
        struct Group: Hashable {
            let entity: Int
            let present: [Bool]
        }
        var groups: [Group: [Int]] = [:]
        var order: [Group] = []
        for (index, object) in objects.enumerated() {
            let group = Group(entity: object.entity, present: object.set)
            if groups[group] == nil { order.append(group) }
            groups[group, default: []].append(index)
        }
        var changeSet = Tributary_V1_ChangeSet()
        changeSet.mergePolicy = MergePolicy.error.wire
        for group in order {
            guard let members = groups[group] else { continue }
            changeSet.batches.append(batch(group.entity, present: group.present, members: members))
        }
        return changeSet
    }

    private func batch(_ entityIndex: Int, present: [Bool], members: [Int]) -> Tributary_V1_EntityBatch {
        let entity = entities[entityIndex]
        var batch = Tributary_V1_EntityBatch()
        batch.entity = entity.name
        batch.operation = .insert
        var ids = Data(capacity: members.count * 16)
        for member in members { objects[member].id.append(to: &ids) }
        batch.ids = ids
        for (index, attribute) in entity.attributes.enumerated() where present[index] {
            batch.columns.append(
                ChangeSetColumns.attribute(attribute, rows: members.count) { objects[members[$0]].values[index] })
        }
        for (index, relationship) in entity.relationships.enumerated()
        where present[entity.attributes.count + index] {
            batch.columns.append(
                relationship.isToMany
                    ? ChangeSetColumns.toMany(relationship.name, rows: members.count) {
                        objects[members[$0]].toMany[index]
                    }
                    : ChangeSetColumns.toOne(relationship.name, rows: members.count) {
                        objects[members[$0]].toOne[index]
                    })
        }
        return batch
    }
}
