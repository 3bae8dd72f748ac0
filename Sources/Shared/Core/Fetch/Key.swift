/// A typed way to build predicates: a key of the fetched entity, compared with Swift values.
///
/// ```swift
/// Key("state") == "open" && Key("additions") > 10 || !Key("title").contains("wip", caseInsensitive: true)
/// ```
///
/// The result equals what ``FetchPredicate/init(format:_:)`` parses from the same condition.
public struct Key: Sendable, Hashable {
    /// The attribute or to-one relationship's name.
    public let name: String

    /// A key naming an attribute or to-one relationship of the fetched entity.
    public init(_ name: String) {
        self.name = name
    }

    private func compare(
        _ op: FetchPredicate.ComparisonOperator, _ value: PredicateValue, caseInsensitive: Bool = false
    ) -> FetchPredicate {
        .comparison(.init(key: name, op: op, value: value, caseInsensitive: caseInsensitive))
    }

    /// `key == value`; `key == nil` tests for NULL.
    public static func == (lhs: Key, rhs: some PredicateArgument) -> FetchPredicate {
        lhs.compare(.equal, rhs.predicateValue)
    }

    /// `key == nil`: the key is NULL.
    public static func == (lhs: Key, rhs: _OptionalNilComparisonType) -> FetchPredicate {
        lhs.compare(.equal, .null)
    }

    /// `key != value`; true for NULL rows when the value is not nil.
    public static func != (lhs: Key, rhs: some PredicateArgument) -> FetchPredicate {
        lhs.compare(.notEqual, rhs.predicateValue)
    }

    /// `key != nil`: the key is not NULL.
    public static func != (lhs: Key, rhs: _OptionalNilComparisonType) -> FetchPredicate {
        lhs.compare(.notEqual, .null)
    }

    /// `key < value`.
    public static func < (lhs: Key, rhs: some PredicateArgument) -> FetchPredicate {
        lhs.compare(.less, rhs.predicateValue)
    }

    /// `key <= value`.
    public static func <= (lhs: Key, rhs: some PredicateArgument) -> FetchPredicate {
        lhs.compare(.lessOrEqual, rhs.predicateValue)
    }

    /// `key > value`.
    public static func > (lhs: Key, rhs: some PredicateArgument) -> FetchPredicate {
        lhs.compare(.greater, rhs.predicateValue)
    }

    /// `key >= value`.
    public static func >= (lhs: Key, rhs: some PredicateArgument) -> FetchPredicate {
        lhs.compare(.greaterOrEqual, rhs.predicateValue)
    }

    /// `key IN values`: the key's value is one of `values`.
    public func `in`<Values: Sequence>(_ values: Values) -> FetchPredicate where Values.Element: PredicateArgument {
        compare(.in, .list(values.map(\.predicateValue)))
    }

    /// `key IN values` with values of mixed Swift types.
    public func `in`(_ values: [any PredicateArgument]) -> FetchPredicate {
        compare(.in, .list(values.map(\.predicateValue)))
    }

    /// `key BEGINSWITH prefix` (`[c]` when case-insensitive).
    public func beginsWith(_ prefix: String, caseInsensitive: Bool = false) -> FetchPredicate {
        compare(.beginsWith, .string(prefix), caseInsensitive: caseInsensitive)
    }

    /// `key ENDSWITH suffix` (`[c]` when case-insensitive).
    public func endsWith(_ suffix: String, caseInsensitive: Bool = false) -> FetchPredicate {
        compare(.endsWith, .string(suffix), caseInsensitive: caseInsensitive)
    }

    /// `key CONTAINS substring` (`[c]` when case-insensitive).
    public func contains(_ substring: String, caseInsensitive: Bool = false) -> FetchPredicate {
        compare(.contains, .string(substring), caseInsensitive: caseInsensitive)
    }

    /// `key LIKE pattern` (`[c]` when case-insensitive): `*` any run of characters, `?` one character.
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> FetchPredicate {
        compare(.like, .string(pattern), caseInsensitive: caseInsensitive)
    }
}
