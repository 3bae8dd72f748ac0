/// The limits that keep hostile predicates cheap to reject: exceeding one is a ``PredicateError`` of kind
/// ``PredicateError/Kind/tooComplex`` naming it.
///
/// They also keep compiled SQL within SQLite's own limits (expression depth 1000, 32,766 bound values, 1,000,000
/// bytes of SQL).
public enum PredicateLimits {
    /// The longest format string, in UTF-8 bytes.
    public static let maxFormatLength = 65_536
    /// The deepest nesting of AND, OR, NOT and parentheses (a lone comparison has depth 1).
    public static let maxDepth = 64
    /// The most values in one `IN` list.
    public static let maxListElements = 10_000
    /// The most nodes (comparisons, constants, AND, OR, NOT) in one predicate.
    public static let maxNodes = 2_000
    /// The most values (bound SQL parameters) in one predicate, counting every element of every list.
    public static let maxValues = 20_000
    /// The longest compiled SQL expression, in UTF-8 bytes.
    public static let maxSQLLength = 512 * 1024
}

extension PredicateLimits {
    /// The most keys in one sort.
    public static let maxSortKeys = 64
}
