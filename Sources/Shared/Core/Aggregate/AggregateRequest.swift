/// A fetch of groups and their aggregates (Core Data's fetch request with the dictionary result type,
/// `propertiesToGroupBy`, `NSExpressionDescription`s and `havingPredicate`): one row per group of the objects that
/// match, holding the group's key values and the aggregates of its objects. The store computes it in one SQL query
/// on a reader; no object is loaded.
///
/// ```swift
/// // Open pull requests per author: how many, and their additions.
/// let request = AggregateRequest(
///     entity: "PullRequest", predicate: try FetchPredicate(format: "state == 'open'"),
///     groupBy: ["author.login"], aggregates: [.count(), .sum("additions")],
///     having: try FetchPredicate(format: "count > 2"), sortedBy: [FetchSort("sum_additions", ascending: false)])
/// for row in try await client.aggregate(request).rows {
///     print(row["author.login"] ?? "nil", row["count"]!, row["sum_additions"]!)
/// }
/// ```
///
/// Without `groupBy` there is one row over every matching object, even when none matches (its count and sums 0,
/// its averages, minimums and maximums nil).
public struct AggregateRequest: Sendable, Hashable {
    /// The entity whose objects are grouped.
    public var entity: String
    /// Which objects; nil groups every object of the entity.
    public var predicate: FetchPredicate?
    /// The keys whose values make a group: attributes, to-one relationships (a group per destination, its id as
    /// the key's value) or key paths through to-one relationships (`author.login`). Objects whose key is nil (or
    /// reach no object on the way) form a group of their own, as SQL's `GROUP BY` makes them.
    public var groupBy: [String]
    /// The aggregates each row holds, after the group's keys.
    public var aggregates: [AggregateExpression]
    /// Which groups are kept (Core Data's `havingPredicate`): a predicate over the row's names, naming at least one
    /// aggregate (a condition on the objects alone belongs in ``predicate``).
    public var having: FetchPredicate?
    /// The rows' order, by the names of group keys and aggregates; rows equal on every key are ordered by their
    /// group keys, ascending.
    public var sortDescriptors: [FetchSort]
    /// At most this many rows; 0 for no limit (a reply holds at most 100,000 rows).
    public var fetchLimit: Int
    /// Rows to skip first.
    public var fetchOffset: Int

    /// A request for the groups of `entity`'s objects matching `predicate` by the values of `groupBy`, each with
    /// `aggregates`, those that satisfy `having`, in the order of `sortDescriptors`, `limit` of them (0: all) after
    /// skipping `offset`.
    public init(
        entity: String, predicate: FetchPredicate? = nil, groupBy: [String] = [],
        aggregates: [AggregateExpression], having: FetchPredicate? = nil, sortedBy sortDescriptors: [FetchSort] = [],
        limit: Int = 0, offset: Int = 0
    ) {
        self.entity = entity
        self.predicate = predicate
        self.groupBy = groupBy
        self.aggregates = aggregates
        self.having = having
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = limit
        self.fetchOffset = offset
    }

    /// The names of a row's values, in order: the group keys, then the aggregates.
    public var columnNames: [String] { groupBy + aggregates.map(\.name) }
}

/// One aggregate of a group (Core Data's `NSExpressionDescription` of a function expression): a function of a key
/// of the group's objects, under a name.
public struct AggregateExpression: Sendable, Hashable {
    /// The function.
    public var function: AggregateFunction
    /// The key its values come from: an attribute, a key path through to-one relationships (`author.followers`), or
    /// a to-many relationship's `@count` (`reviewers.@count`). Nil only for ``AggregateFunction/count``: the number
    /// of objects.
    public var key: String?
    /// The row's name for the value: in results, in `having` and in sorts.
    public var name: String

    /// `function` of `key` (nil: the objects themselves, for a count), named `name`, or by default `count` for
    /// the count of objects and `function_key` otherwise, dots as underscores (`sum_additions`,
    /// `max_author_followers`, `avg_reviewers_count` for `reviewers.@count`).
    public init(_ function: AggregateFunction, _ key: String? = nil, as name: String? = nil) {
        self.function = function
        self.key = key
        self.name = name ?? Self.defaultName(function, key)
    }

    /// The number of objects in the group (Core Data's `count:` of the evaluated object), or of those whose `key`
    /// is not nil.
    public static func count(_ key: String? = nil, as name: String? = nil) -> Self { Self(.count, key, as: name) }
    /// The sum of `key`'s values: an int for an int attribute or a `@count`, a double for a double attribute.
    public static func sum(_ key: String, as name: String? = nil) -> Self { Self(.sum, key, as: name) }
    /// The mean of `key`'s values, as a double.
    public static func avg(_ key: String, as name: String? = nil) -> Self { Self(.avg, key, as: name) }
    /// The smallest of `key`'s values, of the attribute's type.
    public static func min(_ key: String, as name: String? = nil) -> Self { Self(.min, key, as: name) }
    /// The largest of `key`'s values, of the attribute's type.
    public static func max(_ key: String, as name: String? = nil) -> Self { Self(.max, key, as: name) }

    /// `count`, or `function_key` with the key's dots and `@` as underscores and letters (`sum_reviewers_count`).
    static func defaultName(_ function: AggregateFunction, _ key: String?) -> String {
        guard let key else { return function.rawValue }
        let words = key.split(separator: ".").map { $0.hasPrefix("@") ? String($0.dropFirst()) : String($0) }
        return ([function.rawValue] + words).joined(separator: "_")
    }
}
