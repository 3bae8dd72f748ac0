extension Model {
    /// Resolves a prefetch key path (Core Data's `relationshipKeyPathsForPrefetching`): relationships only, to-one
    /// or to-many, from `entity` (`author`, `reviewers`, `author.team`).
    /// - Throws: ``FetchPredicateError``: `unknownKey` for a relationship the entity does not have, `unsupported`
    ///   for an attribute, `tooComplex` for a path through more than ``PredicateLimits/maxKeyPathHops``.
    package func prefetchPath(_ key: String, from entity: Entity) throws -> [PredicateHop] {
        let components = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !components.isEmpty, !components.contains(where: \.isEmpty) else {
            throw FetchPredicateError(.syntax, "the prefetch key path \(FetchPredicateError.quoted(key)) is malformed")
        }
        guard components.count <= PredicateLimits.maxKeyPathHops else {
            throw FetchPredicateError.tooComplex(
                "the prefetch key path \(FetchPredicateError.quoted(key)) goes through more than "
                    + "\(PredicateLimits.maxKeyPathHops) relationships")
        }
        var hops: [PredicateHop] = []
        var current = entity
        for component in components {
            guard let index = current.relationships.firstIndex(where: { $0.name == component }) else {
                let isAttribute = current.attributes.contains { $0.name == component }
                throw FetchPredicateError(
                    isAttribute ? .unsupported : .unknownKey,
                    isAttribute
                        ? "'\(current.name).\(component)' is an attribute; only relationships can be prefetched"
                        : "entity '\(current.name)' has no relationship named \(FetchPredicateError.quoted(component)) "
                            + "(prefetch key path \(FetchPredicateError.quoted(key)))")
            }
            let (hop, destination) = try self.hop(index, from: current)
            hops.append(hop)
            current = destination
        }
        return hops
    }
}
