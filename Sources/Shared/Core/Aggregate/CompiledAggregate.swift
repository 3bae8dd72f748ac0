import Foundation

/// An aggregate request checked against the model: one SQL query with bound values, and the same computation for
/// objects in memory. Both give the same rows.
///
/// The query groups the matching objects in a subquery, each row's values under its names, and filters, orders
/// and pages the groups outside it:
/// `SELECT * FROM (SELECT key AS "name", …, SUM(…) AS "sum_x" FROM "Entity" WHERE … GROUP BY …) WHERE having
/// ORDER BY … LIMIT ? OFFSET ?`.
package struct CompiledAggregate: Sendable {
    /// One group key or aggregate argument: a key path of the entity through to-one relationships.
    struct Key: Sendable {
        let path: PredicateKeyPath
        /// The type of its values.
        let type: AttributeType
    }

    /// One aggregate of a row.
    struct Aggregate: Sendable {
        let function: AggregateFunction
        /// The key whose values it takes; nil for the count of objects.
        let key: Key?
        /// The type of its result.
        let type: AttributeType
    }

    /// The request, as asked.
    package let request: AggregateRequest
    let entity: Entity
    let groupKeys: [Key]
    let aggregates: [Aggregate]
    let predicate: CompiledPredicate?
    /// The having predicate, over the row's names (``rowEntity``).
    let having: CompiledPredicate?
    /// The order: each by the index of a row's value.
    let order: [(index: Int, ascending: Bool)]
    /// The query, with its `?` for the values of ``arguments``, then the limit and the offset.
    package let sql: String
    package let arguments: [SQLValue]

    /// The types of a row's values, in order: the group keys', then the aggregates'.
    package var columnTypes: [AttributeType] { groupKeys.map(\.type) + aggregates.map(\.type) }
}

extension AggregateRequest {
    /// Checks the request against `model` and compiles it.
    /// - Throws: ``FetchPredicateError``: `unknownKey` (a key or name the entity or the row lacks), `wrongType` (a
    ///   function of a type it does not take, as `@sum` of a string), `unsupported` (a key through a to-many
    ///   relationship), `syntax` (no aggregate, a name used twice, a count's key missing where needed, a having
    ///   predicate naming no aggregate), `tooComplex`; and what ``FetchPredicate/compile(for:in:)`` throws for the
    ///   predicates.
    package func compile(in model: Model) throws -> CompiledAggregate {
        guard let entity = model.entity(named: self.entity) else {
            throw FetchPredicateError(.unknownKey, "the model has no entity named '\(self.entity)'")
        }
        try checkShape()
        let groupKeys = try groupBy.map { try Self.key($0, of: entity, in: model, use: "grouped by") }
        let aggregates = try self.aggregates.map { expression -> CompiledAggregate.Aggregate in
            guard let name = expression.key else {
                return .init(function: .count, key: nil, type: .int)
            }
            let key = try Self.key(name, of: entity, in: model, use: "aggregated")
            // A to-one relationship's values are ids (type uuid): only counted.
            guard expression.function.accepts(key.type) else {
                let what = key.path.end.isToOne ? "a to-one relationship" : "a \(key.type.rawValue) value"
                throw FetchPredicateError(
                    .wrongType,
                    "\(expression.function.rawValue) of \(FetchPredicateError.quoted(name)) is not possible: "
                        + "\(expression.function.rawValue) takes \(expression.function.acceptedTypes), and "
                        + "\(FetchPredicateError.quoted(name)) is \(what)")
            }
            return .init(function: expression.function, key: key, type: expression.function.resultType(over: key.type))
        }
        let predicate = try self.predicate.map { try $0.compile(for: entity, in: model) }
        let names = columnNames
        let types = groupKeys.map(\.type) + aggregates.map(\.type)
        let rowEntity = Self.rowEntity(names: names, types: types, of: entity)
        let having = try self.having.map { having -> CompiledPredicate in
            let named = having.keys
            guard named.contains(where: { self.aggregates.map(\.name).contains($0) }) else {
                throw FetchPredicateError(
                    .syntax,
                    "the having predicate names no aggregate (it names \(named.sorted().joined(separator: ", "))); "
                        + "a condition on the objects belongs in the predicate, one on groups names an aggregate: "
                        + self.aggregates.map(\.name).joined(separator: ", "))
            }
            do {
                return try having.compile(for: rowEntity)
            } catch let error as FetchPredicateError {
                throw FetchPredicateError(error.kind, "having: \(error.message)")
            }
        }
        var order: [(index: Int, ascending: Bool)] = []
        for sort in sortDescriptors {
            guard let index = names.firstIndex(of: sort.key) else {
                throw FetchPredicateError(
                    .unknownKey,
                    "the rows cannot be sorted by \(FetchPredicateError.quoted(sort.key)): a row holds "
                        + names.joined(separator: ", "))
            }
            order.append((index, sort.ascending))
        }
        for index in groupKeys.indices where !order.contains(where: { $0.index == index }) {
            order.append((index, true))
        }
        var arguments = predicate?.arguments ?? []
        let groupSQL = groupKeys.indices.map { Self.groupSQL(groupKeys[$0], entity: entity, index: $0) }
        var columns = zip(groupSQL, names).map { "\($0.0.select) AS \(SQLText.quote($0.1))" }
        for (index, aggregate) in aggregates.enumerated() {
            let value =
                aggregate.key.map { [FetchSort].sql($0.path, entity: entity, alias: "\"tributary_a\(index)_") }
                ?? "*"
            columns.append(
                "\(aggregate.function.sql(of: value)) AS \(SQLText.quote(names[groupKeys.count + index]))")
        }
        var sql =
            "SELECT * FROM (SELECT \(columns.joined(separator: ", ")) FROM \(SQLText.quote(entity.name)) "
            + "WHERE \(predicate?.sql ?? "1")"
        if !groupKeys.isEmpty { sql += " GROUP BY " + groupSQL.map(\.group).joined(separator: ", ") }
        sql += ") AS \"tributary_rows\" WHERE \(having?.sql ?? "1")"
        arguments += having?.arguments ?? []
        if !order.isEmpty {
            sql +=
                " ORDER BY "
                + order.map { SQLText.quote(names[$0.index]) + ($0.ascending ? "" : " DESC") }.joined(separator: ", ")
        }
        sql += " LIMIT ? OFFSET ?"
        return CompiledAggregate(
            request: self, entity: entity, groupKeys: groupKeys, aggregates: aggregates, predicate: predicate,
            having: having, order: order, sql: sql, arguments: arguments)
    }

