import Foundation

/// The object model (Core Data's `NSManagedObjectModel`): the entities of a store, loaded from a model file.
///
/// ```swift
/// let model = try Model.load(contentsOf: URL(fileURLWithPath: "model.json"))
/// let user = model.entity(named: "User")
/// ```
public struct Model: Sendable, Hashable, Codable {
    /// The entities, in declaration order.
    public let entities: [Entity]

    /// Creates and validates a model.
    /// - Throws: ``ModelError`` when a name is invalid or repeated, a destination or uniqueness attribute is
    ///   unknown, or there are no entities.
    public init(entities: [Entity]) throws {
        self.entities = entities
        try validate()
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(entities: container.decode([Entity].self, forKey: .entities))
    }

    /// The entity with this name, if any.
    public func entity(named name: String) -> Entity? {
        entities.first { $0.name == name }
    }

    /// The entity with this name.
    /// - Throws: ``ModelError`` naming the entity when the model has none by that name.
    public func requireEntity(named name: String) throws -> Entity {
        guard let entity = entity(named: name) else {
            let known = entities.map(\.name).joined(separator: ", ")
            throw ModelError(.unknownDestination, "unknown entity '\(name)' (the model has \(known))")
        }
        return entity
    }
}
