import Foundation

/// An object as in-memory predicate evaluation reads it: its attribute values, to-one destinations and to-many
/// destinations, each by index in its entity's model.
package struct PredicateSubject: Sendable {
    /// The object's id.
    package var id: UUID
    /// Attribute values by attribute index.
    package var values: [AttributeValue?]
    /// To-one destinations by relationship index (nil at to-many indexes).
    package var toOne: [UUID?]
    /// To-many destinations by relationship index (empty at to-one indexes).
    package var toMany: [[UUID]]

    package init(id: UUID, values: [AttributeValue?], toOne: [UUID?], toMany: [[UUID]]) {
        self.id = id
        self.values = values
        self.toOne = toOne
        self.toMany = toMany
    }
}

/// Finds the objects a key path reaches while a predicate is evaluated in memory: a context answers with its own
/// objects (with their unsaved changes) and the ones it loaded from its parent; nil for an object that does not
/// exist there (deleted, or never saved).
package protocol PredicateResolver {
    func subject(for id: UUID, entity: String) -> PredicateSubject?
}

/// A resolver that knows no objects: key paths reach nothing (for predicates without them).
package struct NoPredicateResolver: PredicateResolver {
    package init() {}
    package func subject(for id: UUID, entity: String) -> PredicateSubject? { nil }
}

/// A relationship a key path goes through.
package struct PredicateHop: Sendable, Hashable {
    /// The entity the relationship belongs to.
    package let source: String
    /// The relationship's name and its index in the source entity's relationships.
    package let name: String
    package let index: Int
    /// The entity it points to.
    package let destination: String
    package let isToMany: Bool
}

/// A comparison's key resolved against the model: the relationships it goes through (none for a key of the
/// fetched entity) and the property it ends in, on the last hop's destination.
struct PredicateKeyPath: Sendable {
    let hops: [PredicateHop]
    /// The property compared: an attribute, a to-one relationship or `@count` of a to-many one.
    let end: PropertyColumn

    /// Whether a hop is to-many, so the path reaches any number of values and needs ANY, ALL or NONE.
    var crossesToMany: Bool { hops.contains(where: \.isToMany) }

    /// The relationship sequences in-memory evaluation follows from the fetched object: the hops, and for `@count`
    /// and the other to-many aggregates the relationship too (its destinations count only when they exist).
    var relationshipSequence: [PredicateHop] {
        let index: Int
        let destination: String
        switch end.source {
        case .count(let countedIndex, let countedDestination):
            (index, destination) = (countedIndex, countedDestination)
        case .aggregate(let aggregate):
            (index, destination) = (aggregate.index, aggregate.destination)
        case .attribute, .toOne, .identity:
            return hops
        }
        return hops + [
            PredicateHop(source: end.table, name: end.name, index: index, destination: destination, isToMany: true)
        ]
    }

    /// The value of a path through to-one relationships for `subject`: NULL when a relationship on the way is nil
    /// (a sort key's, a group key's).
    func singleValue(of subject: PredicateSubject, resolver: any PredicateResolver) -> SQLValue {
        guard !hops.isEmpty else { return end.value(of: subject, resolver: resolver) }
        return reached(from: subject, resolver: resolver).first.map { end.value(of: $0, resolver: resolver) } ?? .null
    }

    /// The objects the hops reach from `subject`: one or none through to-one relationships, any number through
    /// to-many ones (destinations that `resolver` does not find are skipped).
    func reached(from subject: PredicateSubject, resolver: any PredicateResolver) -> [PredicateSubject] {
        var current = [subject]
        for hop in hops {
            // Each object once per step (as the SQL's sets of row keys), so fan-outs do not multiply.
            var next: [PredicateSubject] = []
            var seen = Set<UUID>()
            for object in current {
                if hop.isToMany {
                    guard object.toMany.indices.contains(hop.index) else { continue }
                    for id in object.toMany[hop.index] where seen.insert(id).inserted {
                        if let found = resolver.subject(for: id, entity: hop.destination) { next.append(found) }
                    }
                } else if object.toOne.indices.contains(hop.index), let id = object.toOne[hop.index],
                    seen.insert(id).inserted, let found = resolver.subject(for: id, entity: hop.destination)
                {
                    next.append(found)
                }
            }
            current = next
            if current.isEmpty { break }
        }
        return current
    }
}

