/// A link from objects of one entity to objects of another (or the same) entity.
///
/// A to-one relationship is a column holding the destination's object id; a to-many relationship is a join table
/// `<Entity>_<relationship>(source, destination)`.
public struct Relationship: Sendable, Hashable, Codable {
    /// The relationship's name.
    public let name: String
    /// The name of the destination entity.
    public let destination: String
    /// Whether it holds a set of destination objects rather than at most one.
    public let isToMany: Bool

    public init(name: String, destination: String, isToMany: Bool = false) {
        self.name = name
        self.destination = destination
        self.isToMany = isToMany
    }

    enum CodingKeys: String, CodingKey {
        case name, destination
        case isToMany = "toMany"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        destination = try container.decode(String.self, forKey: .destination)
        isToMany = try container.decodeIfPresent(Bool.self, forKey: .isToMany) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(destination, forKey: .destination)
        if isToMany { try container.encode(true, forKey: .isToMany) }
    }
}
