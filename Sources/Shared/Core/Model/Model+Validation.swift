extension Model {
    /// Names that the store keeps for itself on every table.
    static let reservedNames: Set<String> = ["id", "_version", "_rowid", "source", "destination"]

    func validate() throws {
        guard !entities.isEmpty else { throw ModelError(.empty, "the model has no entities") }
        var entityNames = Set<String>()
        for entity in entities {
            try Self.checkIdentifier(entity.name, what: "entity name")
            for prefix in ["tributary_", "sqlite_"] where entity.name.lowercased().hasPrefix(prefix) {
                throw ModelError(.invalidName, "entity name '\(entity.name)' uses the reserved prefix '\(prefix)'")
            }
            guard entityNames.insert(entity.name.lowercased()).inserted else {
                throw ModelError(.duplicateName, "entity '\(entity.name)' is declared twice")
            }
            try validate(entity)
        }
        try validateJoinTableNames()
    }

    /// Each to-many relationship's join table (`<Entity>_<relationship>`) needs a name no other table has.
    private func validateJoinTableNames() throws {
        var joins: [String: String] = [:]
        for entity in entities {
            for relationship in entity.relationships where relationship.isToMany {
                let owner = "'\(entity.name).\(relationship.name)'"
                let join = "\(entity.name)_\(relationship.name)"
                if join.lowercased().hasPrefix("tributary_") {
                    throw ModelError(
                        .duplicateName,
                        "the join table of \(owner) would be named '\(join)', with the prefix 'tributary_' the store keeps for its own tables; rename the entity or the relationship"
                    )
                }
                if let other = entities.first(where: { $0.name.lowercased() == join.lowercased() }) {
                    throw ModelError(
                        .duplicateName,
                        "the join table of \(owner) would be named '\(join)', like entity '\(other.name)'; rename one")
                }
                if let other = joins.updateValue(owner, forKey: join.lowercased()) {
                    throw ModelError(
                        .duplicateName,
                        "the join tables of \(other) and \(owner) would both be named '\(join)'; rename one")
                }
            }
        }
    }

    private func validate(_ entity: Entity) throws {
        var propertyNames = Set<String>()
        let properties = entity.attributes.map(\.name) + entity.relationships.map(\.name)
        for name in properties {
            try Self.checkIdentifier(name, what: "property name in entity '\(entity.name)'")
            guard !Self.reservedNames.contains(name.lowercased()) else {
                throw ModelError(.invalidName, "'\(entity.name).\(name)' uses a name the store reserves")
            }
            guard propertyNames.insert(name.lowercased()).inserted else {
                throw ModelError(.duplicateName, "'\(entity.name).\(name)' is declared twice")
            }
        }
        for relationship in entity.relationships where self.entity(named: relationship.destination) == nil {
            throw ModelError(
                .unknownDestination,
                "relationship '\(entity.name).\(relationship.name)' points to unknown entity '\(relationship.destination)'"
            )
        }
        for constraint in entity.uniqueness {
            guard !constraint.isEmpty else {
                throw ModelError(.invalidUniqueness, "entity '\(entity.name)' has an empty uniqueness constraint")
            }
            for name in constraint where entity.attribute(named: name) == nil {
                throw ModelError(
                    .invalidUniqueness,
                    "uniqueness constraint of '\(entity.name)' names '\(name)', which is not one of its attributes")
            }
        }
        try checkIndexes(of: entity)
    }

    /// Most properties one index may list.
    static let maximumIndexColumns = 8

    /// Each index lists 1 to ``maximumIndexColumns`` attributes or to-one relationships of its entity, none twice,
    /// and no two indexes list the same ones in the same order.
    private func checkIndexes(of entity: Entity) throws {
        var seen: Set<[String]> = []
        for index in entity.indexes {
            let shown = "[\(index.joined(separator: ", "))]"
            guard !index.isEmpty, index.count <= Self.maximumIndexColumns else {
                throw ModelError(
                    .invalidIndex,
                    "index \(shown) of '\(entity.name)' lists \(index.count) properties; an index lists 1 to \(Self.maximumIndexColumns)"
                )
            }
            for name in index {
                if entity.attribute(named: name) != nil { continue }
                if let relationship = entity.relationship(named: name) {
                    guard !relationship.isToMany else {
                        throw ModelError(
                            .invalidIndex,
                            "index \(shown) of '\(entity.name)' names '\(name)', a to-many relationship (its objects are in a join table, indexed already)"
                        )
                    }
                    continue
                }
                throw ModelError(
                    .invalidIndex,
                    "index \(shown) of '\(entity.name)' names '\(name)', which is not one of its attributes or to-one relationships"
                )
            }
            guard Set(index).count == index.count else {
                throw ModelError(.invalidIndex, "index \(shown) of '\(entity.name)' names a property twice")
            }
            guard seen.insert(index).inserted else {
                throw ModelError(.invalidIndex, "index \(shown) of '\(entity.name)' is declared twice")
            }
        }
    }

    /// Names become SQL identifiers and feed topics, so they are kept to letters, digits and underscores.
    static func checkIdentifier(_ name: String, what: String) throws {
        let isValid =
            !name.isEmpty && name.count <= 64
            && name.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || $0 == "_")) || ("0"..."9").contains($0)
            }
            && !("0"..."9").contains(name.unicodeScalars.first!)
        guard isValid else {
            throw ModelError(
                .invalidName,
                "\(what) '\(name)' is not an identifier (letters, digits and _, not starting with a digit, at most 64)")
        }
    }
}
