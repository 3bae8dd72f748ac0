import Foundation

/// An entity type generated from a model (`tributary generate swift`): a typed view over a ``ManagedObject`` of that
/// entity, with Swift-typed properties, relationships as the destination's type, typed find-or-create and typed
/// keys for predicates and sorts. The wrapper is a view, not a copy: reading and setting its properties reads and
/// sets the object's, with the object's faulting, change tracking and merging; use it inside the context's
/// `perform` blocks, as the object.
///
/// ```swift
/// let big = try PullRequest.fetch(
///     in: context, where: PullRequest.additions >= 500 && PullRequest.merged == false,
///     sortedBy: [PullRequest.number.ascending])
/// let author = try User.findOrCreate(login: "ada", in: context)
/// big.first?.author = author
/// ```
public protocol TypedEntity {
    /// The entity's name in the model.
    static var entityName: String { get }
    /// The attributes and relationships the generated code reads and sets, with their types, so
    /// ``check(against:)`` can tell a model that changed since the code was generated.
    static var generatedProperties: [GeneratedProperty] { get }
    /// The object this wraps.
    var managedObject: ManagedObject { get }
    /// Wraps `object`, which must be of ``entityName`` (``init(_:)`` checks).
    init(unchecked object: ManagedObject)
}

/// A property of a ``TypedEntity`` as it was generated.
public struct GeneratedProperty: Sendable, Equatable {
    /// What the property is, as ``TypedEntity/check(against:)`` compares it with the model.
    public enum Kind: Sendable, Equatable {
        /// An attribute of a type, optional or required.
        case attribute(AttributeType, optional: Bool)
        /// A to-one relationship to the entity named.
        case toOne(String)
        /// A to-many relationship to the entity named.
        case toMany(String)
    }

    /// The property's name in the model.
    public let name: String
    /// What it is.
    public let kind: Kind

    /// A property `name` of `kind`, as generated code lists it.
    public init(_ name: String, _ kind: Kind) {
        self.name = name
        self.kind = kind
    }
}

extension TypedEntity {
    /// Wraps `object`.
    /// - Throws: ``ContextError`` (`wrongType`) when it is of another entity.
    public init(_ object: ManagedObject) throws {
        guard object.entity.name == Self.entityName else {
            throw ContextError(.wrongType, "\(object.objectID) is a \(object.entity.name), not a \(Self.entityName)")
        }
        self.init(unchecked: object)
    }

    /// The wrapped object's id.
    public var objectID: ObjectID { managedObject.objectID }

    /// Checks that `model` has every property this type was generated with, of the same type: call it once where the
    /// model is loaded, so a model changed since the code was generated fails there, naming what differs, rather
    /// than at a property's first use.
    /// - Throws: ``ContextError`` (`unknownEntity`, `unknownProperty` or `wrongType`) naming the difference.
    public static func check(against model: Model) throws {
        guard let entity = model.entity(named: entityName) else {
            throw ContextError(.unknownEntity, "the model has no entity '\(entityName)': regenerate the entity types")
        }
        for property in generatedProperties {
            let found: GeneratedProperty.Kind? =
                entity.attributes.first { $0.name == property.name }.map {
                    .attribute($0.type, optional: $0.isOptional)
                }
                ?? entity.relationships.first { $0.name == property.name }.map {
                    $0.isToMany ? .toMany($0.destination) : .toOne($0.destination)
                }
            guard let found else {
                throw ContextError(
                    .unknownProperty, "\(entityName).\(property.name) is not in the model: regenerate the entity types")
            }
            guard found == property.kind else {
                throw ContextError(
                    .wrongType,
                    "\(entityName).\(property.name) is \(found) in the model, \(property.kind) in the generated code: "
                        + "regenerate the entity types")
            }
        }
    }

    /// Inserts a new object of this entity into `context`.
    public static func insert(into context: ObjectContext) throws -> Self {
        Self(unchecked: try context.insert(entityName))
    }

    /// The object whose uniqueness key has these values, from the context or its parent, or a new one with them.
    public static func findOrCreate(matching key: [String: AttributeValue], in context: ObjectContext) throws -> Self {
        Self(unchecked: try context.findOrCreate(entityName, matching: key))
    }

