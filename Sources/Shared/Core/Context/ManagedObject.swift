import Foundation

/// An object registered in one ``ObjectContext`` (Core Data's `NSManagedObject`).
///
/// An object belongs to its context's queue: read and change it only inside that context's `perform` blocks.
/// Values are typed by the entity's attributes; relationships hold object ids.
public final class ManagedObject {
    /// The object's permanent id (it changes only if the root merges this insert into an existing object).
    public internal(set) var objectID: ObjectID
    /// The object's entity.
    public let entity: Entity
    /// Whether the object was inserted since the context's last save.
    public internal(set) var isInserted: Bool
    /// Whether the object was deleted since the context's last save.
    public internal(set) var isDeleted = false
    /// The store version the context last read or saved the object at (the sequence number of the commit that
    /// last wrote it); 0 when unknown, and then its saves are not checked for conflicts. See ``MergePolicy``.
    public package(set) var version: UInt64 = 0
    /// Whether the object is a stand-in whose stored values were not loaded (Core Data's fault): made by
    /// ``ObjectContext/object(with:)`` for an object the context did not hold. Reading a property loads them
    /// from the context's parent once; setting one does not (the change saves as an update either way).
    public internal(set) var isFault = false

    weak var context: ObjectContext?
    /// Attribute values by attribute index; nil is NULL or never set.
    var values: [AttributeValue?]
    /// To-one destinations by relationship index (unused for to-many slots).
    var toOne: [UUID?]
    /// To-many destinations by relationship index (unused for to-one slots).
    var toMany: [[UUID]]
    /// Which properties changed since the last save: attributes first, then relationships.
    var changed: [Bool]
    /// The values as last saved or merged, taken before the first unsaved change, for ``ObjectContext/rollback()``.
    var committed: (values: [AttributeValue?], toOne: [UUID?], toMany: [[UUID]])?

    init(id: ObjectID, entity: Entity, isInserted: Bool, context: ObjectContext) {
        self.objectID = id
        self.entity = entity
        self.isInserted = isInserted
        self.context = context
        values = Array(repeating: nil, count: entity.attributes.count)
        toOne = Array(repeating: nil, count: entity.relationships.count)
        toMany = Array(repeating: [], count: entity.relationships.count)
        changed = Array(repeating: false, count: entity.attributes.count + entity.relationships.count)
    }

    /// The values of the entity's first uniqueness constraint (what find-or-create looks objects up by), or nil
    /// when the entity has none or one of them is not set.
    var uniquenessKey: [UniqueKeyValue?]? {
        guard let constraint = entity.primaryUniqueness else { return nil }
        let key = constraint.map { name in
            entity.attributes.firstIndex { $0.name == name }.flatMap { values[$0] }.map(UniqueKeyValue.init)
        }
        return key.contains { $0 == nil } ? nil : key
    }

    /// Whether any property changed since the last save.
    public var hasChanges: Bool { isInserted || isDeleted || changed.contains(true) }

    // MARK: - Attributes

    /// The value of an attribute, nil when NULL. Reading a fault loads its stored values first.
    /// - Throws: ``ContextError`` for an unknown attribute; what the parent's fetch threw when loading a fault.
    public func value(_ name: String) throws -> AttributeValue? {
        let index = try attributeIndex(name)
        try fulfillFault()
        return values[index]
    }

    /// Loads a fault's stored values from its context's parent.
    func fulfillFault() throws {
        guard isFault, let context else { return }
        try context.loadStoredValues(of: [self])
    }

    /// Sets an attribute, checking the value's type.
    /// - Throws: ``ContextError`` when the entity has no such attribute or the type differs.
    public func setValue(_ value: AttributeValue?, for name: String) throws {
        try setValue(value, at: attributeIndex(name))
    }

    /// Sets the attribute at `index` of the entity's attributes (the import fast path).
    func setValue(_ value: AttributeValue?, at index: Int) throws {
        let attribute = entity.attributes[index]
        if let value, value.type != attribute.type {
            throw ContextError(
                .wrongType,
                "'\(entity.name).\(attribute.name)' is \(attribute.type.rawValue), not \(value.type.rawValue)")
        }
        guard values[index] != value else {
            markSetOnInsert(index)
            return
        }
        willChange()
        values[index] = value
        markChanged(index)
    }

