import Foundation

/// A Swift value that can fill a placeholder of a predicate format string or stand on the right of a ``Key``
/// comparison.
public protocol PredicateArgument: Sendable {
    /// The value the predicate compares with.
    var predicateValue: PredicateValue { get }
}

extension PredicateValue: PredicateArgument {
    /// The value itself.
    public var predicateValue: PredicateValue { self }
}

extension String: PredicateArgument {
    /// A string value.
    public var predicateValue: PredicateValue { .string(self) }
}

extension Substring: PredicateArgument {
    /// A string value.
    public var predicateValue: PredicateValue { .string(String(self)) }
}

extension Int: PredicateArgument {
    /// An integer value.
    public var predicateValue: PredicateValue { .int(Int64(self)) }
}

extension Int64: PredicateArgument {
    /// An integer value.
    public var predicateValue: PredicateValue { .int(self) }
}

extension Int32: PredicateArgument {
    /// An integer value.
    public var predicateValue: PredicateValue { .int(Int64(self)) }
}

extension Double: PredicateArgument {
    /// A double value.
    public var predicateValue: PredicateValue { .double(self) }
}

extension Float: PredicateArgument {
    /// A double value.
    public var predicateValue: PredicateValue { .double(Double(self)) }
}

extension Bool: PredicateArgument {
    /// A boolean value.
    public var predicateValue: PredicateValue { .bool(self) }
}

extension Date: PredicateArgument {
    /// A date value.
    public var predicateValue: PredicateValue { .date(self) }
}

extension Data: PredicateArgument {
    /// A data value.
    public var predicateValue: PredicateValue { .data(self) }
}

extension UUID: PredicateArgument {
    /// A uuid value.
    public var predicateValue: PredicateValue { .uuid(self) }
}

extension ObjectID: PredicateArgument {
    /// The object's uuid, for comparing a to-one relationship.
    public var predicateValue: PredicateValue { .uuid(uuid) }
}

extension AttributeValue: PredicateArgument {
    /// The value of the same type.
    public var predicateValue: PredicateValue {
        switch self {
        case .string(let value): .string(value)
        case .int(let value): .int(value)
        case .double(let value): .double(value)
        case .bool(let value): .bool(value)
        case .date(let value): .date(value)
        case .data(let value): .data(value)
        case .uuid(let value): .uuid(value)
        }
    }
}

extension Optional: PredicateArgument where Wrapped: PredicateArgument {
    /// The wrapped value, or ``PredicateValue/null`` for `nil`.
    public var predicateValue: PredicateValue {
        switch self {
        case .some(let value): value.predicateValue
        case .none: .null
        }
    }
}

extension Array: PredicateArgument where Element: PredicateArgument {
    /// A list of the elements' values, for `IN`.
    public var predicateValue: PredicateValue { .list(map(\.predicateValue)) }
}
