import Foundation

/// A predicate over one entity type, built from its typed keys: `PullRequest.additions >= 500 && !PullRequest.merged`.
public struct TypedPredicate<Root: TypedEntity>: Sendable {
    /// The predicate as the untyped API takes it.
    public let predicate: FetchPredicate

    public init(_ predicate: FetchPredicate) {
        self.predicate = predicate
    }

    public static func && (lhs: Self, rhs: Self) -> Self { Self(lhs.predicate && rhs.predicate) }
    public static func || (lhs: Self, rhs: Self) -> Self { Self(lhs.predicate || rhs.predicate) }
    public static prefix func ! (operand: Self) -> Self { Self(!operand.predicate) }
}

/// A sort over one entity type: `PullRequest.number.ascending`.
public struct TypedSort<Root: TypedEntity>: Sendable {
    public let sort: FetchSort
}

/// An attribute or to-one relationship of `Root` whose values are `Value`, for predicates and sorts; generated as a
/// static property of the entity type (`PullRequest.additions`). A misspelled key, or a comparison with a value of
/// the wrong type, does not compile.
public struct TypedKey<Root: TypedEntity, Value>: Sendable {
    public let name: String

    public init(_ name: String) {
        self.name = name
    }

    public var ascending: TypedSort<Root> { TypedSort(sort: FetchSort(name, ascending: true)) }
    public var descending: TypedSort<Root> { TypedSort(sort: FetchSort(name, ascending: false)) }

    var key: Key { Key(name) }
}

/// Values that have an order in predicates (`<`, `<=`, `>`, `>=`).
public protocol OrderedEntityValue: EntityValue {}
extension Int: OrderedEntityValue {}
extension Double: OrderedEntityValue {}
extension Date: OrderedEntityValue {}
extension String: OrderedEntityValue {}

// MARK: - Equality: required values, optional values (also with nil), and to-one destinations.

extension TypedKey where Value: EntityValue {
    public static func == (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key == rhs) }
    public static func != (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key != rhs) }
    /// `IN`: the value is one of `values`.
    public func `in`(_ values: [Value]) -> TypedPredicate<Root> { .init(key.in(values)) }
}

extension TypedKey {
    public static func == <Wrapped: EntityValue>(lhs: Self, rhs: Wrapped?) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key == rhs) }
    public static func != <Wrapped: EntityValue>(lhs: Self, rhs: Wrapped?) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key != rhs) }

    /// A to-one relationship pointing at `rhs` (nil: pointing nowhere).
    public static func == <Destination: TypedEntity>(lhs: Self, rhs: Destination?) -> TypedPredicate<Root>
    where Value == Destination? { .init(lhs.key == rhs?.objectID) }
    public static func != <Destination: TypedEntity>(lhs: Self, rhs: Destination?) -> TypedPredicate<Root>
    where Value == Destination? { .init(lhs.key != rhs?.objectID) }
}

// MARK: - Order

extension TypedKey where Value: OrderedEntityValue {
    public static func < (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key < rhs) }
    public static func <= (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key <= rhs) }
    public static func > (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key > rhs) }
    public static func >= (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key >= rhs) }
}

extension TypedKey {
    public static func < <Wrapped: OrderedEntityValue>(lhs: Self, rhs: Wrapped) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key < rhs) }
    public static func <= <Wrapped: OrderedEntityValue>(lhs: Self, rhs: Wrapped) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key <= rhs) }
    public static func > <Wrapped: OrderedEntityValue>(lhs: Self, rhs: Wrapped) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key > rhs) }
    public static func >= <Wrapped: OrderedEntityValue>(lhs: Self, rhs: Wrapped) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key >= rhs) }
}

// MARK: - Strings

extension TypedKey where Value == String {
    public func beginsWith(_ prefix: String, caseInsensitive: Bool = false) -> TypedPredicate<Root> {
        .init(key.beginsWith(prefix, caseInsensitive: caseInsensitive))
    }
    public func endsWith(_ suffix: String, caseInsensitive: Bool = false) -> TypedPredicate<Root> {
        .init(key.endsWith(suffix, caseInsensitive: caseInsensitive))
    }
    public func contains(_ substring: String, caseInsensitive: Bool = false) -> TypedPredicate<Root> {
        .init(key.contains(substring, caseInsensitive: caseInsensitive))
    }
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> TypedPredicate<Root> {
        .init(key.like(pattern, caseInsensitive: caseInsensitive))
    }
}
