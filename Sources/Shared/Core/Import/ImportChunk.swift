import Foundation
import TributaryProtocol

/// The objects one chunk of import rows makes, kept ready to become a change set without a context: each
/// object's values, to-one and to-many destinations, and per entity with a uniqueness constraint the object each
/// key found or created (find-or-create within the chunk; the root finds objects the store has).
///
/// The change set it builds is the one a context holding the same inserts would send (``ChangeSetBuilder``): one
/// insert batch per entity and set of properties its rows set, in the order objects were made. Each chunk stands on its
/// own: the root upserts its objects by their keys, as it does for rows of different jobs.
package struct ImportChunk {
    /// An object of the chunk, by its entity's index in the model, and where its values, destinations and flags
    /// start in the chunk's flat arrays (four arrays of its own would cost each object four allocations, each with
    /// the generic array set-up it needs).
    struct Object {
        let entity: Int
        let id: UUID
        /// The object's first attribute value in `values`.
        let attributes: Int
        /// The object's first relationship in `toOne` and `toMany`.
        let relationships: Int
        /// The object's first flag in `present` (attributes, then relationships): every object before it has a
        /// flag per attribute and per relationship.
        var flags: Int { attributes + relationships }
    }

    /// A uniqueness key as the store compares it: one value (the common case, hashed without an array) or several.
    enum Key: Hashable {
        case one(UniqueKeyValue)
        case many([UniqueKeyValue])
    }

    let entities: [Entity]
    private(set) var objects: [Object] = []
    /// Attribute values of every object, each object's together (see ``Object``).
    private var values: [AttributeValue?] = []
    /// To-one destinations of every object.
    private var toOne: [UUID?] = []
    /// To-many destinations of every object.
    private var toMany: [[UUID]] = []
    /// Per object, attribute, then relationship: whether a row set it (null and [] included).
    private var present: [Bool] = []
    /// Per entity index, the object each uniqueness key found or created.
    private var byKey: [[Key: Int]]

    package init(model: Model) {
        entities = model.entities
        byKey = Array(repeating: [:], count: model.entities.count)
    }

    /// Whether the chunk has no objects.
    package var isEmpty: Bool { objects.isEmpty }

    /// The object of entity `entity` with uniqueness key `key`, made when the chunk has none yet.
    mutating func findOrCreate(_ entity: Int, key: Key) -> Int {
        if let found = byKey[entity][key] { return found }
        let made = insert(entity)
        byKey[entity][key] = made
        return made
    }

    /// A new object of entity `entity`.
    mutating func insert(_ entity: Int) -> Int {
        let description = entities[entity]
        let attributes = description.attributes.count
        let relationships = description.relationships.count
        objects.append(
            Object(
                entity: entity, id: TimeOrderedUUID.next(), attributes: values.count, relationships: toOne.count))
        for _ in 0..<attributes { values.append(nil) }
        for _ in 0..<relationships {
            toOne.append(nil)
            toMany.append([])
        }
        for _ in 0..<(attributes + relationships) { present.append(false) }
        return objects.count - 1
    }

    mutating func setValue(_ value: AttributeValue?, of object: Int, attribute: Int) {
        values[objects[object].attributes + attribute] = value
        present[objects[object].flags + attribute] = true
    }

    mutating func setDestination(_ destination: Int?, of object: Int, relationship: Int) {
        toOne[objects[object].relationships + relationship] = destination.map { objects[$0].id }
        present[objects[object].flags + entities[objects[object].entity].attributes.count + relationship] = true
    }

    /// Replaces a to-many relationship's destinations (each once, in the order given).
    mutating func setDestinations(_ destinations: [Int], of object: Int, relationship: Int) {
        var ids: [UUID] = []
        ids.reserveCapacity(destinations.count)
        if destinations.count <= 16 {
            // A few (a pull request's reviewers): comparing costs less than a set.
            for (position, destination) in destinations.enumerated()
            where !destinations[..<position].contains(destination) {
                ids.append(objects[destination].id)
            }
        } else {
            var seen = Set<Int>()
            for destination in destinations where seen.insert(destination).inserted {
                ids.append(objects[destination].id)
            }
        }
        toMany[objects[object].relationships + relationship] = ids
        present[objects[object].flags + entities[objects[object].entity].attributes.count + relationship] = true
    }

    /// Whether rows set nothing of `object` but the attributes `attributes` (its uniqueness key).
    func setsOnly(_ attributes: [Int], of object: Int) -> Bool {
        flags(of: object).indices.allSatisfy { index in
            !present[index] || attributes.contains(index - objects[object].flags)
        }
    }

    func value(of object: Int, attribute: Int) -> AttributeValue? {
        values[objects[object].attributes + attribute]
    }

    /// An object's flags in `present`.
    private func flags(of object: Int) -> ArraySlice<Bool> {
        let description = entities[objects[object].entity]
        let start = objects[object].flags
        return present[start..<start + description.attributes.count + description.relationships.count]
    }

    /// The chunk as a change set of inserts: one entity batch per entity and set of present properties (those a row set,
    /// null and [] included: they replace what the store holds when it merges the object into one it has), in the
    /// order their first object was made.
    package func changeSet() -> Tributary_V1_ChangeSet {
        struct Group: Hashable {
            let entity: Int
            let present: ArraySlice<Bool>
        }
        var groups: [Group: [Int]] = [:]
        var order: [Group] = []
        for (index, object) in objects.enumerated() {
            let group = Group(entity: object.entity, present: flags(of: index))
            if groups[group] == nil { order.append(group) }
            groups[group, default: []].append(index)
        }
        var changeSet = Tributary_V1_ChangeSet()
        changeSet.mergePolicy = MergePolicy.error.wire
        for group in order {
            guard let members = groups[group] else { continue }
            changeSet.batches.append(batch(group.entity, present: Array(group.present), members: members))
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
                ChangeSetColumns.attribute(attribute, rows: members.count) {
                    values[objects[members[$0]].attributes + index]
                })
        }
        for (index, relationship) in entity.relationships.enumerated()
        where present[entity.attributes.count + index] {
            batch.columns.append(
                relationship.isToMany
                    ? ChangeSetColumns.toMany(relationship.name, rows: members.count) {
                        toMany[objects[members[$0]].relationships + index]
                    }
                    : ChangeSetColumns.toOne(relationship.name, rows: members.count) {
                        toOne[objects[members[$0]].relationships + index]
                    })
        }
        return batch
    }
}
