/// A typed property of an entity, stored as a column of the entity's table.
public struct Attribute: Sendable, Hashable, Codable {
    /// The attribute's name, also its column name.
    public let name: String
    /// Its value type.
    public let type: AttributeType
    /// Whether objects may leave it unset (NULL). Required attributes must be set when an object is inserted.
    public let isOptional: Bool

    /// An attribute `name` of `type`, required unless `isOptional`.
    public init(name: String, type: AttributeType, isOptional: Bool = false) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
    }

    enum CodingKeys: String, CodingKey {
        case name, type
        case isOptional = "optional"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        let typeName = try container.decode(String.self, forKey: .type)
        guard let type = AttributeType(rawValue: typeName) else {
            let known = AttributeType.allCases.map(\.rawValue).joined(separator: ", ")
            throw ModelError(
                .unknownType, "attribute '\(name)' has unknown type '\(typeName)' (expected one of \(known))")
        }
        self.type = type
        isOptional = try container.decodeIfPresent(Bool.self, forKey: .isOptional) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(type.rawValue, forKey: .type)
        if isOptional { try container.encode(true, forKey: .isOptional) }
    }
}
