import Foundation

/// A non-null value of an attribute; `nil` stands for NULL wherever a value is optional.
public enum AttributeValue: Sendable, Hashable, CustomStringConvertible {
    /// A value of a ``AttributeType/string`` attribute.
    case string(String)
    /// A value of an ``AttributeType/int`` attribute.
    case int(Int64)
    /// A value of a ``AttributeType/double`` attribute.
    case double(Double)
    /// A value of a ``AttributeType/bool`` attribute.
    case bool(Bool)
    /// A value of a ``AttributeType/date`` attribute.
    case date(Date)
    /// A value of a ``AttributeType/data`` attribute.
    case data(Data)
    /// A value of a ``AttributeType/uuid`` attribute.
    case uuid(UUID)

    /// The attribute type this value belongs to.
    public var type: AttributeType {
        switch self {
        case .string: .string
        case .int: .int
        case .double: .double
        case .bool: .bool
        case .date: .date
        case .data: .data
        case .uuid: .uuid
        }
    }

    public var description: String {
        switch self {
        case .string(let value): value
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .bool(let value): String(value)
        case .date(let value): value.formatted(.iso8601)
        case .data(let value): value.base64EncodedString()
        case .uuid(let value): value.uuidString.lowercased()
        }
    }
}
