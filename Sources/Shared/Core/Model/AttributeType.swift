/// The value types an attribute can have, as named in the model file.
public enum AttributeType: String, Sendable, Codable, CaseIterable {
    case string, int, double, bool, date, data, uuid

    /// The SQLite column type the store uses for this attribute.
    package var sqlType: String {
        switch self {
        case .string: "TEXT"
        case .int, .bool: "INTEGER"
        case .double, .date: "REAL"
        case .data, .uuid: "BLOB"
        }
    }
}