    /// Checks what needs no model: at least one aggregate, names given once, limits.
    private func checkShape() throws {
        guard !aggregates.isEmpty || !groupBy.isEmpty else {
            throw FetchPredicateError(.syntax, "an aggregate request needs a group key or an aggregate")
        }
        guard groupBy.count <= PredicateLimits.maxSortKeys, aggregates.count <= PredicateLimits.maxAggregates else {
            throw FetchPredicateError.tooComplex(
                "an aggregate request may group by at most \(PredicateLimits.maxSortKeys) keys and hold at most "
                    + "\(PredicateLimits.maxAggregates) aggregates")
        }
        var seen = Set<String>()
        for name in columnNames {
            guard !name.isEmpty else { throw FetchPredicateError(.syntax, "an aggregate's name is empty") }
            guard seen.insert(name).inserted else {
                throw FetchPredicateError(
                    .syntax,
                    "the name \(FetchPredicateError.quoted(name)) is used twice in the row; name the aggregates "
                        + "apart (AggregateExpression's `as:`, the command's name=key)")
            }
        }
        for expression in aggregates where expression.key == nil && expression.function != .count {
            throw FetchPredicateError(
                .syntax, "\(expression.function.rawValue) needs a key: the attribute whose values it takes")
        }
        guard sortDescriptors.count <= PredicateLimits.maxSortKeys else {
            throw FetchPredicateError.tooComplex(
                "the sort has \(sortDescriptors.count) keys; at most \(PredicateLimits.maxSortKeys) are allowed")
        }
    }

    /// A group key or aggregate argument resolved against `entity`: not through a to-many relationship.
    private static func key(_ name: String, of entity: Entity, in model: Model, use: String) throws
        -> CompiledAggregate.Key
    {
        let path =
            name.contains(".")
            ? try model.keyPath(name, from: entity, use: use)
            : PredicateKeyPath(hops: [], end: try entity.column(forKey: name, use: use))
        if let hop = path.hops.first(where: \.isToMany) {
            throw FetchPredicateError(
                .unsupported,
                "'\(hop.source).\(hop.name)' is a to-many relationship, so \(FetchPredicateError.quoted(name)) has "
                    + "many values and cannot be \(use); use \(hop.name).@count, or "
                    + "\(hop.name).@sum.<attribute> and the like")
        }
        return .init(path: path, type: path.end.valueType ?? .uuid)
    }

    /// A group key's SQL: what the row selects, and what the query groups by. A to-one relationship groups by its
    /// row key column (an index on it serves) and selects its destination's id.
    private static func groupSQL(_ key: CompiledAggregate.Key, entity: Entity, index: Int)
        -> (select: String, group: String)
    {
        let select = [FetchSort].sql(key.path, entity: entity, alias: "\"tributary_g\(index)_")
        if key.path.hops.isEmpty && key.path.end.isToOne { return (select, key.path.end.columnSQL) }
        return (select, select)
    }

    /// The entity a grouped row is, for its having predicate: an attribute per name, of the value's type.
    private static func rowEntity(names: [String], types: [AttributeType], of entity: Entity) -> Entity {
        Entity(
            name: "\(entity.name) groups",
            attributes: zip(names, types).map { Attribute(name: $0, type: $1, isOptional: true) })
    }
}

extension PredicateLimits {
    /// The most aggregates one aggregate request holds.
    public static let maxAggregates = 32
}

extension FetchPredicate {
    /// The keys the predicate's comparisons name.
    var keys: Set<String> {
        switch self {
        case .constant: []
        case .comparison(let comparison): [comparison.key]
        case .and(let operands), .or(let operands): operands.reduce(into: []) { $0.formUnion($1.keys) }
        case .not(let operand): operand.keys
        }
    }
}
