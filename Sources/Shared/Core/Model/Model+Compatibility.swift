extension Model {
    /// Checks that this model can open a store created with `stored`, and lists what it adds.
    ///
    /// Additive changes are accepted: new entities, new optional attributes, new relationships. Anything that
    /// would lose or reinterpret stored data is refused.
    /// - Returns: the additions, for the store to migrate.
    /// - Throws: ``ModelError`` with code `incompatible`, listing every conflicting difference.
    package func additions(over stored: Model) throws -> ModelAdditions {
        var problems: [String] = []
        var additions = ModelAdditions()
        for old in stored.entities {
            guard let new = entity(named: old.name) else {
                problems.append("entity '\(old.name)' was removed")
                continue
            }
            for attribute in old.attributes {
                guard let current = new.attribute(named: attribute.name) else {
                    problems.append("attribute '\(old.name).\(attribute.name)' was removed")
                    continue
                }
                if current.type != attribute.type {
                    problems.append(
                        "attribute '\(old.name).\(attribute.name)' changed type from \(attribute.type.rawValue) to \(current.type.rawValue)"
                    )
                }
                if attribute.isOptional != current.isOptional {
                    // The column's NOT NULL constraint cannot change without rebuilding the table.
                    problems.append(
                        "attribute '\(old.name).\(attribute.name)' became \(current.isOptional ? "optional" : "required")"
                    )
                }
            }
            for relationship in old.relationships {
                guard let current = new.relationship(named: relationship.name) else {
                    problems.append("relationship '\(old.name).\(relationship.name)' was removed")
                    continue
                }
                // A delete rule is the root's behaviour, not the schema's: it may change freely.
                if current.destination != relationship.destination || current.isToMany != relationship.isToMany {
                    problems.append(
                        "relationship '\(old.name).\(relationship.name)' changed destination or cardinality")
                }
            }
            if Set(old.uniqueness.map { $0.sorted() }) != Set(new.uniqueness.map { $0.sorted() }) {
                problems.append("uniqueness constraints of '\(old.name)' changed")
            }
            for attribute in new.attributes where old.attribute(named: attribute.name) == nil {
                if attribute.isOptional {
                    additions.attributes.append((new, attribute))
                } else {
                    problems.append("new attribute '\(old.name).\(attribute.name)' is required; add it as optional")
                }
            }
            for relationship in new.relationships where old.relationship(named: relationship.name) == nil {
                additions.relationships.append((new, relationship))
            }
        }
        additions.entities = entities.filter { stored.entity(named: $0.name) == nil }
        guard problems.isEmpty else {
            throw ModelError(
                .incompatible, "the model is incompatible with the existing store: " + problems.joined(separator: "; "))
        }
        return additions
    }
}

/// What a newer model adds to a stored one: the schema changes the store makes when it opens.
package struct ModelAdditions {
    package var entities: [Entity] = []
    package var attributes: [(Entity, Attribute)] = []
    package var relationships: [(Entity, Relationship)] = []

    var isEmpty: Bool { entities.isEmpty && attributes.isEmpty && relationships.isEmpty }
}
