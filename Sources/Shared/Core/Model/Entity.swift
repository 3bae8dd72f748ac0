/// A kind of object in the model (Core Data's `NSEntityDescription`): attributes, relationships, the uniqueness
/// constraints that make a duplicate insert an update of the existing object, and the indexes that make fetches,
/// sorts and groupings over some of its properties quick (Core Data's fetch indexes).
public struct Entity: Sendable, Hashable, Codable {
    /// The entity's name, also its table name and its change-feed topic.
    public let name: String
    /// Its attributes, in declaration order.
    public let attributes: [Attribute]
    /// Its relationships, in declaration order.
    public let relationships: [Relationship]
    /// Sets of attribute names whose combined values identify at most one object.
    public let uniqueness: [[String]]
    /// Secondary indexes: each a list of attribute and to-one relationship names, in the order the index sorts by.
    /// The store creates and drops them as the model declares them, each time it opens.
    public let indexes: [[String]]

    /// An entity as a model file declares it; ``Model/init(entities:)`` validates it.
    public init(
        name: String, attributes: [Attribute], relationships: [Relationship] = [], uniqueness: [[String]] = [],
        indexes: [[String]] = []
    ) {
        self.name = name
        self.attributes = attributes
        self.relationships = relationships
        self.uniqueness = uniqueness
        self.indexes = indexes
    }

    enum CodingKeys: String, CodingKey {
        case name, attributes, relationships, uniqueness, indexes
    }

    /// Writes the entity as a model file declares it; `indexes` only when it has some.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(attributes, forKey: .attributes)
        try container.encode(relationships, forKey: .relationships)
        try container.encode(uniqueness, forKey: .uniqueness)
        if !indexes.isEmpty { try container.encode(indexes, forKey: .indexes) }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        attributes = try container.decodeIfPresent([Attribute].self, forKey: .attributes) ?? []
        relationships = try container.decodeIfPresent([Relationship].self, forKey: .relationships) ?? []
        uniqueness = try container.decodeIfPresent([[String]].self, forKey: .uniqueness) ?? []
        indexes = try container.decodeIfPresent([[String]].self, forKey: .indexes) ?? []
    }

    /// The attribute with this name, if any.
    public func attribute(named name: String) -> Attribute? {
        attributes.first { $0.name == name }
    }

    /// The relationship with this name, if any.
    public func relationship(named name: String) -> Relationship? {
        relationships.first { $0.name == name }
    }

    /// The first uniqueness constraint: the attributes that find-or-create matches on.
    public var primaryUniqueness: [String]? { uniqueness.first }
}
