import Foundation

/// A fetch's order checked against an entity: the SQL `ORDER BY` list and the same order for objects in memory.
///
/// Both order as SQLite does: NULL first ascending and last descending, numbers numerically, strings by UTF-8
/// bytes, data and ids by bytes; then by id ascending, so the order is total.
package struct CompiledSort: Sendable {
    /// One sort key.
    struct Key: Sendable {
        let column: PropertyColumn
        let ascending: Bool
    }

    /// The `ORDER BY` list without the words `ORDER BY`, always ending with `"id"`: e.g. `"created" DESC, "id"`.
    package let sql: String
    let keys: [Key]

    /// Whether the object `lhs` comes before `rhs`: `values` by attribute index, `toOne` by relationship index.
    func areInIncreasingOrder(
        _ lhs: (id: UUID, values: [AttributeValue?], toOne: [UUID?]),
        _ rhs: (id: UUID, values: [AttributeValue?], toOne: [UUID?])
    ) -> Bool {
        for key in keys {
            let order = SQLValue.compare(
                key.column.value(values: lhs.values, toOne: lhs.toOne),
                key.column.value(values: rhs.values, toOne: rhs.toOne))
            if order != 0 { return key.ascending ? order < 0 : order > 0 }
        }
        return withUnsafeBytes(of: lhs.id.uuid) { a in
            withUnsafeBytes(of: rhs.id.uuid) { b in SQLValue.compareRaw(a, b) < 0 }
        }
    }
}

extension Array where Element == FetchSort {
    /// Checks the sort keys against `entity` and compiles them.
    /// - Throws: ``FetchPredicateError``: `unknownKey`, `unsupported` (key paths, to-many relationships), `tooComplex`
    ///   (more than ``PredicateLimits/maxSortKeys`` keys).
    package func compile(for entity: Entity) throws -> CompiledSort {
        guard count <= PredicateLimits.maxSortKeys else {
            throw FetchPredicateError.tooComplex(
                "the sort has \(count) keys; at most \(PredicateLimits.maxSortKeys) are allowed")
        }
        let keys = try map { sort in
            CompiledSort.Key(column: try entity.column(forKey: sort.key, use: "sorted by"), ascending: sort.ascending)
        }
        let terms = keys.map { $0.ascending ? $0.column.sql : "\($0.column.sql) DESC" } + [SQLText.quote("id")]
        return CompiledSort(sql: terms.joined(separator: ", "), keys: keys)
    }
}
