import Foundation

/// A key of a predicate or sort resolved against an entity: its column and where its value is in memory.
struct PropertyColumn: Sendable, Hashable {
    enum Source: Sendable, Hashable {
        /// An attribute: its index in `Entity.attributes` and its type.
        case attribute(index: Int, type: AttributeType)
        /// A to-one relationship: its index in `Entity.relationships` and its destination entity.
        case toOne(index: Int, destination: String)
    }

    /// The entity's name (its table's).
    let table: String
    /// The property's name, from the model.
    let name: String
    let source: Source

    /// The property's value in SQL, from the model's (validated) names, never from the input: the quoted column of
    /// an attribute; for a to-one relationship, the destination's 16-byte id (the column holds its row key).
    var sql: String {
        switch source {
        case .attribute: SQLText.quote(name)
        case .toOne(_, let destination): SQLText.toOneID(table: table, relationship: name, destination: destination)
        }
    }

    /// The column itself, qualified by its table: for a to-one relationship, the one holding its destination's
    /// row key.
    var columnSQL: String { "\(SQLText.quote(table)).\(SQLText.quote(name))" }

    /// Whether the property is a to-one relationship.
    var isToOne: Bool {
        if case .toOne = source { return true }
        return false
    }

    /// Whether the column holds strings.
    var isString: Bool {
        if case .attribute(_, .string) = source { return true }
        return false
    }

    /// How error messages name the property's type: `int attribute`, `to-one relationship`.
    var typeDescription: String {
        switch source {
        case .attribute(_, let type): "\(type.rawValue) attribute"
        case .toOne: "to-one relationship"
        }
    }

    /// The value SQLite holds for this property of an object whose attribute values are `values` (by attribute
    /// index) and to-one destinations are `toOne` (by relationship index). Missing entries are NULL.
    func value(values: [AttributeValue?], toOne: [UUID?]) -> SQLValue {
        switch source {
        case .attribute(let index, let type):
            return values.indices.contains(index) ? SQLValue(values[index], columnType: type) : .null
        case .toOne(let index, _):
            return toOne.indices.contains(index) ? SQLValue(toOne[index]) : .null
        }
    }
}

extension Entity {
    /// Resolves a predicate or sort key to an attribute or to-one relationship of this entity.
    /// - Parameter use: what is done with the key, for messages: `compared`, `sorted by`.
    /// - Throws: ``FetchPredicateError``: `unsupported` for key paths and to-many relationships, `unknownKey` otherwise.
    func column(forKey key: String, use: String) throws -> PropertyColumn {
        if let index = attributes.firstIndex(where: { $0.name == key }) {
            return PropertyColumn(
                table: name, name: attributes[index].name,
                source: .attribute(index: index, type: attributes[index].type))
        }
        if let index = relationships.firstIndex(where: { $0.name == key }) {
            guard !relationships[index].isToMany else {
                throw FetchPredicateError(
                    .unsupported,
                    "'\(name).\(key)' is a to-many relationship and cannot be \(use); only attributes and to-one "
                        + "relationships can")
            }
            return PropertyColumn(
                table: name, name: relationships[index].name,
                source: .toOne(index: index, destination: relationships[index].destination))
        }
        if key.contains(".") {
            throw FetchPredicateError(
                .unsupported,
                "key paths such as \(FetchPredicateError.quoted(key)) are not supported: only the fetched entity's own "
                    + "attributes and to-one relationships can be \(use)")
        }
        throw FetchPredicateError(
            .unknownKey,
            "entity '\(name)' has no attribute or to-one relationship named \(FetchPredicateError.quoted(key))")
    }
}
