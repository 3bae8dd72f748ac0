import Foundation

/// A value a predicate compares a key with.
public enum PredicateValue: Sendable, Hashable {
    /// NULL (`nil`): only `==` (`IS NULL`) and `!=` (`IS NOT NULL`) accept it.
    case null
    /// A string.
    case string(String)
    /// A 64-bit integer.
    case int(Int64)
    /// A double.
    case double(Double)
    /// A boolean.
    case bool(Bool)
    /// A date (compared as seconds since 1970).
    case date(Date)
    /// Bytes.
    case data(Data)
    /// A UUID: a uuid attribute's value, or an object's id for a to-one relationship.
    case uuid(UUID)
    /// The values of an `IN` comparison.
    case list([PredicateValue])

    /// The name of the value's type, as error messages give it.
    var typeName: String {
        switch self {
        case .null: "nil"
        case .string: "string"
        case .int: "int"
        case .double: "double"
        case .bool: "bool"
        case .date: "date"
        case .data: "data"
        case .uuid: "uuid"
        case .list: "list"
        }
    }

    /// The type's name with its article, for messages: `an int`, `a string`.
    var typeNameWithArticle: String {
        if case .int = self { return "an int" }
        return "a \(typeName)"
    }

    /// The number of values it holds: a list's count, 1 otherwise.
    var count: Int {
        if case .list(let values) = self { return values.count }
        return 1
    }
}
