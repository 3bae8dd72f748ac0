/// A compiled predicate's SQL before it is written out: comparisons are leaves holding their SQL and bound values.
///
/// Writing it out pushes NOT down to the comparisons (De Morgan) and flattens nested ANDs and ORs into flat chains,
/// so the SQL nests parentheses only where AND and OR alternate (SQLite 3.40's parser overflows its stack when they
/// alternate about 26 levels deep; ``PredicateLimits/maxDepth`` stays below). Every comparison's SQL is NULL-free,
/// so these rewrites keep its meaning exactly.
indirect enum PredicateSQLTree {
    case constant(Bool)
    /// A comparison's SQL and the values of its `?`, in order.
    case leaf(String, [SQLValue])
    case and([PredicateSQLTree])
    case or([PredicateSQLTree])
    case not(PredicateSQLTree)

    /// The predicate in negation normal form: constants, possibly negated leaves, and AND/OR groups whose operands
    /// are never groups of the same kind.
    private indirect enum Normal {
        case constant(Bool)
        case leaf(String, [SQLValue], negated: Bool)
        case group(isAnd: Bool, [Normal])
    }

    private func normalized(negated: Bool) -> Normal {
        switch self {
        case .constant(let value):
            return .constant(value != negated)
        case .leaf(let sql, let arguments):
            return .leaf(sql, arguments, negated: negated)
        case .not(let operand):
            return operand.normalized(negated: !negated)
        case .and(let operands):
            return Self.group(isAnd: !negated, operands.map { $0.normalized(negated: negated) })
        case .or(let operands):
            return Self.group(isAnd: negated, operands.map { $0.normalized(negated: negated) })
        }
    }

    private static func group(isAnd: Bool, _ operands: [Normal]) -> Normal {
        var flat: [Normal] = []
        for operand in operands {
            if case .group(isAnd, let inner) = operand {
                flat += inner
            } else {
                flat.append(operand)
            }
        }
        switch flat.count {
        case 0: return .constant(isAnd)
        case 1: return flat[0]
        default: return .group(isAnd: isAnd, flat)
        }
    }

    /// The SQL expression and its bound values, in the order of the `?`.
    func rendered() -> (String, [SQLValue]) {
        var sql = ""
        var arguments: [SQLValue] = []
        Self.render(normalized(negated: false), into: &sql, &arguments)
        return (sql, arguments)
    }

    private static func render(_ normal: Normal, into sql: inout String, _ arguments: inout [SQLValue]) {
        switch normal {
        case .constant(let value):
            sql += value ? "1" : "0"
        case .leaf(let leaf, let values, let negated):
            // NOT binds more loosely than every comparison operator, so a leaf needs no parentheses of its own.
            if negated { sql += "NOT " }
            sql += leaf
            arguments += values
        case .group(let isAnd, let operands):
            sql += "("
            for (index, operand) in operands.enumerated() {
                if index > 0 { sql += isAnd ? " AND " : " OR " }
                render(operand, into: &sql, &arguments)
            }
            sql += ")"
        }
    }
}
