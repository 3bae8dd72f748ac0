/// The limits that keep hostile predicates cheap to reject: exceeding one is a ``FetchPredicateError`` of kind
/// ``FetchPredicateError/Kind/tooComplex`` naming it.
///
/// They also keep compiled SQL within SQLite's own limits. SQLite 3.40's parser (a fixed stack of 100 entries)
/// overflows when AND and OR alternate about 26 levels deep with the deepest comparisons Tributary writes, inside
/// a fetch's own clauses (NOT adds no depth, being pushed down to the comparisons); expressions may be at
/// most 1000 deep; a statement may bind 32,766 values and be 1,000,000 bytes long.
public enum PredicateLimits {
    /// The longest format string, in UTF-8 bytes.
    public static let maxFormatLength = 65_536
    /// The deepest nesting of AND, OR, NOT and parentheses (a lone comparison has depth 1): 20 leaves SQLite's
    /// parser room for the clauses a fetch adds around the predicate.
    public static let maxDepth = 20
    /// The most values in one `IN` list.
    public static let maxListElements = 10_000
    /// The most nodes (comparisons, constants, AND, OR, NOT) in one predicate. Long lists of values belong in `IN`.
    /// (ANDs and ORs are written as flat chains, which SQLite nests one level per operand.)
    public static let maxNodes = 500
    /// The most values (bound SQL parameters) in one predicate, counting every element of every list.
    public static let maxValues = 20_000
    /// The longest compiled SQL expression, in UTF-8 bytes.
    public static let maxSQLLength = 512 * 1024
}

extension PredicateLimits {
    /// The most keys in one sort.
    public static let maxSortKeys = 64
}

extension PredicateLimits {
    /// Counts one more node at `depth`, refusing a tree deeper or larger than the limits (the parser, the wire
    /// decoder and ``FetchPredicate/checkLimits()`` all walk trees through it).
    /// - Throws: ``FetchPredicateError`` of kind `tooComplex` naming the limit.
    static func countNode(depth: Int, nodes: inout Int) throws {
        guard depth <= maxDepth else {
            throw FetchPredicateError.tooComplex("the predicate is nested deeper than \(maxDepth) levels")
        }
        nodes += 1
        guard nodes <= maxNodes else {
            throw FetchPredicateError.tooComplex("the predicate has more than \(maxNodes) comparisons and operators")
        }
    }
}