extension PredicateLimits {
    /// The most relationships one key path goes through.
    public static let maxKeyPathHops = 8
}

extension Model {
    /// The hop through relationship `index` of `source`, and its destination entity.
    /// - Throws: ``FetchPredicateError`` of kind `unknownKey` when the destination is not in the model.
    func hop(_ index: Int, from source: Entity) throws -> (PredicateHop, Entity) {
        let relationship = source.relationships[index]
        guard let destination = entity(named: relationship.destination) else {
            throw FetchPredicateError(.unknownKey, "entity '\(relationship.destination)' is not in the model")
        }
        let hop = PredicateHop(
            source: source.name, name: relationship.name, index: index, destination: destination.name,
            isToMany: relationship.isToMany)
        return (hop, destination)
    }

    /// Resolves a comparison's key against `entity`: a key of its own (`additions`), a key path through
    /// relationships (`author.login`, `reviewers.team.name`), `@count` after a to-many relationship
    /// (`reviewers.@count`, `author.followers.@count`), or `@sum`, `@avg`, `@min` or `@max` between a to-many
    /// relationship and an attribute of its destination (`lines.@sum.amount`).
    /// - Throws: ``FetchPredicateError``: `unknownKey` naming the entity and key that does not exist, `unsupported`
    ///   for a path through an attribute or ending in a to-many relationship, `wrongType` for a function of an
    ///   attribute it does not take (`@sum` of a string), `syntax` for an operator out of place, `tooComplex` for
    ///   more than ``PredicateLimits/maxKeyPathHops`` relationships.
    func keyPath(_ key: String, from entity: Entity, use: String) throws -> PredicateKeyPath {
        var components = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !components.contains(where: \.isEmpty) else {
            throw FetchPredicateError(.syntax, "the key path \(FetchPredicateError.quoted(key)) has an empty component")
        }
        let counted = components.last == "@count"
        if counted { components.removeLast() }
        guard !components.isEmpty else {
            throw FetchPredicateError(.syntax, "@count must follow a to-many relationship: write key.@count")
        }
        // `lines.@sum.amount`: a function over an attribute of the last relationship's destinations.
        var aggregated: (function: AggregateFunction, attribute: String)?
        if !counted, components.count >= 3,
            let function = AggregateFunction(keyPathOperator: components[components.count - 2]), function != .count
        {
            aggregated = (function, components.removeLast())
            components.removeLast()
        }
        if let stray = components.first(where: { $0.hasPrefix("@") }) {
            throw Self.misplacedOperator(stray, in: key)
        }
        guard components.count - 1 <= PredicateLimits.maxKeyPathHops else {
            throw FetchPredicateError.tooComplex(
                "the key path \(FetchPredicateError.quoted(key)) goes through more than "
                    + "\(PredicateLimits.maxKeyPathHops) relationships")
        }
        var hops: [PredicateHop] = []
        var current = entity
        let last = components.removeLast()
        for component in components {
            guard let index = current.relationships.firstIndex(where: { $0.name == component }) else {
                let what = current.attributes.contains { $0.name == component } ? "an attribute" : nil
                throw FetchPredicateError(
                    what == nil ? .unknownKey : .unsupported,
                    what.map {
                        "'\(current.name).\(component)' is \($0), so the key path \(FetchPredicateError.quoted(key)) cannot go through it"
                    }
                        ?? "entity '\(current.name)' has no relationship named \(FetchPredicateError.quoted(component)) (in the key path \(FetchPredicateError.quoted(key)))"
                )
            }
            let (hop, destination) = try self.hop(index, from: current)
            hops.append(hop)
            current = destination
        }
        if let aggregated {
            let column = try aggregateColumn(aggregated.function, of: aggregated.attribute, through: last, of: current)
            return PredicateKeyPath(hops: hops, end: column)
        }
        if counted {
            guard let index = current.relationships.firstIndex(where: { $0.name == last }),
                current.relationships[index].isToMany
            else {
                throw FetchPredicateError(
                    current.attributes.contains { $0.name == last }
                        || current.relationships.contains { $0.name == last }
                        ? .unsupported : .unknownKey,
                    "@count needs a to-many relationship; '\(current.name)' has none named \(FetchPredicateError.quoted(last))"
                )
            }
            let column = PropertyColumn(
                table: current.name, name: last,
                source: .count(index: index, destination: current.relationships[index].destination))
            return PredicateKeyPath(hops: hops, end: column)
        }
        if let index = current.relationships.firstIndex(where: { $0.name == last }),
            current.relationships[index].isToMany
        {
            // `ANY reviewers == %@`: the destinations themselves, by id.
            guard hops.count < PredicateLimits.maxKeyPathHops else {
                throw FetchPredicateError.tooComplex(
                    "the key path \(FetchPredicateError.quoted(key)) goes through more than "
                        + "\(PredicateLimits.maxKeyPathHops) relationships")
            }
            let relationship = current.relationships[index]
            hops.append(
                PredicateHop(
                    source: current.name, name: relationship.name, index: index, destination: relationship.destination,
                    isToMany: true))
            return PredicateKeyPath(
                hops: hops, end: PropertyColumn(table: relationship.destination, name: last, source: .identity))
        }
        let column: PropertyColumn
        do {
            column = try current.column(forKey: last, use: use)
        } catch let error as FetchPredicateError where !hops.isEmpty && error.kind == .unknownKey {
            throw FetchPredicateError(
                .unknownKey,
                "entity '\(current.name)' has no attribute or to-one relationship named "
                    + "\(FetchPredicateError.quoted(last)) (in the key path \(FetchPredicateError.quoted(key)))")
        }
        return PredicateKeyPath(hops: hops, end: column)
    }

