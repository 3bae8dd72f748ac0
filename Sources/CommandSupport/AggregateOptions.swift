import ArgumentParser
import Foundation
import TributaryCore

/// `--group-by`, `--sum`, `--avg`, `--min`, `--max` and `--having` of `tributary fetch`, `tributary count` and
/// `tributary watch`: any of them turns the command into an aggregate fetch (docs/contexts.md#aggregates), one row
/// per group of the matching objects instead of the objects.
///
/// Each option repeats and takes comma-separated keys (`--sum additions,deletions`). The row holds the group keys in
/// the order given, then a count when the command counts (or when no function is named), then the sums, averages,
/// minimums and maximums in that order, each named as ``AggregateExpression`` names it (`sum_additions`).
public struct AggregateOptions: ParsableArguments {
    @Option(
        name: .customLong("group-by"),
        help: ArgumentHelp(
            "Group the matching objects by these keys: attributes, to-one relationships (their destination's id) or key paths through them (author.login); comma-separated or repeated.",
            valueName: "keys"))
    public var groupBy: [String] = []

    @Option(
        help: ArgumentHelp(
            "The sum of each group's values of these keys (int or double attributes, a to-many's @count).",
            valueName: "keys"))
    public var sum: [String] = []

    @Option(help: ArgumentHelp("The mean of each group's values of these keys, as a double.", valueName: "keys"))
    public var avg: [String] = []

    @Option(
        help: ArgumentHelp(
            "The smallest of each group's values of these keys, of the attribute's type.", valueName: "keys"))
    public var min: [String] = []

    @Option(
        help: ArgumentHelp(
            "The largest of each group's values of these keys, of the attribute's type.", valueName: "keys"))
    public var max: [String] = []

    @Option(
        help: ArgumentHelp(
            "Keep the groups this predicate holds for, over the row's names: 'count > 2 AND sum_additions >= 100' (it must name an aggregate).",
            valueName: "format"))
    public var having: String?

    public init() {}

    /// Whether any option was given, making the command's fetch an aggregate one.
    public var isGiven: Bool {
        !groupBy.isEmpty || !sum.isEmpty || !avg.isEmpty || !min.isEmpty || !max.isEmpty || having != nil
    }

    public func validate() throws {
        for (flag, lists) in [
            ("--group-by", groupBy), ("--sum", sum), ("--avg", avg), ("--min", min), ("--max", max),
        ] {
            _ = try Self.keys(lists, flag: flag)
        }
        _ = try havingPredicate()
    }

    /// The aggregate fetch of `entity`'s objects matching `predicate` these options ask for; nil when none was given.
    /// - Parameter counting: whether each row holds a count even when a function is named (`tributary count`).
    /// - Throws: `ValidationError` for an empty key or a `--having` that does not parse.
    public func request(
        entity: String, predicate: FetchPredicate?, counting: Bool, sortedBy sort: [FetchSort] = [], limit: Int = 0,
        offset: Int = 0
    ) throws -> AggregateRequest? {
        guard isGiven else { return nil }
        var aggregates: [AggregateExpression] = []
        for (function, flag, lists) in [
            (AggregateFunction.sum, "--sum", sum), (.avg, "--avg", avg), (.min, "--min", min), (.max, "--max", max),
        ] {
            aggregates += try Self.keys(lists, flag: flag).map { AggregateExpression(function, $0) }
        }
        if counting || aggregates.isEmpty { aggregates.insert(.count(), at: 0) }
        return AggregateRequest(
            entity: entity, predicate: predicate, groupBy: try Self.keys(groupBy, flag: "--group-by"),
            aggregates: aggregates, having: try havingPredicate(), sortedBy: sort, limit: limit, offset: offset)
    }

    /// `--having`'s predicate; nil without it.
    func havingPredicate() throws -> FetchPredicate? {
        guard let having else { return nil }
        do {
            return try FetchPredicate(format: having)
        } catch let error as FetchPredicateError {
            throw ValidationError(FetchSelectionOptions.message(for: error, in: having, flag: "--having"))
        }
    }

    /// The keys of a repeated option whose values are comma-separated.
    static func keys(_ values: [String], flag: String) throws -> [String] {
        try values.flatMap { value in
            try value.split(separator: ",", omittingEmptySubsequences: false).map { part in
                let key = part.trimmingCharacters(in: .whitespaces)
                guard !key.isEmpty, !key.contains(where: \.isWhitespace) else {
                    throw ValidationError(
                        "\(flag) takes comma-separated keys (e.g. author.login,state); '\(value)' has an empty or "
                            + "malformed key")
                }
                return key
            }
        }
    }
}
