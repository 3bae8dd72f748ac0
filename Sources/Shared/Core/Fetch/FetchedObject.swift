import Foundation

/// An object as a fetch read it from the store, outside any context: its id, its version and every attribute and
/// relationship, typed by the model.
///
/// What `JobClient.fetch(_:)` answers with, for a client that prints or forwards objects rather than changing them
/// (the `tributary fetch` command). Fetch ``ManagedObject``s in an ``ObjectContext`` to read and change objects.
public struct FetchedObject: Sendable, Hashable {
    /// The object's entity and uuid.
    public let id: ObjectID
    /// The sequence number of the commit that last wrote the object.
    public let version: UInt64
    /// The object's entity: its attributes and relationships, in the model's order.
    public let entity: Entity
    /// The attributes' values by name; a NULL attribute has none.
    public let attributes: [String: AttributeValue]
    /// The destinations of the to-one relationships by name; a nil relationship has none.
    public let toOne: [String: ObjectID]
    /// The destinations of the to-many relationships by name, in the order the store keeps them; every to-many
    /// relationship of the entity has an entry, empty when it has no destination.
    public let toMany: [String: [ObjectID]]

    /// Creates an object from its parts.
    public init(
        id: ObjectID, version: UInt64, entity: Entity, attributes: [String: AttributeValue],
        toOne: [String: ObjectID], toMany: [String: [ObjectID]]
    ) {
        self.id = id
        self.version = version
        self.entity = entity
        self.attributes = attributes
        self.toOne = toOne
        self.toMany = toMany
    }
}
