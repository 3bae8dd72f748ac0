/// A typed way to build predicates: a key of the fetched entity, or a key path through its relationships, compared
/// with Swift values.
///
/// ```swift
/// Key("state") == "open" && Key("additions") > 10 || !Key("title").contains("wip", caseInsensitive: true)
/// Key("author.login") == "ada" && Key.any("reviewers.login") == "grace" && Key("reviewers.@count") > 2
/// ```
///
/// The result equals what ``FetchPredicate/init(format:_:)`` parses from the same condition.
public struct Key: Sendable, Hashable {
    /// The attribute or to-one relationship's name, or a key path (`author.login`, `reviewers.@count`).
    public let name: String
    /// How the values a path through a to-many relationship reaches are counted: see ``any(_:)``.
    public let quantifier: FetchPredicate.Quantifier

    /// A key naming an attribute or to-one relationship of the fetched entity, or a key path through to-one
    /// relationships (`author.login`), or `@count` after a to-many relationship (`reviewers.@count`).
    public init(_ name: String) {
        self.init(name, quantifier: .direct)
    }

    /// A key path with a quantifier.
    public init(_ name: String, quantifier: FetchPredicate.Quantifier) {
        self.name = name
        self.quantifier = quantifier
    }

    /// `ANY path`: true when at least one value the key path reaches through a to-many relationship matches
    /// (`Key.any("reviewers.login") == "ada"`).
    public static func any(_ path: String) -> Key { Key(path, quantifier: .any) }

    /// `ALL path`: true when every value the key path reaches matches, and when it reaches none.
    public static func all(_ path: String) -> Key { Key(path, quantifier: .all) }

    /// `NONE path`: true when no value the key path reaches matches.
    public static func none(_ path: String) -> Key { Key(path, quantifier: .none) }

    private func compare(
        _ op: FetchPredicate.ComparisonOperator, _ value: PredicateValue, caseInsensitive: Bool = false,
        diacriticInsensitive: Bool = false
    ) -> FetchPredicate {
        .comparison(
            .init(
                key: name, op: op, value: value, caseInsensitive: caseInsensitive,
                diacriticInsensitive: diacriticInsensitive, quantifier: quantifier))
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

    /// `key ==[c] string` (with `caseInsensitive`), `==[d]` (with `diacriticInsensitive`) or `==[cd]`.
    public func equals(_ string: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> FetchPredicate
    {
        compare(
            .equal, .string(string), caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
    }

    /// `key IN values`: the key's value is one of `values`.
    public func `in`<Values: Sequence>(_ values: Values) -> FetchPredicate where Values.Element: PredicateArgument {
        compare(.in, .list(values.map(\.predicateValue)))
    }

    /// `key IN values` with values of mixed Swift types.
    public func `in`(_ values: [any PredicateArgument]) -> FetchPredicate {
        compare(.in, .list(values.map(\.predicateValue)))
    }

    /// `key BEGINSWITH prefix` (`[c]` when case-insensitive, `[d]` when diacritic-insensitive).
    public func beginsWith(_ prefix: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> FetchPredicate
    {
        compare(
            .beginsWith, .string(prefix), caseInsensitive: caseInsensitive,
            diacriticInsensitive: diacriticInsensitive)
    }

    /// `key ENDSWITH suffix` (`[c]` when case-insensitive, `[d]` when diacritic-insensitive).
    public func endsWith(_ suffix: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> FetchPredicate
    {
        compare(
            .endsWith, .string(suffix), caseInsensitive: caseInsensitive,
            diacriticInsensitive: diacriticInsensitive)
    }

    /// `key CONTAINS substring` (`[c]` when case-insensitive, `[d]` when diacritic-insensitive).
    public func contains(_ substring: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> FetchPredicate
    {
        compare(
            .contains, .string(substring), caseInsensitive: caseInsensitive,
            diacriticInsensitive: diacriticInsensitive)
    }

    /// `key LIKE pattern` (`[c]` when case-insensitive, `[d]` when diacritic-insensitive): `*` any run of characters, `?` one character.
    public func like(_ pattern: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false)
        -> FetchPredicate
    {
        compare(
            .like, .string(pattern), caseInsensitive: caseInsensitive,
            diacriticInsensitive: diacriticInsensitive)
    }
}
