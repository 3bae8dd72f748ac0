import Foundation

/// A predicate checked against an entity: a SQL expression over the entity table's columns (and, for key paths,
/// subqueries over the tables they join) with every value bound, and the same condition for objects in memory. Both
/// give the same answer for every row.
///
/// The SQL never yields NULL (each comparison is written so a NULL column gives 0 or 1), so `NOT` and SQLite's
/// three-valued logic agree with Swift's two-valued evaluation.
package struct CompiledPredicate: Sendable {
    /// A boolean SQL expression over the entity table's columns, e.g. `("state" IS ? AND "additions" > ?)`; `1` or
    /// `0` for constants. Only model-validated, quoted column names, operators, `?` and Tributary's SQL functions
    /// appear in it: every value is bound.
    package let sql: String
    /// The values of the `?` placeholders, in order.
    package let arguments: [SQLValue]
    /// The condition, for in-memory evaluation.
    let root: Node
    /// The relationship sequences the predicate's key paths follow from the fetched object, so a context can load
    /// the objects they reach in one batch per step before evaluating (empty without key paths).
    package let relationshipPaths: [[PredicateHop]]

    /// The condition for in-memory evaluation, mirroring the SQL.
    indirect enum Node: Sendable {
        case constant(Bool)
        case and([Node])
        case or([Node])
        case not(Node)
        /// A property of the object itself (or `@count` of one of its to-many relationships).
        case test(PropertyColumn, Test)
        /// A key path through relationships, its values counted by the quantifier.
        case path(PredicateKeyPath, FetchPredicate.Quantifier, Test)

        func evaluate(_ subject: PredicateSubject, resolver: any PredicateResolver) -> Bool {
            switch self {
            case .constant(let value):
                return value
            case .and(let operands):
                return operands.allSatisfy { $0.evaluate(subject, resolver: resolver) }
            case .or(let operands):
                return operands.contains { $0.evaluate(subject, resolver: resolver) }
            case .not(let operand):
                return !operand.evaluate(subject, resolver: resolver)
            case .test(let column, let test):
                return test.evaluate(column.value(of: subject, resolver: resolver))
            case .path(let path, let quantifier, let test):
                let values = path.reached(from: subject, resolver: resolver).lazy.map {
                    path.end.value(of: $0, resolver: resolver)
                }
                switch quantifier {
                case .direct: return test.evaluate(values.first ?? .null)
                case .any: return values.contains(where: test.evaluate)
                case .all: return values.allSatisfy(test.evaluate)
                case .none: return !values.contains(where: test.evaluate)
                }
            }
        }
    }

    /// One comparison of a column's value.
    enum Test: Sendable {
        /// `IS NULL` (true) or `IS NOT NULL` (false).
        case isNull(Bool)
        /// `==`, `!=` or an order; with `folding`, the value is a fold key and the column's is folded too.
        case compare(FetchPredicate.ComparisonOperator, SQLValue, folding: PredicateText.Folding)
        /// `IN`; with `folding`, the set holds fold keys.
        case oneOf(Set<SQLValue>, folding: PredicateText.Folding)
        /// `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`.
        case text(FetchPredicate.ComparisonOperator, String, folding: PredicateText.Folding)

        func evaluate(_ value: SQLValue) -> Bool {
            switch self {
            case .isNull(let isNull):
                return (value == .null) == isNull
            case .compare(let op, let operand, let folding):
                guard let value = folding.isEmpty ? value : Self.folded(value, folding), value != .null else {
                    return op == .notEqual
                }
                let order = SQLValue.compare(value, operand)
                switch op {
                case .equal: return order == 0
                case .notEqual: return order != 0
                case .less: return order < 0
                case .lessOrEqual: return order <= 0
                case .greater: return order > 0
                case .greaterOrEqual: return order >= 0
                default: return false
                }
            case .oneOf(let set, let folding):
                guard let value = folding.isEmpty ? value : Self.folded(value, folding), value != .null else {
                    return false
                }
                return set.contains(value)
            case .text(let op, let pattern, let folding):
                guard case .text(let string) = value else { return false }
                switch op {
                case .beginsWith: return PredicateText.beginsWith(string, pattern, folding: folding)
                case .endsWith: return PredicateText.endsWith(string, pattern, folding: folding)
                case .contains: return PredicateText.contains(string, pattern, folding: folding)
                case .like: return PredicateText.like(string, pattern: pattern, folding: folding)
                default: return false
                }
            }
        }

        /// A text value's fold key; nil for anything else (string attributes hold only text).
        private static func folded(_ value: SQLValue, _ folding: PredicateText.Folding) -> SQLValue? {
            guard case .text(let string) = value else { return nil }
            return .blob(PredicateText.foldKey(string, folding))
        }
    }

    /// Whether an object matches: `values` are its attribute values by attribute index, `toOne` its to-one
    /// destinations by relationship index (entries at to-many indexes are ignored). Missing entries count as nil.
    /// Key paths reach nothing this way and `@count` counts nothing (0): use ``evaluate(_:resolver:)`` for
    /// predicates with them.
    package func evaluate(values: [AttributeValue?], toOne: [UUID?]) -> Bool {
        root.evaluate(
            PredicateSubject(
                id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), values: values, toOne: toOne,
                toMany: []),
            resolver: NoPredicateResolver())
    }

    /// Whether `subject` matches, following key paths through the objects `resolver` finds.
    package func evaluate(_ subject: PredicateSubject, resolver: any PredicateResolver) -> Bool {
        root.evaluate(subject, resolver: resolver)
    }
}
