import Foundation

/// A key of a predicate or sort resolved against an entity: its column and where its value is in memory.
struct PropertyColumn: Sendable, Hashable {
    enum Source: Sendable, Hashable {
        /// An attribute: its index in `Entity.attributes` and its type.
        case attribute(index: Int, type: AttributeType)
        /// A to-one relationship: its index in `Entity.relationships` and its destination entity.
        case toOne(index: Int, destination: String)
        /// `@count` of a to-many relationship: its index in `Entity.relationships` and its destination entity.
        case count(index: Int, destination: String)
        /// The object itself, as its id: what `ANY reviewers == %@` compares.
        case identity
        /// `@sum`, `@avg`, `@min` or `@max` of an attribute of a to-many relationship's destinations
        /// (`lines.@sum.amount`).
        case aggregate(ToManyAggregate)
    }

    /// A function over one attribute of a to-many relationship's destinations.
    struct ToManyAggregate: Sendable, Hashable {
        let function: AggregateFunction
        /// The relationship's index in `Entity.relationships`, and its destination entity.
        let index: Int
        let destination: String
        /// The destination's attribute: its index, name and type.
        let attribute: Int
        let attributeName: String
        let attributeType: AttributeType

        /// The type of the function's result.
        var resultType: AttributeType { function.resultType(over: attributeType) }
    }

    /// The entity's name (its table's).
    let table: String
    /// The property's name, from the model.
    let name: String
    let source: Source
    /// What the column is qualified with in SQL: nil for the fetched entity's table as the enclosing query names it
    /// (attributes then go unqualified), or the alias of a table joined on a key path's way.
    var qualifier: String?

    /// The table (or alias) the property is read from.
    private var owner: String { qualifier ?? SQLText.quote(table) }

    /// The property's value in SQL, from the model's (validated) names, never from the input: the quoted column of
    /// an attribute; for a to-one relationship, the destination's 16-byte id (the column holds its row key); for
    /// `@count`, the number of the relationship's join rows.
    var sql: String {
        switch source {
        case .attribute: qualifier.map { "\($0).\(SQLText.quote(name))" } ?? SQLText.quote(name)
        case .toOne(_, let destination):
            SQLText.toOneID(owner: owner, relationship: name, destination: destination)
        case .identity:
            "\(owner).\"id\""
        case .count:
            "(SELECT COUNT(*) FROM \(SQLText.quote(SQLText.joinTable(table, name))) AS \"tributary_c\" "
                + "WHERE \"tributary_c\".source = \(owner).\(SQLText.rowKey))"
        case .aggregate(let aggregate):
            aggregateSQL(aggregate)
        }
    }

    /// The function over the destinations' attribute: a subquery joining the relationship's join table to the
    /// destination's table. A sum of no values is 0, as Core Data's `@sum` is.
    private func aggregateSQL(_ aggregate: ToManyAggregate) -> String {
        let value = aggregate.function.sql(of: "\"tributary_v\".\(SQLText.quote(aggregate.attributeName))")
        return "(SELECT \(value) FROM "
            + "\(SQLText.quote(SQLText.joinTable(table, name))) AS \"tributary_c\" JOIN "
            + "\(SQLText.quote(aggregate.destination)) AS \"tributary_v\" ON \"tributary_v\".\(SQLText.rowKey) = "
            + "\"tributary_c\".destination WHERE \"tributary_c\".source = \(owner).\(SQLText.rowKey))"
    }

    /// The column itself, qualified by its table: for a to-one relationship, the one holding its destination's
    /// row key.
    var columnSQL: String { "\(owner).\(SQLText.quote(name))" }

    /// The row key of the row the property is read from, qualified by its table.
    var rowKeySQL: String { "\(owner).\(SQLText.rowKey)" }

    /// Whether the property is a to-one relationship.
    var isToOne: Bool {
        if case .toOne = source { return true }
        return false
    }

    /// Whether the column holds strings.
    var isString: Bool { valueType == .string }

