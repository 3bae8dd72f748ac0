import Foundation

extension FetchPredicate {
    /// Checks the predicate against `entity` and compiles it to SQL with bound values and to an in-memory condition
    /// that agrees with the SQL.
    ///
    /// Type rules (a value of another type is a `wrongType` error naming the key, its type and the value's):
    /// - int attributes take ints, and doubles with a whole value (`3.0`);
    /// - double attributes take ints and doubles; date attributes take dates, and numbers as seconds since 1970;
    /// - bool attributes take bools, and the ints 0 and 1;
    /// - string, data and uuid attributes take strings, data and uuids; to-one relationships take uuids (ObjectIDs);
    /// - `nil` only with `==` and `!=`; a list only with `IN` (a single value is a one-element list);
    /// - `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE` and `[c]` only on string attributes, with string values;
    /// - order operators work on every type: numbers numerically, strings by UTF-8 bytes, data and uuids by bytes,
    ///   bools as 0 < 1; NaN is refused (SQLite stores it as NULL).
    /// - Throws: ``FetchPredicateError``: `unknownKey`, `unsupported` (key paths, to-many relationships), `wrongType`,
    ///   `tooComplex`.
    package func compile(for entity: Entity) throws -> CompiledPredicate {
        try checkLimits()
        var compiler = PredicateCompiler(entity: entity)
        let (tree, root) = try compiler.compile(self)
        let (sql, arguments) = tree.rendered()
        guard sql.utf8.count <= PredicateLimits.maxSQLLength else {
            throw FetchPredicateError.tooComplex(
                "the predicate compiles to more than \(PredicateLimits.maxSQLLength) bytes of SQL")
        }
        return CompiledPredicate(sql: sql, arguments: arguments, root: root)
    }
}

/// Compiles a predicate for one entity: each comparison to a SQL leaf with its bound values, and the whole to an
/// in-memory condition.
struct PredicateCompiler {
    typealias Node = CompiledPredicate.Node

    let entity: Entity
    /// The values bound by the comparison being compiled, in the order of its `?`.
    private var arguments: [SQLValue] = []

    init(entity: Entity) {
        self.entity = entity
    }

    mutating func compile(_ predicate: FetchPredicate) throws -> (PredicateSQLTree, Node) {
        switch predicate {
        case .constant(let value):
            return (.constant(value), .constant(value))
        case .and(let operands):
            let compiled = try operands.map { try compile($0) }
            return (.and(compiled.map(\.0)), .and(compiled.map(\.1)))
        case .or(let operands):
            let compiled = try operands.map { try compile($0) }
            return (.or(compiled.map(\.0)), .or(compiled.map(\.1)))
        case .not(let operand):
            let (tree, node) = try compile(operand)
            return (.not(tree), .not(node))
        case .comparison(let comparison):
            arguments = []
            let (sql, node) = try compile(comparison)
            return (.leaf(sql, arguments), node)
        }
    }

    // MARK: - Comparisons

    private mutating func compile(_ comparison: FetchPredicate.Comparison) throws -> (String, Node) {
        let column = try entity.column(forKey: comparison.key, use: "compared")
        let op = comparison.op
        if comparison.value == .null {
            // A to-one's key column is NULL exactly when its destination is: tested without reading the destination.
            let name = column.isToOne ? column.columnSQL : column.sql
            switch op {
            case .equal: return ("\(name) IS NULL", .test(column, .isNull(true)))
            case .notEqual: return ("\(name) IS NOT NULL", .test(column, .isNull(false)))
            default:
                throw FetchPredicateError(
                    .wrongType,
                    "\(describe(column)) can only be compared with nil using == or !=, not \(op.formatSymbol)")
            }
        }
        let name = column.sql
        let foldCase = comparison.caseInsensitive
        if foldCase && !column.isString {
            throw FetchPredicateError(.wrongType, "[c] needs a string attribute; \(describe(column)) is not one")
        }
        if op == .in {
            let items: [PredicateValue]
            if case .list(let values) = comparison.value { items = values } else { items = [comparison.value] }
            return try compileIn(column, items, foldCase: foldCase)
        }
        if case .list = comparison.value {
            throw FetchPredicateError(
                .wrongType, "a list can only be compared with IN, not \(op.formatSymbol) (key \(describe(column)))")
        }
        if op.isStringOperator {
            guard column.isString else {
                throw FetchPredicateError(
                    .wrongType, "\(op.formatSymbol) needs a string attribute; \(describe(column)) is not one")
            }
            guard case .string(let pattern) = comparison.value else {
                throw FetchPredicateError(
                    .wrongType,
                    "\(op.formatSymbol) needs a string value; \(describe(column)) was given \(comparison.value.typeName)"
                )
            }
            let patternSQL = functionOperand(pattern)
            let value = "CAST(\(name) AS BLOB)"
            let flag = foldCase ? "1" : "0"
            let sql: String
            switch op {
            case .beginsWith: sql = "\(PredicateSQLFunction.beginsWith)(\(value), \(patternSQL), \(flag))"
            case .endsWith: sql = "\(PredicateSQLFunction.endsWith)(\(value), \(patternSQL), \(flag))"
            case .contains: sql = "\(PredicateSQLFunction.contains)(\(value), \(patternSQL), \(flag))"
            default: sql = "\(PredicateSQLFunction.like)(\(patternSQL), \(value), \(flag))"
            }
            return (sql, .test(column, .text(op, pattern, foldCase: foldCase)))
        }
        let value = try convert(comparison.value, for: column)
        if foldCase {
            guard case .text(let string) = value else {
                throw FetchPredicateError(.wrongType, "[c] needs a string value for \(describe(column))")
            }
            let folded = "\(PredicateSQLFunction.foldKey)(CAST(\(name) AS BLOB))"
            let operand = "\(PredicateSQLFunction.foldKey)(\(functionOperand(string)))"
            let test = CompiledPredicate.Test.compare(op, .blob(PredicateText.foldKey(string)), foldCase: true)
            switch op {
            case .notEqual:
                return ("NOT (\(name) IS NOT NULL AND \(folded) = \(operand))", .test(column, test))
            default:
                return ("(\(name) IS NOT NULL AND \(folded) \(op.sqlSymbol) \(operand))", .test(column, test))
            }
        }
        let operand = bind(value)
        let test = CompiledPredicate.Test.compare(op, value, foldCase: false)
        if case .toOne(_, let destination) = column.source, op == .equal || op == .notEqual {
            // Through the column's index: the rows whose key is the destination's (none when it does not exist).
            let key = column.columnSQL
            let sql =
                "(\(key) IS NOT NULL AND \(key) IN (SELECT \(SQLText.rowKey) FROM \(SQLText.quote(destination)) "
                + "WHERE \"id\" = \(operand)))"
            return (op == .equal ? sql : "NOT \(sql)", .test(column, test))
        }
        switch op {
        case .equal: return ("\(name) IS \(operand)", .test(column, test))
        case .notEqual: return ("\(name) IS NOT \(operand)", .test(column, test))
        default: return ("(\(name) IS NOT NULL AND \(name) \(op.sqlSymbol) \(operand))", .test(column, test))
        }
    }

