import Foundation

extension CompiledAggregate {
    /// The rows the request gives over `objects` in memory, as the store's query gives them over its rows: the
    /// objects matching the predicate grouped by their key values (as `GROUP BY` groups SQLite's values), the
    /// aggregates computed, the groups filtered by having, ordered, and paged.
    /// - Throws: ``AggregateError/overflow`` when a sum of ints overflows, as the store's query does.
    package func rows(of objects: some Sequence<PredicateSubject>, resolver: any PredicateResolver) throws
        -> [AggregateRow]
    {
        var groups: [[SQLValue]: [[SQLValue]]] = [:]
        for object in objects where predicate?.evaluate(object, resolver: resolver) ?? true {
            let key = groupKeys.map { $0.path.singleValue(of: object, resolver: resolver) }
            let values = aggregates.map { $0.key?.path.singleValue(of: object, resolver: resolver) ?? .integer(1) }
            groups[key, default: []].append(values)
        }
        if groupKeys.isEmpty && groups.isEmpty { groups[[]] = [] }
        var rows: [[SQLValue]] = []
        for (key, members) in groups {
            var row = key
            for (index, aggregate) in aggregates.enumerated() {
                row.append(
                    try aggregate.function.apply(
                        to: members.lazy.map { $0[index] }, type: aggregate.key?.type ?? .int))
            }
            rows.append(row)
        }
        return page(rows)
    }

    /// `rows` (SQLite's values in row order) filtered by having, ordered and paged, as the outer query does.
    func page(_ rows: [[SQLValue]]) -> [AggregateRow] {
        let types = columnTypes
        let names = request.columnNames
        var kept = rows.map { row in zip(row, types).map { AttributeValue($0, type: $1) } }
        if let having {
            kept = kept.filter { having.evaluate(values: $0, toOne: []) }
        }
        kept.sort { lhs, rhs in
            for (index, ascending) in order {
                let comparison = SQLValue.compare(
                    SQLValue(lhs[index], columnType: types[index]), SQLValue(rhs[index], columnType: types[index]))
                if comparison != 0 { return ascending ? comparison < 0 : comparison > 0 }
            }
            return false
        }
        let offset = min(max(0, request.fetchOffset), kept.count)
        let end = request.fetchLimit > 0 ? min(kept.count, offset + request.fetchLimit) : kept.count
        return kept[offset..<end].map { AggregateRow(names: names, values: $0, groupKeyCount: groupKeys.count) }
    }
}
