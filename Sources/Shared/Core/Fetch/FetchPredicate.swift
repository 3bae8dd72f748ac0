/// A fetch's filter (Core Data's `NSPredicate`): a tree of comparisons between a key of the fetched entity and a
/// value, combined with AND, OR and NOT.
///
/// Build one from a Core Data format string, with the typed ``Key`` builder, or from its cases:
///
/// ```swift
/// let open = try FetchPredicate(format: "state == %@ AND additions > %d", "open", 10)
/// let same = Key("state") == "open" && Key("additions") > 10
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

    /// `key <operator> value`: compares an attribute or to-one relationship of the fetched entity with a value.
    public struct Comparison: Sendable, Hashable {
        /// The attribute or to-one relationship compared.
        public var key: String
        /// How it is compared.
        public var op: ComparisonOperator
        /// What it is compared with: a single value, or a ``PredicateValue/list(_:)`` for ``ComparisonOperator/in``.
        public var value: PredicateValue
        /// `[c]`: strings compare after Unicode case folding (not diacritic folding).
        public var caseInsensitive: Bool

        /// Creates a comparison.
        public init(key: String, op: ComparisonOperator, value: PredicateValue, caseInsensitive: Bool = false) {
            self.key = key
            self.op = op
            self.value = value
            self.caseInsensitive = caseInsensitive
        }
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
