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
    /// - `[c]`, `[d]`, `[cd]` only on string attributes;
    /// - key paths (`author.login`) need `model`; a path through a to-many relationship needs `ANY`, `ALL` or `NONE`,
    ///   which need one; `@count` follows a to-many relationship and compares as an int.
    ///
    /// A key path compiles to an `EXISTS` subquery over the rows the path reaches, each step's row keys a set built
    /// from the previous step's (`NOT EXISTS` for `ALL`, `NONE` and tests that hold for NULL). A to-one path that
    /// breaks at a nil relationship compares as a nil value; under `ANY`, `ALL` and `NONE` a branch that breaks
    /// reaches no value.
    /// - Throws: ``FetchPredicateError``: `unknownKey`, `unsupported`, `wrongType`, `tooComplex`.
    package func compile(for entity: Entity, in model: Model? = nil) throws -> CompiledPredicate {
        try checkLimits()
        var compiler = PredicateCompiler(entity: entity, model: model)
        let (tree, root) = try compiler.compile(self)
        let (sql, arguments) = tree.rendered()
        guard sql.utf8.count <= PredicateLimits.maxSQLLength else {
            throw FetchPredicateError.tooComplex(
                "the predicate compiles to more than \(PredicateLimits.maxSQLLength) bytes of SQL")
        }
        return CompiledPredicate(
            sql: sql, arguments: arguments, root: root, relationshipPaths: compiler.relationshipPaths)
    }
}

/// Compiles a predicate for one entity: each comparison to a SQL leaf with its bound values, and the whole to an
/// in-memory condition.
struct PredicateCompiler {
    typealias Node = CompiledPredicate.Node

    let entity: Entity
    /// The model key paths are resolved in; nil refuses them.
    let model: Model?
    /// The values bound by the comparison being compiled, in the order of its `?`.
    private var arguments: [SQLValue] = []
    /// The relationship sequences the key paths compiled so far follow (for in-memory evaluation's loading).
    private(set) var relationshipPaths: [[PredicateHop]] = []
    /// The number of table aliases written so far, so every joined table gets its own.
    private var aliases = 0

    init(entity: Entity, model: Model?) {
        self.entity = entity
        self.model = model
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
        let path: PredicateKeyPath
        // A name with dots that is the entity's own (a grouped row's `author.login`) is no key path; a model's
        // names never hold one.
        let isOwnName = comparison.key.contains(".") && entity.attributes.contains { $0.name == comparison.key }
        if (comparison.key.contains(".") && !isOwnName) || (comparison.quantifier != .direct && model != nil) {
            guard let model else {
                throw FetchPredicateError(
                    .unsupported,
                    "key paths such as \(FetchPredicateError.quoted(comparison.key)) need the model to be compiled")
            }
            path = try model.keyPath(comparison.key, from: entity, use: "compared")
        } else {
            path = PredicateKeyPath(hops: [], end: try entity.column(forKey: comparison.key, use: "compared"))
        }
        let quantifier = comparison.quantifier
        if path.crossesToMany && quantifier == .direct {
            let hop = path.hops.first(where: \.isToMany)!
            throw FetchPredicateError(
                .unsupported,
                "'\(hop.source).\(hop.name)' is a to-many relationship, so \(FetchPredicateError.quoted(comparison.key)) "
                    + "reaches many values: write ANY, ALL or NONE before it")
        }
        if !path.crossesToMany && quantifier != .direct {
            throw FetchPredicateError(
                .unsupported,
                "\(quantifier.formatWord) needs a key path through a to-many relationship; "
                    + "\(FetchPredicateError.quoted(comparison.key)) reaches one value")
        }
        if !path.relationshipSequence.isEmpty { relationshipPaths.append(path.relationshipSequence) }
        guard !path.hops.isEmpty else {
            let (sql, test) = try compileTest(comparison, path.end)
            return (sql, .test(path.end, test))
        }
        // The row keys each hop reaches, as a set built from the previous hop's (an IN list or subquery), so a
        // path through several to-many relationships costs the distinct objects of each step, never the product
        // of their fan-outs; the comparison runs on the last hop's rows.
        let root = SQLText.quote(entity.name)
        var reached = ""
        var source = entity.name
        for (index, hop) in path.hops.enumerated() {
            let alias = nextAlias()
            if hop.isToMany {
                let join = "\(SQLText.quote(SQLText.joinTable(hop.source, hop.name))) AS \(alias)"
                let from = index == 0 ? "= \(root).\(SQLText.rowKey)" : "IN \(reached)"
                reached = "(SELECT \(alias).destination FROM \(join) WHERE \(alias).source \(from))"
            } else if index == 0 {
                reached = "(\(root).\(SQLText.quote(hop.name)))"
            } else {
                reached =
                    "(SELECT \(alias).\(SQLText.quote(hop.name)) FROM \(SQLText.quote(source)) AS \(alias) "
                    + "WHERE \(alias).\(SQLText.rowKey) IN \(reached))"
            }
            source = hop.destination
        }
        let owner = nextAlias()
        let from = "FROM \(SQLText.quote(source)) AS \(owner)"
        let correlation = "\(owner).\(SQLText.rowKey) IN \(reached)"
        var end = path.end
        end.qualifier = owner
        let (leaf, test) = try compileTest(comparison, end)
        // Every leaf is NULL-free, so NOT inside the subquery is exact.
        let exists = "EXISTS (SELECT 1 \(from) WHERE \(correlation) AND \(leaf))"
        let notExistsFailing = "NOT EXISTS (SELECT 1 \(from) WHERE \(correlation) AND NOT \(leaf))"
        let sql: String
        switch quantifier {
        case .direct: sql = test.evaluate(.null) ? notExistsFailing : exists
        case .any: sql = exists
        case .all: sql = notExistsFailing
        case .none: sql = "NOT " + exists
        }
        return (sql, .path(path, quantifier, test))
    }

