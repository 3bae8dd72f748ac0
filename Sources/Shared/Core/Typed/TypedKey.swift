import Foundation

/// A predicate over one entity type, built from its typed keys: `PullRequest.additions >= 500 && !PullRequest.merged`.
public struct TypedPredicate<Root: TypedEntity>: Sendable {
    /// The predicate as the untyped API takes it.
    public let predicate: FetchPredicate

    /// Wraps an untyped predicate, which must name keys of `Root`: nothing checks it before the fetch.
    public init(_ predicate: FetchPredicate) {
        self.predicate = predicate
    }

    /// Both predicates.
    public static func && (lhs: Self, rhs: Self) -> Self { Self(lhs.predicate && rhs.predicate) }
    /// Either predicate.
    public static func || (lhs: Self, rhs: Self) -> Self { Self(lhs.predicate || rhs.predicate) }
    /// The negation of a predicate.
    public static prefix func ! (operand: Self) -> Self { Self(!operand.predicate) }
}

/// A sort over one entity type: `PullRequest.number.ascending`.
public struct TypedSort<Root: TypedEntity>: Sendable {
    /// The sort as the untyped API takes it.
    public let sort: FetchSort
}

/// An attribute or to-one relationship of `Root` whose values are `Value`, for predicates and sorts; generated as a
/// static property of the entity type (`PullRequest.additions`). A misspelled key, or a comparison with a value of
/// the wrong type, does not compile.
///
/// Keys of related entities chain through relationships: `PullRequest.author[User.login] == "ada"` (a to-one
/// path; nil when the author is), `PullRequest.reviewers.any[User.login] == "grace"` (`ANY`; also `all`, `none`),
/// `PullRequest.reviewers.count > 2` (`@count`).
public struct TypedKey<Root: TypedEntity, Value>: Sendable {
    /// The key, or key path, as the untyped API names it.
    public let name: String
    /// `ANY`, `ALL` or `NONE` when the path goes through a to-many relationship.
    public let quantifier: FetchPredicate.Quantifier

    /// The key `name` (an attribute, a to-one relationship or a key path through to-one relationships), which must
    /// be of `Root` and hold `Value`s: generated code makes keys; nothing checks a hand-made one before the fetch.
    public init(_ name: String) {
        self.init(name, quantifier: .direct)
    }

    /// The key path `name` counted by `quantifier`, as ``init(_:)`` with `ANY`, `ALL` or `NONE`.
    public init(_ name: String, quantifier: FetchPredicate.Quantifier) {
        self.name = name
        self.quantifier = quantifier
    }

    /// Sorts ascending by the key (an attribute or to-one relationship of `Root`).
    public var ascending: TypedSort<Root> { TypedSort(sort: FetchSort(name, ascending: true)) }
    /// Sorts descending by the key.
    public var descending: TypedSort<Root> { TypedSort(sort: FetchSort(name, ascending: false)) }

    var key: Key { Key(name, quantifier: quantifier) }
}

// MARK: - Key paths through relationships

extension TypedKey {
    /// A key of the destination of this to-one key: `PullRequest.author[User.login]` is `author.login`, nil when the
    /// author is.
    public subscript<Destination: TypedEntity, Next>(key: TypedKey<Destination, Next>) -> TypedKey<Root, Next?>
    where Value == Destination? {
        TypedKey<Root, Next?>("\(name).\(key.name)", quantifier: quantifier)
    }

    /// An optional key of the destination of this to-one key (`PullRequest.author[User.name]` for an optional name).
    public subscript<Destination: TypedEntity, Wrapped>(key: TypedKey<Destination, Wrapped?>) -> TypedKey<
        Root, Wrapped?
    >
    where Value == Destination? {
        TypedKey<Root, Wrapped?>("\(name).\(key.name)", quantifier: quantifier)
    }

    /// A to-many relationship of the destination of this to-one key: `PullRequest.author[User.followers]`.
    public subscript<Destination: TypedEntity, Next: TypedEntity>(key: TypedToManyKey<Destination, Next>)
        -> TypedToManyKey<Root, Next>
    where Value == Destination? {
        TypedToManyKey<Root, Next>("\(name).\(key.name)")
    }
}

/// A to-many relationship of `Root` whose destinations are `Destination`, for predicates: generated as a static
/// property of the entity type (`PullRequest.reviewers`). Compare what it reaches with ``any``, ``all`` or ``none``,
/// or how many it holds with ``count``.
public struct TypedToManyKey<Root: TypedEntity, Destination: TypedEntity>: Sendable {
    /// The relationship's name, or the key path to it.
    public let name: String

    /// The to-many relationship (or key path to one) `name` of `Root`, whose destinations are `Destination`s:
    /// generated code makes these; nothing checks a hand-made one before the fetch.
    public init(_ name: String) {
        self.name = name
    }

    /// `path.@count`: how many destinations the relationship holds.
    public var count: TypedKey<Root, Int> { TypedKey("\(name).@count") }
    /// `ANY path...`: true when at least one destination matches (`PullRequest.reviewers.any[User.login] == "ada"`).
    public var any: TypedQuantifiedKey<Root, Destination> { TypedQuantifiedKey(name: name, quantifier: .any) }
    /// `ALL path...`: true when every destination matches, and when there is none.
    public var all: TypedQuantifiedKey<Root, Destination> { TypedQuantifiedKey(name: name, quantifier: .all) }
    /// `NONE path...`: true when no destination matches.
    public var none: TypedQuantifiedKey<Root, Destination> { TypedQuantifiedKey(name: name, quantifier: .none) }
}

