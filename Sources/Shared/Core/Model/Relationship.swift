/// A link from objects of one entity to objects of another (or the same) entity.
///
/// A to-one relationship is a column holding the destination's object id; a to-many relationship is a join table
/// `<Entity>_<relationship>(source, destination)`.
public struct Relationship: Sendable, Hashable, Codable {
    /// What deleting a source object does to the objects this relationship points to (Core Data's delete rules),
    /// applied by the root when it merges the delete.
    public enum DeleteRule: String, Sendable, Hashable, Codable, CaseIterable {
        /// The destinations stay; only the link goes (the default).
        case nullify
        /// The destinations are deleted too (and their own rules apply).
        case cascade
        /// The delete is refused while the relationship points to any object.
        case deny
    }

    /// The relationship's name.
    public let name: String
    /// The name of the destination entity.
    public let destination: String
    /// Whether it holds a set of destination objects rather than at most one.
    public let isToMany: Bool
    /// What deleting a source object does to its destinations; `"deleteRule"` in the model file.
    public let deleteRule: DeleteRule

    /// A relationship `name` to `destination`, to-one unless `isToMany`.
    public init(name: String, destination: String, isToMany: Bool = false, deleteRule: DeleteRule = .nullify) {
        self.name = name
        self.destination = destination
        self.isToMany = isToMany
        self.deleteRule = deleteRule
    }

    enum CodingKeys: String, CodingKey {
        case name, destination, deleteRule
        case isToMany = "toMany"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        destination = try container.decode(String.self, forKey: .destination)
        isToMany = try container.decodeIfPresent(Bool.self, forKey: .isToMany) ?? false
        deleteRule = try container.decodeIfPresent(DeleteRule.self, forKey: .deleteRule) ?? .nullify
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(destination, forKey: .destination)
        if isToMany { try container.encode(true, forKey: .isToMany) }
        if deleteRule != .nullify { try container.encode(deleteRule, forKey: .deleteRule) }
    }
}
