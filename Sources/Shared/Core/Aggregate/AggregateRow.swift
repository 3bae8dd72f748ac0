/// One group of an aggregate fetch (Core Data's result dictionary): its key values, then its aggregates, each
/// under its name.
public struct AggregateRow: Sendable, Hashable {
    /// The names of ``values``, in order: the request's ``AggregateRequest/columnNames``.
    public let names: [String]
    /// The values: the group keys' (a to-one relationship's as its destination's id), then the aggregates'; nil for
    /// NULL.
    public let values: [AttributeValue?]
    /// How many of ``values`` are group keys.
    public let groupKeyCount: Int

    /// A row of `values` named by `names`, the first `groupKeyCount` of them its group's keys.
    public init(names: [String], values: [AttributeValue?], groupKeyCount: Int) {
        self.names = names
        self.values = values
        self.groupKeyCount = groupKeyCount
    }

    /// The value named `name`; nil when it is NULL or the row has no such name.
    public subscript(name: String) -> AttributeValue? {
        names.firstIndex(of: name).flatMap { values[$0] }
    }

    /// The group's key values, in the request's `groupBy` order.
    public var groupKey: [AttributeValue?] { Array(values.prefix(groupKeyCount)) }

    /// The row as Core Data gives it: a dictionary of the values that are not nil.
    public var dictionary: [String: AttributeValue] {
        var dictionary: [String: AttributeValue] = [:]
        for (name, value) in zip(names, values) { if let value { dictionary[name] = value } }
        return dictionary
    }
}

/// What an aggregate fetch answers: the rows, and the commit they were read at.
public struct AggregateResult: Sendable, Hashable {
    /// The names of each row's values: the request's ``AggregateRequest/columnNames``.
    public let names: [String]
    /// The groups, in the request's order.
    public let rows: [AggregateRow]
    /// The last commit the read saw (0 when computed in memory).
    public let seq: UInt64

    /// Rows of values named `names`, read at commit `seq`.
    public init(names: [String], rows: [AggregateRow], seq: UInt64) {
        self.names = names
        self.rows = rows
        self.seq = seq
    }
}
