/// Helpers for building SQL from model names. Names are validated identifiers (see `Model.checkIdentifier`),
/// and are quoted anyway; values are always bound, never spliced.
package enum SQLText {
    /// A quoted identifier: `"name"`.
    package static func quote(_ name: String) -> String {
        // Names rarely hold a quote: the common case skips Foundation's search-and-replace (a save builds its
        // statements' SQL with this, and the replace took ~4% of the router's thread in the save round trip).
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The join table of a to-many relationship.
    package static func joinTable(_ entity: String, _ relationship: String) -> String {
        "\(entity)_\(relationship)"
    }

    /// The table that holds relationship `relationship` of `entity` by destination: `(destination, source)` row
    /// keys, the store's inverse index of the relationship, folded in bulk from ``recentInverseTable(_:_:)``. The
    /// name cannot be any model's table (`:` and `.` are not in identifiers).
    package static func inverseTable(_ entity: String, _ relationship: String) -> String {
        "tributary_inverse:\(entity).\(relationship)"
    }

    /// The inverse entries written since the last fold: small, so new entries cost no write to the large index.
    package static func recentInverseTable(_ entity: String, _ relationship: String) -> String {
        "tributary_inverse_recent:\(entity).\(relationship)"
    }

    /// The row keys of the objects of `entity` whose relationship `relationship` holds the destination whose row
    /// key `destination` gives (SQL written into both halves: a numbered placeholder, say): a subquery over both
    /// halves of the inverse index, each read by its key.
    package static func inverseSources(_ entity: String, _ relationship: String, destination: String) -> String {
        [inverseTable(entity, relationship), recentInverseTable(entity, relationship)]
            .map { "SELECT source FROM \(quote($0)) WHERE destination = \(destination)" }
            .joined(separator: " UNION ALL ")
    }

    /// ``inverseSources(_:_:destination:)`` for the object of entity `destination` whose id `id` gives (a
    /// placeholder, bound once for each half, in the order written): each half joined to the destination's table,
    /// so the SQL nests no deeper than a comparison (predicates go to SQLite's parser depth limit).
    package static func inverseSources(
        _ entity: String, _ relationship: String, ofObjectIn destination: String, id: () -> String
    ) -> String {
        var halves: [String] = []
        for table in [inverseTable(entity, relationship), recentInverseTable(entity, relationship)] {
            halves.append(
                "SELECT \"tributary_i\".source FROM \(quote(destination)) AS \"tributary_o\" JOIN \(quote(table)) AS "
                    + "\"tributary_i\" ON \"tributary_i\".destination = \"tributary_o\".\(rowKey) "
                    + "WHERE \"tributary_o\".\"id\" = \(id())")
        }
        return halves.joined(separator: " UNION ALL ")
    }

    /// The integer key column of every entity table (`INTEGER PRIMARY KEY`): to-one columns and join tables hold
    /// it, so relationship indexes are small. It never leaves the store: objects are known by their 16-byte id.
    package static let rowKey = "\"_rowid\""

    /// The 16-byte id of the destination of to-one column `relationship` of `table`'s current row: a correlated
    /// subquery (NULL when the column is), for reads and predicates. `table` must be named so, unaliased, in the
    /// enclosing query.
    package static func toOneID(table: String, relationship: String, destination: String) -> String {
        toOneID(owner: quote(table), relationship: relationship, destination: destination)
    }

    /// ``toOneID(table:relationship:destination:)`` for a row named by `owner`: a quoted table name or alias.
    package static func toOneID(owner: String, relationship: String, destination: String) -> String {
        "(SELECT \"tributary_d\".\"id\" FROM \(quote(destination)) AS \"tributary_d\" "
            + "WHERE \"tributary_d\".\(rowKey) = \(owner).\(quote(relationship)))"
    }

    /// `column + amount`, stopping at the largest 64-bit integer (SQLite would turn an overflow into a REAL).
    package static func clampedAdd(_ column: String, _ amount: String) -> String {
        "CASE WHEN \(amount) > 0 AND \(column) > 9223372036854775807 - \(amount) THEN 9223372036854775807 "
            + "ELSE \(column) + \(amount) END"
    }

    /// `?, ?, ?` with `count` placeholders.
    package static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    /// `?N, ?N+1, …`: numbered placeholders from `first`, for statements that also number their others.
    package static func placeholders(_ count: Int, from first: Int) -> String {
        (first..<first + count).map { "?\($0)" }.joined(separator: ", ")
    }
}
