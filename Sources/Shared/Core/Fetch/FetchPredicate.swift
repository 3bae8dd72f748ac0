/// A fetch's filter (Core Data's `NSPredicate`): a tree of comparisons between a key of the fetched entity (or a key
/// path through its relationships) and a value, combined with AND, OR and NOT.
///
/// Build one from a Core Data format string, with the typed ``Key`` builder, or from its cases:
///
/// ```swift
/// let open = try FetchPredicate(format: "state == %@ AND additions > %d", "open", 10)
/// let same = Key("state") == "open" && Key("additions") > 10
/// let reviewed = try FetchPredicate(format: "author.login == %@ AND ANY reviewers.login ==[c] %@", "ada", "GRACE")
/// let busy = Key("reviewers.@count") > 2
/// ```
///
/// A predicate is checked against an entity only when it is compiled for one, so it can be built, sent and printed
/// without the model.
public indirect enum FetchPredicate: Sendable, Hashable {
    /// `TRUEPREDICATE` (`true`) or `FALSEPREDICATE` (`false`).
    case constant(Bool)
    /// `key <operator> value`.
    case comparison(Comparison)
    /// True when every operand is; an empty list is true.
    case and([FetchPredicate])
    /// True when any operand is; an empty list is false.
    case or([FetchPredicate])
    /// True when its operand is false.
    case not(FetchPredicate)

    /// `key <operator> value`: compares an attribute or to-one relationship of the fetched entity with a value, or
    /// what a key path reaches through relationships: `author.login` (to-one hops), `reviewers.login` under a
    /// ``Quantifier`` (a to-many hop), `reviewers.@count` (how many destinations).
    public struct Comparison: Sendable, Hashable {
        /// The attribute or to-one relationship compared, or a key path of relationships ending in one (or in
        /// `@count` after a to-many relationship).
        public var key: String
        /// How it is compared.
        public var op: ComparisonOperator
        /// What it is compared with: a single value, or a ``PredicateValue/list(_:)`` for ``ComparisonOperator/in``.
        public var value: PredicateValue
        /// `[c]`: strings compare after Unicode case folding.
        public var caseInsensitive: Bool
        /// `[d]`: strings compare without their diacritics (`é` as `e`); `[cd]` with both.
        public var diacriticInsensitive: Bool
        /// How a key path through a to-many relationship counts the values it reaches (`ANY`, `ALL`, `NONE`);
        /// ``Quantifier/direct`` for keys that reach one value.
        public var quantifier: Quantifier

        /// Creates a comparison.
        public init(
            key: String, op: ComparisonOperator, value: PredicateValue, caseInsensitive: Bool = false,
            diacriticInsensitive: Bool = false, quantifier: Quantifier = .direct
        ) {
            self.key = key
            self.op = op
            self.value = value
            self.caseInsensitive = caseInsensitive
            self.diacriticInsensitive = diacriticInsensitive
            self.quantifier = quantifier
        }
    }

    /// How a comparison counts the values its key path reaches (Core Data's comparison predicate modifiers).
    public enum Quantifier: Sendable, Hashable, CaseIterable {
        /// The key reaches one value (an attribute, or a key path of to-one relationships), which is compared.
        case direct
        /// `ANY` (also `SOME`): at least one value the to-many key path reaches matches.
        case any
        /// `ALL`: every value matches; true when the key path reaches none.
        case all
        /// `NONE`: no value matches; true when the key path reaches none.
        case none
    }

    /// The operators of a ``Comparison``.
    public enum ComparisonOperator: Sendable, Hashable, CaseIterable {
        /// `==` (also `=`); with `nil`, `IS NULL`.
        case equal
        /// `!=` (also `<>`); with `nil`, `IS NOT NULL`. A NULL value is not equal to any non-nil value.
        case notEqual
        /// `<`
        case less
        /// `<=` (also `=<`)
        case lessOrEqual
        /// `>`
        case greater
        /// `>=` (also `=>`)
        case greaterOrEqual
        /// `IN`: the key's value is one of a list.
        case `in`
        /// `BEGINSWITH` (strings).
        case beginsWith
        /// `ENDSWITH` (strings).
        case endsWith
        /// `CONTAINS` (strings): a substring.
        case contains
        /// `LIKE` (strings): the whole string matches a pattern where `*` is any run of characters, `?` one
        /// character (Unicode scalar) and `\` makes the next character literal.
        case like

        /// Whether the operator only applies to string attributes.
        var isStringOperator: Bool {
            switch self {
            case .beginsWith, .endsWith, .contains, .like: true
            default: false
            }
        }
    }
}