    /// The objects of this entity that match `predicate`, in the order of `sorts` (see
    /// ``ObjectContext/fetch(_:)->[ManagedObject]``), with the relationships in `prefetching` loaded in the same round
    /// trip: `PullRequest.fetch(in: context, prefetching: [.path(PullRequest.author), .path(PullRequest.reviewers)])`.
    public static func fetch(
        in context: ObjectContext, where predicate: TypedPredicate<Self>? = nil, sortedBy sorts: [TypedSort<Self>] = [],
        limit: Int = 0, offset: Int = 0, prefetching: [TypedPrefetch<Self>] = []
    ) throws -> [Self] {
        try context.fetch(
            request(where: predicate, sortedBy: sorts, limit: limit, offset: offset, prefetching: prefetching)
        ).map(Self.init(unchecked:))
    }

    /// How many objects of this entity match `predicate`.
    public static func count(in context: ObjectContext, where predicate: TypedPredicate<Self>? = nil) throws -> Int {
        try context.count(for: request(where: predicate))
    }

    /// The fetch request of ``fetch(in:where:sortedBy:limit:offset:prefetching:)``.
    public static func request(
        where predicate: TypedPredicate<Self>? = nil, sortedBy sorts: [TypedSort<Self>] = [], limit: Int = 0,
        offset: Int = 0, prefetching: [TypedPrefetch<Self>] = []
    ) -> FetchRequest {
        FetchRequest(
            entity: entityName, predicate: predicate?.predicate, sortedBy: sorts.map(\.sort), limit: limit,
            offset: offset, prefetching: prefetching.map(\.path))
    }
}

/// A relationship key path of `Root` to prefetch with a fetch (Core Data's `relationshipKeyPathsForPrefetching`):
/// `.path(PullRequest.author)`, `.path(PullRequest.reviewers)`, `.path(PullRequest.author[User.team])`.
public struct TypedPrefetch<Root: TypedEntity>: Sendable {
    /// The key path as the untyped ``FetchRequest/relationshipKeyPathsForPrefetching`` takes it.
    public let path: String

    /// A to-one relationship, or a key path of them.
    public static func path<Destination: TypedEntity>(_ key: TypedKey<Root, Destination?>) -> Self {
        Self(path: key.name)
    }

    /// A to-many relationship (or one reached through to-one relationships).
    public static func path<Destination: TypedEntity>(_ key: TypedToManyKey<Root, Destination>) -> Self {
        Self(path: key.name)
    }
}

extension ManagedObject {
    /// A generated property's value: a required one reads ``EntityValue/unsetValue`` until set.
    public func generatedValue<Value: EntityValue>(_ name: String, as type: Value.Type = Value.self) -> Value {
        generatedOptional(name) ?? Value.unsetValue
    }

    /// A generated optional property's value.
    public func generatedOptional<Value: EntityValue>(_ name: String, as type: Value.Type = Value.self) -> Value? {
        do {
            return try value(name).flatMap(Value.init(attributeValue:))
        } catch {
            preconditionFailure("\(entity.name).\(name): \(error) (regenerate the entity types from the model)")
        }
    }

    /// Sets a generated property.
    public func setGenerated<Value: EntityValue>(_ value: Value?, _ name: String) {
        do {
            try setValue(value?.attributeValue, for: name)
        } catch {
            preconditionFailure("\(entity.name).\(name): \(error) (regenerate the entity types from the model)")
        }
    }

    /// A generated to-one relationship's destination, registered in this object's context.
    public func generatedDestination(_ name: String) -> ManagedObject? {
        do {
            guard let id = try destination(name), let context else { return nil }
            return try context.object(with: id)
        } catch {
            preconditionFailure("\(entity.name).\(name): \(error) (regenerate the entity types from the model)")
        }
    }

    /// A generated to-many relationship's destinations, registered in this object's context.
    public func generatedDestinations(_ name: String) -> [ManagedObject] {
        do {
            guard let context else { return [] }
            return try destinations(name).map { try context.object(with: $0) }
        } catch {
            preconditionFailure("\(entity.name).\(name): \(error) (regenerate the entity types from the model)")
        }
    }

    /// Sets a generated to-one relationship.
    public func setGeneratedDestination(_ object: ManagedObject?, _ name: String) {
        do {
            try setDestination(object, for: name)
        } catch {
            preconditionFailure("\(entity.name).\(name): \(error) (regenerate the entity types from the model)")
        }
    }

    /// Sets a generated to-many relationship.
    public func setGeneratedDestinations(_ objects: [ManagedObject], _ name: String) {
        do {
            try setDestinations(objects, for: name)
        } catch {
            preconditionFailure("\(entity.name).\(name): \(error) (regenerate the entity types from the model)")
        }
    }
}
