extension Model {
    /// The entities whose objects `key`'s relationships lead to from `entity` (`author.team.name`: User and Team;
    /// `reviewers.@count`: User): deleting one of their objects clears references that a commit does not list.
    package func entities(reachedBy key: String, from entity: Entity) -> Set<String> {
        var reached = Set<String>()
        var current: Entity? = entity
        for step in key.drop(while: { $0 == "#" }).split(separator: ".") where !step.hasPrefix("@") {
            guard let relationship = current?.relationship(named: String(step)) else { break }
            reached.insert(relationship.destination)
            current = self.entity(named: relationship.destination)
        }
        return reached
    }
}
