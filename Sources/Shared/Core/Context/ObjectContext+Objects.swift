import Foundation

extension ObjectContext {
    /// Inserts a new object of `entity` with a fresh, permanent id.
    /// - Throws: ``ContextError`` when the model has no such entity.
    public func insert(_ entity: String) throws -> ManagedObject {
        assertOnQueue()
        let description = try requireEntity(entity)
        let object = ManagedObject(
            id: .make(entity: description.name), entity: description, isInserted: true, context: self)
        registered[object.objectID.uuid] = object
        insertedOrder.append(object.objectID.uuid)
        return object
    }

    /// Finds the object whose uniqueness attributes equal `key`, or inserts one with them set (find-or-create).
    ///
    /// The lookup covers this context's objects; an object that exists only in the store is found by the root
    /// when the insert is saved, and the insert becomes an update of it (the save's remaps then re-key it here).
    /// - Parameters:
    ///   - entity: the entity's name; it needs a uniqueness constraint.
    ///   - key: a value for each attribute of one of the entity's uniqueness constraints (the first constraint whose
    ///     attributes it all gives is matched; other values are set on a new object); the first constraint is looked
    ///     up in an index, others by a scan of the context's objects of the entity.
    public func findOrCreate(_ entity: String, matching key: [String: AttributeValue]) throws -> ManagedObject {
        assertOnQueue()
        let description = try requireEntity(entity)
        guard let primary = description.primaryUniqueness else {
            throw ContextError(
                .noUniqueness, "entity '\(entity)' has no uniqueness constraint to find objects by")
        }
        guard let constraint = description.uniqueness.first(where: { $0.allSatisfy { key[$0] != nil } }) else {
            let missing = primary.first { key[$0] == nil } ?? primary[0]
            let constraints =
                description.uniqueness.count == 1
                ? "its uniqueness constraint is \(primary.joined(separator: ", "))"
                : "its uniqueness constraints are "
                    + description.uniqueness.map { "[\($0.joined(separator: ", "))]" }.joined(separator: ", ")
            throw ContextError(.missingRequiredValue, "finding a '\(entity)' needs '\(missing)' (\(constraints))")
        }
        let values = constraint.map { key[$0] }
        let wanted = values.map { $0.map(UniqueKeyValue.init) }
        let isPrimary = constraint == primary
        if isPrimary {
            if let id = uniqueIndex[entity]?[wanted], let object = registered[id] { return object }
        } else {
            let indexes = constraint.compactMap { name in description.attributes.firstIndex { $0.name == name } }
            let candidates = registered.values.filter { $0.entity.name == entity && !$0.isDeleted }
            let faults = candidates.filter(\.isFault)
            if !faults.isEmpty { try loadStoredValues(of: faults) }
            for object in candidates where indexes.map({ object.values[$0].map(UniqueKeyValue.init) }) == wanted {
                return object
            }
        }
        let object = try insert(entity)
        for (name, value) in zip(constraint, values) { try object.setValue(value, for: name) }
        for (name, value) in key where !constraint.contains(name) { try object.setValue(value, for: name) }
        if let primaryKey = isPrimary ? wanted : object.uniquenessKey {
            uniqueIndex[entity, default: [:]][primaryKey] = object.objectID.uuid
        }
        return object
    }

    /// The object with `id` (Core Data's `object(with:)`): the registered one, or a fault — a stand-in that loads
    /// its stored values from the parent when a property is first read, and whose changes save as updates. This is
    /// how an id fetched in one context becomes an object in another.
    public func object(with id: ObjectID) throws -> ManagedObject {
        assertOnQueue()
        if let object = registered[id.uuid] { return object }
        let object = ManagedObject(id: id, entity: try requireEntity(id.entity), isInserted: false, context: self)
        object.isFault = true
        registered[id.uuid] = object
        return object
    }

    /// Marks an object deleted; the delete reaches the store on save. Deleting an unsaved insert forgets it.
    public func delete(_ object: ManagedObject) {
        assertOnQueue()
        let id = object.objectID.uuid
        object.isDeleted = true
        registered[id] = nil
        if object.isInserted {
            insertedOrder.removeAll { $0 == id }
        } else {
            deletedOrder.append(id)
            deletedObjects[id] = object
            if updatedSet.remove(id) != nil { updatedOrder.removeAll { $0 == id } }
        }
        for (entity, index) in uniqueIndex {
            if let key = index.first(where: { $0.value == id })?.key { uniqueIndex[entity]?[key] = nil }
        }
    }

    func requireEntity(_ name: String) throws -> Entity {
        guard let entity = model.entity(named: name) else {
            throw ContextError(.unknownEntity, "unknown entity '\(name)'")
        }
        return entity
    }
}