/// A to-many relationship under `ANY`, `ALL` or `NONE`, waiting for the key of its destinations to compare.
public struct TypedQuantifiedKey<Root: TypedEntity, Destination: TypedEntity>: Sendable {
    let name: String
    let quantifier: FetchPredicate.Quantifier

    /// A key of the destinations: `PullRequest.reviewers.any[User.login]`.
    public subscript<Next>(key: TypedKey<Destination, Next>) -> TypedKey<Root, Next> {
        TypedKey("\(name).\(key.name)", quantifier: quantifier)
    }

    /// A to-many relationship of the destinations: their destinations, flattened (`ANY teams.members.login` is
    /// `Organization.teams.any[Team.members][User.login]`).
    public subscript<Next: TypedEntity>(key: TypedToManyKey<Destination, Next>) -> TypedQuantifiedKey<Root, Next> {
        TypedQuantifiedKey<Root, Next>(name: "\(name).\(key.name)", quantifier: quantifier)
    }
}

/// Values that have an order in predicates (`<`, `<=`, `>`, `>=`).
public protocol OrderedEntityValue: EntityValue {}
extension Int: OrderedEntityValue {}
extension Double: OrderedEntityValue {}
extension Date: OrderedEntityValue {}
extension String: OrderedEntityValue {}

// MARK: - Equality: required values, optional values (also with nil), and to-one destinations.

extension TypedKey where Value: EntityValue {
    /// `key == value`.
    public static func == (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key == rhs) }
    /// `key != value`.
    public static func != (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key != rhs) }
    /// `IN`: the value is one of `values`.
    public func `in`(_ values: [Value]) -> TypedPredicate<Root> { .init(key.in(values)) }
}

extension TypedKey {
    /// `key == value` for an optional key; `key == nil` tests for NULL.
    public static func == <Wrapped: EntityValue>(lhs: Self, rhs: Wrapped?) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key == rhs) }
    /// `key != value` for an optional key, true for NULL when `value` is not nil; `key != nil` tests for a value.
    public static func != <Wrapped: EntityValue>(lhs: Self, rhs: Wrapped?) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key != rhs) }

    /// A to-one relationship pointing at `rhs` (nil: pointing nowhere).
    public static func == <Destination: TypedEntity>(lhs: Self, rhs: Destination?) -> TypedPredicate<Root>
    where Value == Destination? { .init(lhs.key == rhs?.objectID) }
    /// A to-one relationship not pointing at `rhs` (nil: pointing somewhere).
    public static func != <Destination: TypedEntity>(lhs: Self, rhs: Destination?) -> TypedPredicate<Root>
    where Value == Destination? { .init(lhs.key != rhs?.objectID) }
}

// MARK: - Order

extension TypedKey where Value: OrderedEntityValue {
    /// `key < value`.
    public static func < (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key < rhs) }
    /// `key <= value`.
    public static func <= (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key <= rhs) }
    /// `key > value`.
    public static func > (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key > rhs) }
    /// `key >= value`.
    public static func >= (lhs: Self, rhs: Value) -> TypedPredicate<Root> { .init(lhs.key >= rhs) }
}

extension TypedKey {
    /// `key < value` for an optional key; false for NULL.
    public static func < <Wrapped: OrderedEntityValue>(lhs: Self, rhs: Wrapped) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key < rhs) }
    /// `key <= value` for an optional key; false for NULL.
    public static func <= <Wrapped: OrderedEntityValue>(lhs: Self, rhs: Wrapped) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key <= rhs) }
    /// `key > value` for an optional key; false for NULL.
    public static func > <Wrapped: OrderedEntityValue>(lhs: Self, rhs: Wrapped) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key > rhs) }
    /// `key >= value` for an optional key; false for NULL.
    public static func >= <Wrapped: OrderedEntityValue>(lhs: Self, rhs: Wrapped) -> TypedPredicate<Root>
    where Value == Wrapped? { .init(lhs.key >= rhs) }
}

// MARK: - Strings

/// The values of string keys: `String`, and `String?` (optional attributes, and key paths through to-one
/// relationships).
public protocol StringKeyValue {}
extension String: StringKeyValue {}
extension Optional: StringKeyValue where Wrapped == String {}

extension TypedKey where Value: StringKeyValue {
    /// `==[c]`, `==[d]`, `==[cd]`: equality after case and diacritic folding.
    public func equals(_ string: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> TypedPredicate<Root>
    { .init(key.equals(string, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)) }
    /// `BEGINSWITH`: the value starts with `prefix` (`[c]` when case-insensitive, `[d]` when diacritic-insensitive).
    public func beginsWith(_ prefix: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> TypedPredicate<Root>
    { .init(key.beginsWith(prefix, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)) }
    /// `ENDSWITH`: the value ends with `suffix` (`[c]` when case-insensitive, `[d]` when diacritic-insensitive).
    public func endsWith(_ suffix: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> TypedPredicate<Root>
    { .init(key.endsWith(suffix, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)) }
    /// `CONTAINS`: the value holds `substring` (`[c]` when case-insensitive, `[d]` when diacritic-insensitive).
    public func contains(_ substring: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> TypedPredicate<Root>
    { .init(key.contains(substring, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)) }
    /// `LIKE`: the whole value matches `pattern`, where `*` is any run of characters and `?` one character.
    public func like(_ pattern: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> TypedPredicate<Root>
    { .init(key.like(pattern, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)) }
}
