import Foundation
import TributaryCore

/// A column of the table `tributary fetch` and `tributary watch` print: a key path from the fetched entity through
/// to-one relationships to an attribute (its value), a to-one relationship (its destination's id) or a to-many one
/// (its count: `reviewers` or `reviewers.@count`).
public struct ObjectColumn: Sendable, Equatable {
    /// What the key path's last step reads.
    public enum Ending: Sendable, Equatable {
        /// An attribute's value, of this type.
        case attribute(AttributeType)
        /// A to-one relationship's destination id.
        case destination
        /// A to-many relationship's number of destinations.
        case count
    }

    /// The key path as the user wrote it, also the column's header.
    public let key: String
    /// The to-one relationships the key path goes through before its last step.
    public let hops: [String]
    /// The last step's property.
    public let property: String
    /// What the last step reads.
    public let ending: Ending

    /// Whether the column holds numbers, which are aligned right.
    public var isNumeric: Bool {
        switch ending {
        case .count, .attribute(.int), .attribute(.double): true
        default: false
        }
    }

    /// The to-one relationship paths a fetch must prefetch for the column's values: `author`, `author.team` for
    /// `author.team.name`.
    public var prefetchPaths: [String] {
        (0..<hops.count).map { hops[...($0)].joined(separator: ".") }
    }

    /// Parses `key` against `entity`.
    /// - Throws: `ObjectColumnError` naming the step that is not a property, or a to-many relationship gone through.
    public init(_ key: String, entity: Entity, model: Model) throws {
        var steps = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let counted = steps.count > 1 && steps.last == "@count"
        if counted { steps.removeLast() }
        let last = steps.removeLast()
        var current = entity
        for (index, step) in steps.enumerated() {
            guard let relationship = current.relationship(named: step) else {
                throw ObjectColumnError(
                    "--columns: entity '\(current.name)' has no relationship named '\(step)' (in '\(key)')")
            }
            guard !relationship.isToMany else {
                throw ObjectColumnError(
                    "--columns: '\(key)' goes through the to-many relationship '\(step)'; a column's key path goes "
                        + "through to-one relationships (its count: \(steps[...index].joined(separator: ".")).@count)")
            }
            guard let destination = model.entity(named: relationship.destination) else {
                throw ObjectColumnError("--columns: no entity '\(relationship.destination)' in the model")
            }
            current = destination
        }
        let ending: Ending
        if let attribute = current.attribute(named: last) {
            guard !counted else {
                throw ObjectColumnError(
                    "--columns: '\(key)': @count follows a to-many relationship; '\(last)' is an attribute")
            }
            ending = .attribute(attribute.type)
        } else if let relationship = current.relationship(named: last) {
            guard relationship.isToMany || !counted else {
                throw ObjectColumnError(
                    "--columns: '\(key)': @count follows a to-many relationship; '\(last)' is to-one")
            }
            ending = relationship.isToMany ? .count : .destination
        } else {
            throw ObjectColumnError(
                "--columns: entity '\(current.name)' has no attribute or relationship named '\(last)' (in '\(key)')")
        }
        self.init(key: key, hops: steps, property: last, ending: ending)
    }

    private init(key: String, hops: [String], property: String, ending: Ending) {
        self.key = key
        self.hops = hops
        self.property = property
        self.ending = ending
    }

    /// The columns `--columns` names (comma-separated), or without it the entity's own: its attributes in the
    /// model's order, then for each to-one relationship its destination's key (`author.login` when `User` is unique
    /// by `login` alone) or else its id, then each to-many relationship's count.
    public static func columns(_ list: String?, entity: Entity, model: Model) throws -> [ObjectColumn] {
        if let list {
            let keys = list.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard !keys.contains(where: \.isEmpty) else {
                throw ObjectColumnError("--columns takes comma-separated key paths; '\(list)' has an empty one")
            }
            return try keys.map { try ObjectColumn($0, entity: entity, model: model) }
        }
        return try defaultKeys(entity: entity, model: model).map { try ObjectColumn($0, entity: entity, model: model) }
    }

    /// The keys of the default columns (see ``columns(_:entity:model:)``).
    public static func defaultKeys(entity: Entity, model: Model) -> [String] {
        var keys = entity.attributes.map(\.name)
        for relationship in entity.relationships where !relationship.isToMany {
            let destination = model.entity(named: relationship.destination)
            let unique = destination?.uniqueness.first { $0.count == 1 }?.first
            keys.append(unique.map { "\(relationship.name).\($0)" } ?? relationship.name)
        }
        for relationship in entity.relationships where relationship.isToMany {
            keys.append("\(relationship.name).@count")
        }
        return keys
    }

    /// The column's text for `row`: empty for NULL and where a relationship on the way is nil.
    public func cell<Row: TableRow>(_ row: Row) -> String {
        var current: Row? = row
        for hop in hops { current = current?.destination(hop) }
        guard let current else { return "" }
        switch ending {
        case .attribute: return current.value(property).map(ObjectTable.text) ?? ""
        case .destination: return current.destinationID(property).map(ObjectText.id) ?? ""
        case .count: return String(current.count(property))
        }
    }
}

/// A `--columns` key path the model does not have, or one a column cannot read.
public struct ObjectColumnError: Error, CustomStringConvertible {
    /// What is wrong, naming the key path.
    public let description: String

    init(_ description: String) { self.description = description }
}

/// An object as a table's columns read it.
public protocol TableRow {
    /// An attribute's value; nil for NULL.
    func value(_ attribute: String) -> AttributeValue?
    /// A to-one relationship's destination id; nil when it has none.
    func destinationID(_ relationship: String) -> ObjectID?
    /// A to-one relationship's destination as a row; nil when it has none or it is not at hand.
    func destination(_ relationship: String) -> Self?
    /// A to-many relationship's number of destinations.
    func count(_ relationship: String) -> Int
}

/// A fetched object and the objects its fetch prefetched, by id, so that key paths through to-one relationships
/// reach their values.
public struct FetchedRow: TableRow {
    /// The object.
    public let object: FetchedObject
    /// The prefetched objects by id.
    public let reached: [ObjectID: FetchedObject]

    /// A row for `object`, whose key paths read from `reached`.
    public init(_ object: FetchedObject, reached: [ObjectID: FetchedObject]) {
        self.object = object
        self.reached = reached
    }

    public func value(_ attribute: String) -> AttributeValue? { object.attributes[attribute] }
    public func destinationID(_ relationship: String) -> ObjectID? { object.toOne[relationship] }
    public func destination(_ relationship: String) -> FetchedRow? {
        object.toOne[relationship].flatMap { reached[$0] }.map { FetchedRow($0, reached: reached) }
    }
    public func count(_ relationship: String) -> Int { object.toMany[relationship]?.count ?? 0 }
}

/// An object a context holds, read on its queue; a destination the context does not hold is fetched from its
/// parent.
public struct HeldRow: TableRow {
    /// The object.
    public let object: ManagedObject
    /// Its context.
    public let context: ObjectContext

    /// A row for `object` of `context`.
    public init(_ object: ManagedObject, in context: ObjectContext) {
        self.object = object
        self.context = context
    }

    public func value(_ attribute: String) -> AttributeValue? { object[attribute] }
    public func destinationID(_ relationship: String) -> ObjectID? { try? object.destination(relationship) }
    public func destination(_ relationship: String) -> HeldRow? {
        guard let id = destinationID(relationship), let destination = try? context.object(with: id) else { return nil }
        return HeldRow(destination, in: context)
    }
    public func count(_ relationship: String) -> Int { (try? object.destinations(relationship).count) ?? 0 }
}