    /// `relationship.@function.attribute` of `owner`: the function of the destinations' attribute.
    private func aggregateColumn(
        _ function: AggregateFunction, of attributeName: String, through relationship: String, of owner: Entity
    ) throws -> PropertyColumn {
        let key = "\(relationship).\(function.keyPathOperator).\(attributeName)"
        guard let index = owner.relationships.firstIndex(where: { $0.name == relationship }),
            owner.relationships[index].isToMany
        else {
            throw FetchPredicateError(
                owner.attributes.contains { $0.name == relationship }
                    || owner.relationships.contains { $0.name == relationship } ? .unsupported : .unknownKey,
                "\(function.keyPathOperator) needs a to-many relationship; '\(owner.name)' has none named "
                    + "\(FetchPredicateError.quoted(relationship)) (in \(FetchPredicateError.quoted(key)))")
        }
        let (hop, destination) = try self.hop(index, from: owner)
        guard let attribute = destination.attributes.firstIndex(where: { $0.name == attributeName }) else {
            throw FetchPredicateError(
                .unknownKey,
                "entity '\(destination.name)' has no attribute named \(FetchPredicateError.quoted(attributeName)) "
                    + "(in \(FetchPredicateError.quoted(key)); \(function.keyPathOperator) takes an attribute of "
                    + "the destinations)")
        }
        let type = destination.attributes[attribute].type
        guard function.accepts(type) else {
            throw FetchPredicateError(
                .wrongType,
                "\(function.keyPathOperator) takes \(function.acceptedTypes); '\(destination.name).\(attributeName)' "
                    + "is a \(type.rawValue) attribute (in \(FetchPredicateError.quoted(key)))")
        }
        return PropertyColumn(
            table: owner.name, name: relationship,
            source: .aggregate(
                .init(
                    function: function, index: hop.index, destination: destination.name, attribute: attribute,
                    attributeName: attributeName, attributeType: type)))
    }

    /// The error for a key path operator where it cannot stand: `@sum` without an attribute after it, `@count`
    /// before something, an operator Tributary lacks.
    private static func misplacedOperator(_ word: String, in key: String) -> FetchPredicateError {
        guard let function = AggregateFunction(keyPathOperator: word) else {
            return FetchPredicateError(
                .unsupported, "\(word) is not supported; only @count, @sum, @avg, @min and @max are")
        }
        if function == .count {
            return FetchPredicateError(
                .syntax, "@count must end the key path \(FetchPredicateError.quoted(key)): write relationship.@count")
        }
        return FetchPredicateError(
            .syntax,
            "\(function.keyPathOperator) needs a to-many relationship before it and an attribute of its destinations "
                + "after it: write relationship.\(function.keyPathOperator).attribute, not "
                + FetchPredicateError.quoted(key))
    }
}
