import Foundation

/// A JSON value as read from an NDJSON row by ``JSONParser``, keeping booleans, integers and other numbers apart so
/// that type errors can be named precisely.
enum JSONValue: Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// A word for error messages: "a string", "an integer", ...
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int: "an integer"
        case .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