    /// The type of the property's values as a predicate compares them: an attribute's type, an int for `@count`, a
    /// to-many aggregate's result type; nil for relationships.
    var valueType: AttributeType? {
        switch source {
        case .attribute(_, let type): type
        case .count: .int
        case .aggregate(let aggregate): aggregate.resultType
        case .toOne, .identity: nil
        }
    }

    /// The name error messages give the property: `login`, `reviewers.@count`.
    var displayName: String {
        if case .count = source { return "\(name).@count" }
        if case .identity = source { return "\(name) (the object)" }
        if case .aggregate(let aggregate) = source {
            return "\(name).\(aggregate.function.keyPathOperator).\(aggregate.attributeName)"
        }
        return name
    }

    /// How error messages name the property's type: `int attribute`, `to-one relationship`.
    var typeDescription: String {
        switch source {
        case .attribute(_, let type): "\(type.rawValue) attribute"
        case .toOne: "to-one relationship"
        case .count: "count of a to-many relationship"
        case .identity: "to-many relationship"
        case .aggregate(let aggregate):
            "\(aggregate.resultType.rawValue) \(aggregate.function.keyPathOperator) of a to-many relationship"
        }
    }

    /// The value SQLite holds for this property of an object whose attribute values are `values` (by attribute
    /// index) and to-one destinations are `toOne` (by relationship index). Missing entries are NULL; so are `@count`
    /// and the object's own id, which only ``value(of:resolver:)`` knows.
    func value(values: [AttributeValue?], toOne: [UUID?]) -> SQLValue {
        switch source {
        case .attribute(let index, let type):
            return values.indices.contains(index) ? SQLValue(values[index], columnType: type) : .null
        case .toOne(let index, _):
            return toOne.indices.contains(index) ? SQLValue(toOne[index]) : .null
        case .count, .identity, .aggregate:
            return .null
        }
    }

    /// The value of this property of `subject`; `@count` counts the destinations `resolver` finds (an object
    /// deleted in a context no longer counts).
    func value(of subject: PredicateSubject, resolver: any PredicateResolver) -> SQLValue {
        if case .identity = source { return SQLValue(subject.id) }
        if case .aggregate(let aggregate) = source { return value(of: aggregate, subject, resolver: resolver) }
        guard case .count(let index, let destination) = source else {
            return value(values: subject.values, toOne: subject.toOne)
        }
        guard subject.toMany.indices.contains(index) else { return .integer(0) }
        return .integer(
            Int64(subject.toMany[index].count(where: { resolver.subject(for: $0, entity: destination) != nil })))
    }

    /// The function over the attribute of the destinations `resolver` finds; NULL for a sum of ints that overflows
    /// (the store refuses such a fetch).
    private func value(of aggregate: ToManyAggregate, _ subject: PredicateSubject, resolver: any PredicateResolver)
        -> SQLValue
    {
        guard subject.toMany.indices.contains(aggregate.index) else {
            return aggregate.function == .sum ? (aggregate.attributeType == .int ? .integer(0) : .real(0)) : .null
        }
        let values = subject.toMany[aggregate.index].lazy.compactMap {
            resolver.subject(for: $0, entity: aggregate.destination)
        }.map { destination -> SQLValue in
            destination.values.indices.contains(aggregate.attribute)
                ? SQLValue(destination.values[aggregate.attribute], columnType: aggregate.attributeType) : .null
        }
        return (try? aggregate.function.apply(to: values, type: aggregate.attributeType)) ?? .null
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
                    "'\(name).\(key)' is a to-many relationship and cannot be \(use) itself; compare "
                        + "\(key).@count, or a key of its destinations with ANY, ALL or NONE (ANY \(key).name == ...)")
            }
            return PropertyColumn(
                table: name, name: relationships[index].name,
                source: .toOne(index: index, destination: relationships[index].destination))
        }
        if key.contains(".") {
            throw FetchPredicateError(
                .unsupported,
                "key paths such as \(FetchPredicateError.quoted(key)) cannot be \(use) here: only the entity's own "
                    + "attributes and to-one relationships can")
        }
        throw FetchPredicateError(
            .unknownKey,
            "entity '\(name)' has no attribute or to-one relationship named \(FetchPredicateError.quoted(key))")
    }
}