    private mutating func nextAlias() -> String {
        aliases += 1
        return "\"tributary_p\(aliases)\""
    }

    /// A comparison of one column (of the fetched row, or of a row a key path joined): its NULL-free SQL and the
    /// same test for values in memory.
    private mutating func compileTest(_ comparison: FetchPredicate.Comparison, _ column: PropertyColumn) throws
        -> (String, CompiledPredicate.Test)
    {
        let op = comparison.op
        if comparison.value == .null {
            // A to-one's key column is NULL exactly when its destination is: tested without reading the destination.
            let name = column.isToOne ? column.columnSQL : column.sql
            switch op {
            case .equal: return ("\(name) IS NULL", .isNull(true))
            case .notEqual: return ("\(name) IS NOT NULL", .isNull(false))
            default:
                throw FetchPredicateError(
                    .wrongType,
                    "\(describe(column)) can only be compared with nil using == or !=, not \(op.formatSymbol)")
            }
        }
        let name = column.sql
        let folding = PredicateText.Folding(
            caseInsensitive: comparison.caseInsensitive, diacriticInsensitive: comparison.diacriticInsensitive)
        let foldCase = !folding.isEmpty
        let modifier =
            "[" + (comparison.caseInsensitive ? "c" : "") + (comparison.diacriticInsensitive ? "d" : "") + "]"
        if foldCase && !column.isString {
            throw FetchPredicateError(
                .wrongType, "\(modifier) needs a string attribute; \(describe(column)) is not one")
        }
        if op == .in {
            let items: [PredicateValue]
            if case .list(let values) = comparison.value { items = values } else { items = [comparison.value] }
            return try compileIn(column, items, folding: folding)
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
            let flag = String(folding.rawValue)
            let sql: String
            switch op {
            case .beginsWith: sql = "\(PredicateSQLFunction.beginsWith)(\(value), \(patternSQL), \(flag))"
            case .endsWith: sql = "\(PredicateSQLFunction.endsWith)(\(value), \(patternSQL), \(flag))"
            case .contains: sql = "\(PredicateSQLFunction.contains)(\(value), \(patternSQL), \(flag))"
            default: sql = "\(PredicateSQLFunction.like)(\(patternSQL), \(value), \(flag))"
            }
            return (sql, .text(op, pattern, folding: folding))
        }
        let value = try convert(comparison.value, for: column)
        if foldCase {
            guard case .text(let string) = value else {
                throw FetchPredicateError(.wrongType, "\(modifier) needs a string value for \(describe(column))")
            }
            let folded = "\(PredicateSQLFunction.foldKey)(CAST(\(name) AS BLOB), \(folding.rawValue))"
            let operand = "\(PredicateSQLFunction.foldKey)(\(functionOperand(string)), \(folding.rawValue))"
            let test = CompiledPredicate.Test.compare(
                op, .blob(PredicateText.foldKey(string, folding)), folding: folding)
            switch op {
            case .notEqual:
                return ("NOT (\(name) IS NOT NULL AND \(folded) = \(operand))", test)
            default:
                return ("(\(name) IS NOT NULL AND \(folded) \(op.sqlSymbol) \(operand))", test)
            }
        }
        let test = CompiledPredicate.Test.compare(op, value, folding: [])
        if case .toOne(_, let destination) = column.source, op == .equal || op == .notEqual {
            // Through the relationship's inverse index: the rows that point to the destination (none when it does
            // not exist). The operand is bound once for each half of the index.
            let sources = SQLText.inverseSources(column.table, column.name, ofObjectIn: destination) { bind(value) }
            let sql = "(\(column.rowKeySQL) IN (\(sources)))"
            return (op == .equal ? sql : "NOT \(sql)", test)
        }
        let operand = bind(value)
        switch op {
        case .equal: return ("\(name) IS \(operand)", test)
        case .notEqual: return ("\(name) IS NOT \(operand)", test)
        default: return ("(\(name) IS NOT NULL AND \(name) \(op.sqlSymbol) \(operand))", test)
        }
    }

    private mutating func compileIn(_ column: PropertyColumn, _ items: [PredicateValue], folding: PredicateText.Folding)
        throws -> (String, CompiledPredicate.Test)
    {
        guard !items.isEmpty else { return ("0", .oneOf([], folding: [])) }
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
        if !folding.isEmpty {
            var keys = Set<SQLValue>()
            var operands: [String] = []
            for value in values {
                guard case .text(let string) = value else {
                    throw FetchPredicateError(.wrongType, "[c] and [d] need string values for \(describe(column))")
                }
                keys.insert(.blob(PredicateText.foldKey(string, folding)))
                operands.append("\(PredicateSQLFunction.foldKey)(\(functionOperand(string)), \(folding.rawValue))")
            }
            let folded = "\(PredicateSQLFunction.foldKey)(CAST(\(name) AS BLOB), \(folding.rawValue))"
            return (
                "(\(name) IS NOT NULL AND \(folded) IN (\(operands.joined(separator: ", "))))",
                .oneOf(keys, folding: folding)
            )
        }
        let operands = values.map { bind($0) }
        return (
            "(\(name) IS NOT NULL AND \(name) IN (\(operands.joined(separator: ", "))))",
            .oneOf(Set(values), folding: [])
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
        guard let type = column.valueType else {
            guard case .uuid(let uuid) = value else { throw refuse(" (use an ObjectID or UUID)") }
            return .blob(uuid.bytes)
        }
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
        "\(column.typeDescription) '\(column.table).\(column.displayName)'"
    }
}
