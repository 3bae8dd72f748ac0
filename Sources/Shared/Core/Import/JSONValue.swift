/// A JSON value as read from an NDJSON row by ``JSONParser``, keeping booleans, integers and other numbers apart so
/// that type errors can be named precisely.
enum JSONValue: Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

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

/// A JSON object's members in the order the row wrote them; keys are unique (the parser refuses a repeated one).
///
/// Rows are small objects read once: keeping members in an array and finding a key by comparing strings costs
/// less than hashing every key into a dictionary, which was the largest part of an import worker's parsing.
struct JSONObject: Equatable, ExpressibleByDictionaryLiteral {
    /// The keys, in order.
    private(set) var keys: [String] = []
    /// The values, in the order of their keys.
    private(set) var values: [JSONValue] = []

    init() {}

    init(dictionaryLiteral elements: (String, JSONValue)...) {
        keys = elements.map(\.0)
        values = elements.map(\.1)
    }

    /// The value of member `key`, or nil when the object has none.
    subscript(key: String) -> JSONValue? {
        keys.firstIndex(of: key).map { values[$0] }
    }

    /// Makes room for `count` members (growing one member at a time reallocated both arrays several times per row).
    mutating func reserveCapacity(_ count: Int) {
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
    }

    mutating func append(_ key: String, _ value: JSONValue) {
        keys.append(key)
        values.append(value)
    }

    /// Equal when both have the same keys with equal values, in any order (as JSON objects are).
    static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.keys.count == rhs.keys.count && zip(lhs.keys, lhs.values).allSatisfy { rhs[$0.0] == $0.1 }
    }
}
