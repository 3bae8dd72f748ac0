import Foundation

/// A fetch's order checked against an entity: the SQL `ORDER BY` list and the same order for objects in memory.
///
/// Both order as SQLite does: NULL first ascending and last descending, numbers numerically, strings by UTF-8
/// bytes, data and ids by bytes; then by id ascending, so the order is total.
package struct CompiledSort: Sendable {
    /// One sort key: a property of the fetched object, or one reached through to-one relationships.
    struct Key: Sendable {
        let path: PredicateKeyPath
        let ascending: Bool

        /// The key's value for `subject`: nil when a relationship on the way is.
        func value(of subject: PredicateSubject, resolver: any PredicateResolver) -> SQLValue {
            path.singleValue(of: subject, resolver: resolver)
        }

        /// The key's value for `subject` as the model types it: a to-one relationship's destination as its id, a
        /// `@count` as an int; nil when it is NULL or a relationship on the way is.
        func attributeValue(of subject: PredicateSubject, resolver: any PredicateResolver) -> AttributeValue? {
            let end = path.hops.isEmpty ? subject : path.reached(from: subject, resolver: resolver).first
            guard let end else { return nil }
            switch path.end.source {
            case .attribute(let index, _):
                return end.values.indices.contains(index) ? end.values[index] : nil
            case .toOne(let index, _):
                return end.toOne.indices.contains(index) ? end.toOne[index].map { .uuid($0) } : nil
            case .count:
                guard case .integer(let count) = path.end.value(of: end, resolver: resolver) else { return nil }
                return .int(count)
            case .identity:
                return .uuid(end.id)
            case .aggregate(let aggregate):
                return AttributeValue(path.end.value(of: end, resolver: resolver), type: aggregate.resultType)
            }
        }
    }

    /// The `ORDER BY` list without the words `ORDER BY`, always ending with `"id"`: e.g. `"created" DESC, "id"`.
    package let sql: String
    let keys: [Key]

    /// The relationship sequences the keys follow, for a context to load what they reach before sorting.
    package var relationshipPaths: [[PredicateHop]] {
        keys.map(\.path.relationshipSequence).filter { !$0.isEmpty }
    }

    /// The first key's value for `subject` (see ``Key/attributeValue(of:resolver:)``): a live result's section.
    func firstKeyValue(of subject: PredicateSubject, resolver: any PredicateResolver) -> AttributeValue? {
        keys.first?.attributeValue(of: subject, resolver: resolver)
    }

    /// Whether the object `lhs` comes before `rhs`: `values` by attribute index, `toOne` by relationship index.
    /// Keys through relationships find nothing this way: use ``areInIncreasingOrder(_:_:resolver:)`` for them.
    func areInIncreasingOrder(
        _ lhs: (id: UUID, values: [AttributeValue?], toOne: [UUID?]),
        _ rhs: (id: UUID, values: [AttributeValue?], toOne: [UUID?])
    ) -> Bool {
        areInIncreasingOrder(
            PredicateSubject(id: lhs.id, values: lhs.values, toOne: lhs.toOne, toMany: []),
            PredicateSubject(id: rhs.id, values: rhs.values, toOne: rhs.toOne, toMany: []),
            resolver: NoPredicateResolver())
    }

    /// Whether `lhs` comes before `rhs`, reading keys through relationships from the objects `resolver` finds.
    func areInIncreasingOrder(
        _ lhs: PredicateSubject, _ rhs: PredicateSubject, resolver: any PredicateResolver
    ) -> Bool {
        for key in keys {
            let order = SQLValue.compare(key.value(of: lhs, resolver: resolver), key.value(of: rhs, resolver: resolver))
            if order != 0 { return key.ascending ? order < 0 : order > 0 }
        }
        return withUnsafeBytes(of: lhs.id.uuid) { a in
            withUnsafeBytes(of: rhs.id.uuid) { b in SQLValue.compareRaw(a, b) < 0 }
        }
    }
}

extension Array where Element == FetchSort {
    /// Checks the sort keys against `entity` and compiles them. With `model`, a key may be a path through to-one
    /// relationships (`author.login`, nil sorting first ascending when a relationship on the way is), or a
    /// to-many relationship's `@count`.
    /// - Throws: ``FetchPredicateError``: `unknownKey`, `unsupported` (paths through to-many relationships, to-many
    ///   relationships themselves), `tooComplex` (more than ``PredicateLimits/maxSortKeys`` keys).
    package func compile(for entity: Entity, in model: Model? = nil) throws -> CompiledSort {
        guard count <= PredicateLimits.maxSortKeys else {
            throw FetchPredicateError.tooComplex(
                "the sort has \(count) keys; at most \(PredicateLimits.maxSortKeys) are allowed")
        }
        var terms: [String] = []
        var keys: [CompiledSort.Key] = []
        for (index, sort) in enumerated() {
            let path: PredicateKeyPath
            if sort.key.contains("."), let model {
                path = try model.keyPath(sort.key, from: entity, use: "sorted by")
                if let hop = path.hops.first(where: \.isToMany) {
                    throw FetchPredicateError(
                        .unsupported,
                        "'\(hop.source).\(hop.name)' is a to-many relationship, so \(FetchPredicateError.quoted(sort.key)) "
                            + "has many values and cannot be sorted by; sort by \(hop.name).@count instead")
                }
            } else {
                path = PredicateKeyPath(hops: [], end: try entity.column(forKey: sort.key, use: "sorted by"))
            }
            let term = Self.sql(path, entity: entity, alias: "\"tributary_s\(index)_")
            terms.append(sort.ascending ? term : "\(term) DESC")
            keys.append(CompiledSort.Key(path: path, ascending: sort.ascending))
        }
        terms.append(SQLText.quote("id"))
        return CompiledSort(sql: terms.joined(separator: ", "), keys: keys)
    }

    /// A key's value in SQL: its column, or for a path a scalar subquery joining its to-one relationships (NULL when
    /// one on the way is), its tables aliased from `prefix` (a quote, then a name).
    static func sql(_ path: PredicateKeyPath, entity: Entity, alias prefix: String) -> String {
        guard !path.hops.isEmpty else { return path.end.sql }
        var owner = SQLText.quote(entity.name)
        var from = ""
        var correlation = ""
        for (index, hop) in path.hops.enumerated() {
            let alias = "\(prefix)\(index)\""
            let link = "\(alias).\(SQLText.rowKey) = \(owner).\(SQLText.quote(hop.name))"
            if from.isEmpty {
                from = "FROM \(SQLText.quote(hop.destination)) AS \(alias)"
                correlation = link
            } else {
                from += " JOIN \(SQLText.quote(hop.destination)) AS \(alias) ON \(link)"
            }
            owner = alias
        }
        var end = path.end
        end.qualifier = owner
        return "(SELECT \(end.sql) \(from) WHERE \(correlation))"
    }
}
