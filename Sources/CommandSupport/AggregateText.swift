import Foundation
import TributaryCore

/// How `tributary fetch`, `count` and `watch` print the rows of an aggregate fetch: a table on a terminal, a line
/// per row into a pipe, or a JSON object per row (``JSONOutput/aggregateRow(_:)``). Values take the encodings of
/// the objects' output (``ObjectText``); a to-one relationship's group key is its destination's id.
public enum AggregateText {
    /// One line: `author.login="ada" count=3 sum_additions=420 max_score=nil`, the values in the row's order,
    /// strings quoted as in JSON.
    public static func line(_ row: AggregateRow) -> String {
        zip(row.names, row.values).map { name, value in "\(name)=\(value.map(ObjectText.text) ?? "nil")" }
            .joined(separator: " ")
    }

    /// A table of `result`'s rows under their names, cut to `width`: NULL as an empty cell, a column whose values
    /// are all numbers aligned right.
    public static func table(_ result: AggregateResult, width: Int?) -> [String] {
        let numeric = result.names.indices.map { index in
            result.rows.allSatisfy { row in
                switch row.values[index] {
                case nil, .int?, .double?: true
                default: false
                }
            }
        }
        let rows = result.rows.map { row in row.values.map { $0.map(ObjectTable.text) ?? "" } }
        return ObjectTable.lines(headers: result.names, numeric: numeric, rows: rows, width: width)
    }

    /// How a command prints `result`: `json`, else `format`, else a table on a terminal and lines into a pipe.
    public static func lines(_ result: AggregateResult, json: Bool, format: ObjectFormatOptions.Format?) throws
        -> [String]
    {
        if json { return try result.rows.map(JSONOutput.aggregateRow) }
        switch format ?? (isatty(1) != 0 ? .table : .lines) {
        case .table: return table(result, width: Terminal.width)
        case .lines: return result.rows.map(line)
        }
    }
}

extension JSONOutput {
    /// An aggregate row on one line, keyed by the row's names: `{"author.login": "ada", "count": 3,
    /// "max_score": null}`, values as ``object(_:prefetched:)`` encodes attributes.
    public static func aggregateRow(_ row: AggregateRow) throws -> String {
        try encode(aggregateObject(row))
    }

    /// A row as JSONSerialization takes it: its values keyed by its names, NULL as `NSNull`.
    static func aggregateObject(_ row: AggregateRow) -> [String: Any] {
        var object: [String: Any] = [:]
        for (name, value) in zip(row.names, row.values) { object[name] = value.map(jsonValue) ?? NSNull() }
        return object
    }
}