    private mutating func compileIn(_ column: PropertyColumn, _ items: [PredicateValue], foldCase: Bool) throws
        -> (String, Node)
    {
        guard !items.isEmpty else { return ("0", .constant(false)) }
        let values = try items.map { item -> SQLValue in
            switch item {
            case .null:
                throw FetchPredicateError(
                    .wrongType, "an IN list cannot hold nil (key \(describe(column))); use == nil OR ... IN ...")
            case .list:
                throw FetchPredicateError(.wrongType, "lists cannot be nested (key \(describe(column)))")
            default:
                return try convert(item, for: column)
            }
        }
        let name = column.sql
        if foldCase {
            var keys = Set<SQLValue>()
            var operands: [String] = []
            for value in values {
                guard case .text(let string) = value else {
                    throw FetchPredicateError(.wrongType, "[c] needs string values for \(describe(column))")
                }
                keys.insert(.blob(PredicateText.foldKey(string)))
                operands.append("\(PredicateSQLFunction.foldKey)(\(functionOperand(string)))")
            }
            let folded = "\(PredicateSQLFunction.foldKey)(CAST(\(name) AS BLOB))"
            return (
                "(\(name) IS NOT NULL AND \(folded) IN (\(operands.joined(separator: ", "))))",
                .test(column, .oneOf(keys, foldCase: true))
            )
        }
        let operands = values.map { bind($0) }
        return (
            "(\(name) IS NOT NULL AND \(name) IN (\(operands.joined(separator: ", "))))",
            .test(column, .oneOf(Set(values), foldCase: false))
        )
    }

    // MARK: - Values

    /// Checks a value against the column's type and converts it to what SQLite compares.
    private func convert(_ value: PredicateValue, for column: PropertyColumn) throws -> SQLValue {
        func refuse(_ detail: String = "") -> FetchPredicateError {
            FetchPredicateError(
                .wrongType, "cannot compare \(describe(column)) with \(value.typeNameWithArticle) value\(detail)")
        }
        func number(_ double: Double) throws -> SQLValue {
            guard !double.isNaN else { throw refuse(" (NaN cannot be compared)") }
            return .real(double)
        }
        switch column.source {
        case .toOne:
            guard case .uuid(let uuid) = value else { throw refuse(" (use an ObjectID or UUID)") }
            return .blob(uuid.bytes)
        case .attribute(_, let type):
            switch (type, value) {
            case (.string, .string(let string)): return .text(string)
            case (.int, .int(let integer)): return .integer(integer)
            case (.int, .double(let double)):
                guard let integer = Int64(exactly: double) else { throw refuse(" (\(double) is not a whole number)") }
                return .integer(integer)
            case (.double, .int(let integer)), (.date, .int(let integer)): return .real(Double(integer))
            case (.double, .double(let double)), (.date, .double(let double)): return try number(double)
            case (.date, .date(let date)): return try number(date.timeIntervalSince1970)
            case (.bool, .bool(let bool)): return .integer(bool ? 1 : 0)
            case (.bool, .int(let integer)) where integer == 0 || integer == 1: return .integer(integer)
            case (.data, .data(let data)): return .blob(data)
            case (.uuid, .uuid(let uuid)): return .blob(uuid.bytes)
            default: throw refuse()
            }
        }
    }

    /// Binds a value and returns its SQL operand. Text containing NUL is bound as a blob and cast back (GRDB binds
    /// text as a C string, which would cut it at the NUL); an empty blob is bound as empty text and cast (an empty
    /// `Data` may bind as NULL).
    private mutating func bind(_ value: SQLValue) -> String {
        switch value {
        case .text(let string) where string.utf8.contains(0):
            arguments.append(.blob(Data(string.utf8)))
            return "CAST(? AS TEXT)"
        case .blob(let data) where data.isEmpty:
            arguments.append(.text(""))
            return "CAST(? AS BLOB)"
        default:
            arguments.append(value)
            return "?"
        }
    }

    /// Binds a string for one of Tributary's SQL functions, which read text or blobs: text unless it holds a NUL.
    private mutating func functionOperand(_ string: String) -> String {
        arguments.append(string.utf8.contains(0) ? .blob(Data(string.utf8)) : .text(string))
        return "?"
    }

    private func describe(_ column: PropertyColumn) -> String {
        "\(column.typeDescription) '\(entity.name).\(column.name)'"
    }
}
