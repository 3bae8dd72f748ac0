/// The value types an attribute can have, as named in the model file.
public enum AttributeType: String, Sendable, Codable, CaseIterable {
    /// Text: a `TEXT` column, `String` in Swift.
    case string
    /// A 64-bit integer: an `INTEGER` column.
    case int
    /// A double: a `REAL` column.
    case double
    /// A boolean: an `INTEGER` column holding 0 or 1.
    case bool
    /// A point in time: a `REAL` column of seconds since 1970; ISO 8601 in import rows.
    case date
    /// Bytes: a `BLOB` column; base64 in import rows.
    case data
    /// A UUID: a 16-byte `BLOB` column; its string form in import rows.
    case uuid

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