    /// Subscript access by attribute name; setting a wrong type traps, so prefer ``setValue(_:for:)`` for input.
    public subscript(name: String) -> AttributeValue? {
        get { (try? value(name)) ?? nil }
        set {
            do { try setValue(newValue, for: name) } catch { preconditionFailure("\(error)") }
        }
    }

    // MARK: - Relationships

    /// The destination of a to-one relationship.
    public func destination(_ name: String) throws -> ObjectID? {
        let (index, relationship) = try relationshipIndex(name, toMany: false)
        try fulfillFault()
        return toOne[index].map { ObjectID(entity: relationship.destination, uuid: $0) }
    }

    /// The destinations of a to-many relationship.
    public func destinations(_ name: String) throws -> [ObjectID] {
        let (index, relationship) = try relationshipIndex(name, toMany: true)
        try fulfillFault()
        return toMany[index].map { ObjectID(entity: relationship.destination, uuid: $0) }
    }

    /// Points a to-one relationship at `object` (or clears it).
    public func setDestination(_ object: ManagedObject?, for name: String) throws {
        let (index, relationship) = try relationshipIndex(name, toMany: false)
        if let object, object.entity.name != relationship.destination {
            throw ContextError(
                .wrongType, "'\(entity.name).\(name)' points to \(relationship.destination), not \(object.entity.name)")
        }
        let id = object?.objectID.uuid
        guard toOne[index] != id else {
            markSetOnInsert(entity.attributes.count + index)
            return
        }
        willChange()
        toOne[index] = id
        markChanged(entity.attributes.count + index)
    }

    /// Replaces the destinations of a to-many relationship.
    public func setDestinations(_ objects: [ManagedObject], for name: String) throws {
        let (index, relationship) = try relationshipIndex(name, toMany: true)
        if let wrong = objects.first(where: { $0.entity.name != relationship.destination }) {
            throw ContextError(
                .wrongType, "'\(entity.name).\(name)' holds \(relationship.destination), not \(wrong.entity.name)")
        }
        var seen = Set<UUID>()
        let ids = objects.map(\.objectID.uuid).filter { seen.insert($0).inserted }
        guard toMany[index] != ids else {
            markSetOnInsert(entity.attributes.count + index)
            return
        }
        willChange()
        toMany[index] = ids
        markChanged(entity.attributes.count + index)
    }

    // MARK: - Helpers

    /// Keeps the saved values before an object that exists in the store gets its first unsaved change.
    func willChange() {
        if !isInserted && committed == nil { committed = (values, toOne, toMany) }
    }

    /// Puts back the saved values and forgets the unsaved changes.
    func revertToCommitted() {
        if let committed { (values, toOne, toMany) = committed }
        committed = nil
        changed = Array(repeating: false, count: changed.count)
    }

    /// An inserted object's insert writes every property that was set, nil and empty included (the store may
    /// merge it into an object it has, by a uniqueness constraint): setting one to the value it has still marks it.
    private func markSetOnInsert(_ property: Int) {
        if isInserted { changed[property] = true }
    }

    func markChanged(_ property: Int) {
        changed[property] = true
        if !isInserted { context?.registerUpdate(self) }
    }

    private func attributeIndex(_ name: String) throws -> Int {
        guard let index = entity.attributes.firstIndex(where: { $0.name == name }) else {
            throw ContextError(.unknownProperty, "entity '\(entity.name)' has no attribute '\(name)'")
        }
        return index
    }

    private func relationshipIndex(_ name: String, toMany: Bool) throws -> (Int, Relationship) {
        guard let index = entity.relationships.firstIndex(where: { $0.name == name }) else {
            throw ContextError(.unknownProperty, "entity '\(entity.name)' has no relationship '\(name)'")
        }
        let relationship = entity.relationships[index]
        guard relationship.isToMany == toMany else {
            throw ContextError(
                .wrongType, "'\(entity.name).\(name)' is a \(relationship.isToMany ? "to-many" : "to-one") relationship"
            )
        }
        return (index, relationship)
    }
}
