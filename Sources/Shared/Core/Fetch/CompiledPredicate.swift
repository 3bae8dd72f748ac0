import Foundation

/// A predicate checked against an entity: a SQL expression over the entity table's columns with every value bound,
/// and the same condition for objects in memory. Both give the same answer for every row.
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

    /// The condition for in-memory evaluation, mirroring the SQL.
    indirect enum Node: Sendable {
        case constant(Bool)
        case and([Node])
        case or([Node])
        case not(Node)
        case test(PropertyColumn, Test)

        func evaluate(values: [AttributeValue?], toOne: [UUID?]) -> Bool {
            switch self {
            case .constant(let value): value
            case .and(let operands): operands.allSatisfy { $0.evaluate(values: values, toOne: toOne) }
            case .or(let operands): operands.contains { $0.evaluate(values: values, toOne: toOne) }
            case .not(let operand): !operand.evaluate(values: values, toOne: toOne)
            case .test(let column, let test): test.evaluate(column.value(values: values, toOne: toOne))
            }
        }
    }

    /// One comparison of a column's value.
    enum Test: Sendable {
        /// `IS NULL` (true) or `IS NOT NULL` (false).
        case isNull(Bool)
        /// `==`, `!=` or an order; with `foldCase`, the value is a fold key and the column's is folded too.
        case compare(FetchPredicate.ComparisonOperator, SQLValue, foldCase: Bool)
        /// `IN`; with `foldCase`, the set holds fold keys.
        case oneOf(Set<SQLValue>, foldCase: Bool)
        /// `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`.
        case text(FetchPredicate.ComparisonOperator, String, foldCase: Bool)

        func evaluate(_ value: SQLValue) -> Bool {
            switch self {
            case .isNull(let isNull):
                return (value == .null) == isNull
            case .compare(let op, let operand, let foldCase):
                guard let value = foldCase ? Self.folded(value) : value, value != .null else {
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
            case .oneOf(let set, let foldCase):
                guard let value = foldCase ? Self.folded(value) : value, value != .null else { return false }
                return set.contains(value)
            case .text(let op, let pattern, let foldCase):
                guard case .text(let string) = value else { return false }
                switch op {
                case .beginsWith: return PredicateText.beginsWith(string, pattern, foldCase: foldCase)
                case .endsWith: return PredicateText.endsWith(string, pattern, foldCase: foldCase)
                case .contains: return PredicateText.contains(string, pattern, foldCase: foldCase)
                case .like: return PredicateText.like(string, pattern: pattern, foldCase: foldCase)
                default: return false
                }
            }
        }

        /// A text value's fold key; nil for anything else (string attributes hold only text).
        private static func folded(_ value: SQLValue) -> SQLValue? {
            guard case .text(let string) = value else { return nil }
            return .blob(PredicateText.foldKey(string))
        }
    }

    /// Whether an object matches: `values` are its attribute values by attribute index, `toOne` its to-one
    /// destinations by relationship index (entries at to-many indexes are ignored). Missing entries count as nil.
    package func evaluate(values: [AttributeValue?], toOne: [UUID?]) -> Bool {
        root.evaluate(values: values, toOne: toOne)
    }
}
